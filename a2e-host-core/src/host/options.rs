//! How an embedder (or an adapter) makes a call: one options value instead of
//! positional session, event and cancellation arguments.

use tokio_util::sync::CancellationToken;

use crate::outbound::EventStream;
use crate::plugin::Extensions;

/// The options of a [`Host::call_tool`](crate::Host::call_tool) or
/// [`Host::call_skill`](crate::Host::call_skill): the session the call belongs
/// to, where its events go (when the request streams), and what cancels it.
///
/// ```
/// # use a2e_host_core::{CallOptions, EventStream};
/// # use tokio_util::sync::CancellationToken;
/// let cancel = CancellationToken::new();
/// let (events, _received) = EventStream::channel(64);
/// let options = CallOptions::new()
///     .session("agent-session")
///     .events(events)
///     .cancel(&cancel);
/// assert_eq!(options.session_id(), "agent-session");
/// ```
#[derive(Debug, Clone, Default)]
pub struct CallOptions<'a> {
    session: &'a str,
    events: Option<EventStream>,
    cancel: Option<&'a CancellationToken>,
    idempotency_key: Option<&'a str>,
    extensions: Extensions,
}

impl<'a> CallOptions<'a> {
    /// No session (the host's own calls), no events, cancelled by nothing but
    /// the call's timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// The call belongs to session `id` (its identity, its processes).
    pub fn session(mut self, id: &'a str) -> Self {
        self.session = id;
        self
    }

    /// Streams the call's events (`tool/event`, `skill/event`) into `events`
    /// when the request asks for streaming.
    pub fn events(mut self, events: EventStream) -> Self {
        self.events = Some(events);
        self
    }

    /// Ends the call when `token` fires (as when its session ends).
    pub fn cancel(mut self, token: &'a CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// The call runs for a node of a durable run: its idempotency key
    /// (`run_id/node_id/attempt`) goes to the plugin in its
    /// [`CallContext`](crate::plugin::CallContext), the same when the node
    /// runs again after its host restarted.
    pub fn idempotency_key(mut self, key: &'a str) -> Self {
        self.idempotency_key = Some(key);
        self
    }

    /// The call carries `value` in its context's
    /// [`extensions`](crate::plugin::CallContext::extensions) (one value per
    /// type: the link to the MCP client a call came from, say).
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// The call carries `extensions` (those of the call it is part of).
    pub fn extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// Takes the extensions the call carries out of the options.
    pub fn take_extensions(&mut self) -> Extensions {
        std::mem::take(&mut self.extensions)
    }

    /// The idempotency key the call carries, if any.
    pub fn key(&self) -> Option<&'a str> {
        self.idempotency_key
    }

    /// The session the call belongs to (`""`: none).
    pub fn session_id(&self) -> &'a str {
        self.session
    }

    /// Its parts: the session, where events go, and the cancellation token.
    pub fn into_parts(self) -> (&'a str, Option<EventStream>, Option<&'a CancellationToken>) {
        (self.session, self.events, self.cancel)
    }
}
