//! What tool and skill calls share: their common options and the one path that
//! turns a call into a request, sends it and maps its answer.

use std::time::Duration;

use a2e_proto::Message;

use crate::call::{Call, FromMessage};
use crate::client::Client;
use crate::error::ClientResult;

/// Options every call has.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InvokeOptions {
    /// Ask for events.
    pub streaming: bool,
    /// Wall-clock limit the host enforces, in seconds (0: the host's or skill's default).
    pub timeout_secs: u64,
    /// Ties the call to an agent turn.
    pub correlation_id: String,
    /// How long the client waits for the answer (default: `timeout_secs` plus the slack).
    pub client_timeout: Option<Duration>,
}

/// A call of one capability (tools or skills).
pub(crate) trait Invocation {
    /// Its events.
    type Event: FromMessage;
    /// Its result.
    type Output;
    /// The limit assumed when `timeout_secs` is 0.
    const DEFAULT_TIMEOUT_SECS: u64;
    /// The answer's wire type, for messages.
    const ANSWER: &'static str;

    /// The shared options.
    fn options(&self) -> &InvokeOptions;
    /// The request message.
    fn into_request(self, client: &Client, streaming: bool) -> Message;
    /// The result in an answer.
    fn answer(msg: Message) -> ClientResult<Self::Output>;
}

/// Sends `call` and returns the pending [`Call`].
pub(crate) async fn begin<I: Invocation>(
    client: &Client,
    call: I,
    streaming: bool,
) -> ClientResult<Call<I::Event, I::Output>> {
    let options = call.options();
    let secs = if options.timeout_secs == 0 {
        I::DEFAULT_TIMEOUT_SECS
    } else {
        options.timeout_secs
    };
    let limit = client.limit_for(secs, options.client_timeout);
    let req = call.into_request(client, streaming);
    client.start(req, streaming, limit, I::answer).await
}

/// Makes a call as its options say and waits for its result.
pub(crate) async fn call_with<I: Invocation>(client: &Client, call: I) -> ClientResult<I::Output> {
    let streaming = call.options().streaming;
    begin(client, call, streaming).await?.finish().await
}

/// Makes a streaming call, handing each event to `on_event` as it arrives.
pub(crate) async fn call_with_events<I: Invocation>(
    client: &Client,
    call: I,
    on_event: impl FnMut(I::Event),
) -> ClientResult<I::Output> {
    begin(client, call, true).await?.finish_with(on_event).await
}

/// The builder methods of the shared options, on a call type with an `options` field.
macro_rules! call_options {
    ($t:ty) => {
        impl $t {
            /// Ask for events or not.
            pub fn streaming(mut self, yes: bool) -> Self {
                self.options.streaming = yes;
                self
            }

            /// The host-side limit in seconds.
            pub fn timeout_secs(mut self, secs: u64) -> Self {
                self.options.timeout_secs = secs;
                self
            }

            /// The client-side limit.
            pub fn client_timeout(mut self, limit: std::time::Duration) -> Self {
                self.options.client_timeout = Some(limit);
                self
            }

            /// The correlation id.
            pub fn correlation_id(mut self, id: impl Into<String>) -> Self {
                self.options.correlation_id = id.into();
                self
            }
        }
    };
}
pub(crate) use call_options;
