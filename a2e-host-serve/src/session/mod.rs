//! One agent's session: handshake, authorisation, concurrent dispatch, answers.
//!
//! A transport feeds [`Session::handle_line`] the lines (or frames) it reads and
//! drains the session's outbound channel to the wire. Requests run on their own
//! tasks, at most `max_parallel` at once; responses carry `req_id`, events
//! carry `seq` 0, 1, 2, … per request. When the session ends, its token fires:
//! every call in flight is cancelled and every process it started is killed.

mod auth;
mod dispatch;

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_proto::{A2ECapability, DecodeOptions, ErrorCode, ErrorMessage, Message};
use futures::FutureExt;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use a2e_host_core::host::Host;
use a2e_host_core::outbound::EventStream;

use a2e_host_core::outbound::{Mark, Outbound};
pub use auth::{loaded_capabilities, token_matches};

/// How many requests may wait for a slot, per allowed concurrent request,
/// before the session stops reading (back-pressure).
const QUEUE_FACTOR: usize = 64;

/// Capacity of a session's outbound channel.
pub const OUTBOUND_CAPACITY: usize = 256;

#[derive(Debug, Default)]
struct State {
    handshaken: bool,
    agent_id: String,
    accepted: HashSet<A2ECapability>,
    shutting_down: bool,
}

/// One agent's session on a host.
pub struct Session {
    host: Arc<Host>,
    id: String,
    state: Mutex<State>,
    out: EventStream,
    cancel: CancellationToken,
    slots: Arc<Semaphore>,
    queue: Arc<Semaphore>,
    tasks: TaskTracker,
    decode: DecodeOptions,
    /// Counts the session in `a2e.sessions.open` while it lives.
    _open: a2e_telemetry::Gauged,
}

impl Session {
    /// A session on `host` whose outbound messages go to `out`.
    pub fn new(host: Arc<Host>, out: EventStream) -> Arc<Self> {
        Self::on_transport(host, out, "embedded")
    }

    /// A session of a transport (`stdio`, `ws`, `http`): counted under that
    /// name in the `a2e.sessions.open` metric while it lives.
    pub fn on_transport(host: Arc<Host>, out: EventStream, transport: &'static str) -> Arc<Self> {
        let parallel = host.config().max_parallel.max(1) as usize;
        let decode = DecodeOptions {
            max_bytes: host.config().max_message_bytes,
            ..DecodeOptions::default()
        };
        let open = host.telemetry().metrics().session_opened(transport);
        Arc::new(Self {
            _open: open,
            id: a2e_proto::new_id(),
            host,
            state: Mutex::new(State::default()),
            out,
            cancel: CancellationToken::new(),
            slots: Arc::new(Semaphore::new(parallel)),
            queue: Arc::new(Semaphore::new(parallel * QUEUE_FACTOR)),
            tasks: TaskTracker::new(),
            decode,
        })
    }

    /// The session id (sent in `handshake/resp`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The host.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Fires when the session ends.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the session has ended or is draining after `shutdown`.
    pub fn is_closing(&self) -> bool {
        self.cancel.is_cancelled() || self.state.lock().map(|s| s.shutting_down).unwrap_or(true)
    }

    /// Sends a message to the agent; false when the transport is gone.
    pub(crate) async fn send(&self, msg: impl Into<Message>) -> bool {
        self.out.send(Outbound::Message(msg.into())).await
    }

    /// Resolves once the transport has written everything this session sent
    /// before the call (or is gone). See [`Mark`].
    pub(crate) async fn written(&self) {
        let (mark, done) = Mark::new();
        if self.out.send(Outbound::Mark(mark)).await {
            let _ = done.await;
        }
    }

    /// Handles one received line: decodes it and dispatches it. Bad input is
    /// answered with an `error` message; the session goes on.
    pub async fn handle_line(self: &Arc<Self>, line: &[u8]) {
        match a2e_proto::decode_with(line, &self.decode) {
            Ok(msg) => self.handle(msg).await,
            Err(e) => {
                tracing::debug!(session = %self.id, code = %e.code(), "refused line: {e}");
                self.send(e.to_error_message()).await;
            }
        }
    }

    /// As [`Session::handle_line`], for a line that came with a W3C trace
    /// context of its transport (an HTTP request's `traceparent` and
    /// `tracestate` headers): a request that carries no `traceparent` of its
    /// own takes this one.
    pub async fn handle_line_traced(
        self: &Arc<Self>,
        line: &[u8],
        traceparent: &str,
        tracestate: &str,
    ) {
        match a2e_proto::decode_with(line, &self.decode) {
            Ok(mut msg) => {
                let fields = match &mut msg {
                    Message::ToolCallRequest(r) => Some((&mut r.traceparent, &mut r.tracestate)),
                    Message::SkillCallRequest(r) => Some((&mut r.traceparent, &mut r.tracestate)),
                    Message::ChainRequest(r) => Some((&mut r.traceparent, &mut r.tracestate)),
                    _ => None,
                };
                if let Some((parent, state)) = fields
                    && parent.is_empty()
                {
                    traceparent.clone_into(parent);
                    tracestate.clone_into(state);
                }
                self.handle(msg).await;
            }
            Err(e) => {
                tracing::debug!(session = %self.id, code = %e.code(), "refused line: {e}");
                self.send(e.to_error_message()).await;
            }
        }
    }

    /// Handles a frame the codec reported as over-long.
    pub async fn handle_too_long(&self, limit: usize) {
        self.send(ErrorMessage::new(
            "",
            ErrorCode::INVALID_MESSAGE,
            format!("message exceeds the limit of {limit} bytes; it was discarded"),
        ))
        .await;
    }

    /// Handles one decoded message.
    pub async fn handle(self: &Arc<Self>, msg: Message) {
        // What is answered inline (handshake, ping, refusals) is inside a
        // panic net too: the message is answered and the session goes on.
        // (Requests run on tasks with a net of their own.)
        let (id, kind) = (msg.id().to_owned(), msg.type_str().to_owned());
        let handled = AssertUnwindSafe(dispatch::handle(self, msg))
            .catch_unwind()
            .await;
        if handled.is_err() {
            tracing::error!(session = %self.id, req_id = %id, r#type = %kind, "handling a message panicked");
            self.send(ErrorMessage::new(
                id,
                ErrorCode::RUNTIME_ERROR,
                format!("internal error while handling `{kind}`"),
            ))
            .await;
        }
    }

    /// Ends the session: waits up to `drain` for calls in flight, then cancels
    /// what is left and kills every process the session started.
    pub async fn close(&self, drain: Duration) {
        if let Ok(mut s) = self.state.lock() {
            s.shutting_down = true;
        }
        self.tasks.close();
        if !drain.is_zero() {
            tokio::select! {
                _ = self.tasks.wait() => {}
                _ = tokio::time::sleep(drain) => {}
                _ = self.cancel.cancelled() => {}
            }
        }
        self.cancel.cancel();
        self.host.end_session(&self.id);
        // Aborted calls unwind quickly once cancelled.
        let _ = tokio::time::timeout(Duration::from_secs(2), self.tasks.wait()).await;
        self.host.end_session(&self.id);
    }

    /// Waits until every request task has finished.
    pub async fn idle(&self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.tasks.reopen();
    }

    /// Number of requests in flight.
    pub fn in_flight(&self) -> usize {
        self.tasks.len()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.host.end_session(&self.id);
    }
}
