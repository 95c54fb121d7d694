//! The context a plugin call runs in: session, cancellation, deadline, events.

use std::sync::Arc;
use std::time::Duration;

use a2e_proto::EventKind;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

type EmitFn = dyn Fn(EventKind, Map<String, Value>) -> BoxFuture<'static, ()> + Send + Sync;

/// Where a call's events go. The host numbers them (`seq` 0, 1, 2, …), collects
/// them into the result and, when the request asked for streaming, sends them on.
#[derive(Clone, Default)]
pub struct EventSink(Option<Arc<EmitFn>>);

impl EventSink {
    /// A sink that drops every event.
    pub fn discard() -> Self {
        Self(None)
    }

    /// A sink calling `f` for each event.
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(EventKind, Map<String, Value>) -> BoxFuture<'static, ()> + Send + Sync + 'static,
    {
        Self(Some(Arc::new(f)))
    }

    /// Emits one event; waits while the receiver is slow (back-pressure).
    pub async fn emit(&self, kind: EventKind, data: Map<String, Value>) {
        if let Some(f) = &self.0 {
            f(kind, data).await;
        }
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "EventSink(..)"
        } else {
            "EventSink(discard)"
        })
    }
}

/// Who a session acts for: the agent of its handshake and the user it serves.
/// A session's `user_id` is its `agent_id` (the protocol's handshake names no
/// user); calls made by the host itself have neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The session id.
    pub session_id: Arc<str>,
    /// The handshake's `agent_id`.
    pub agent_id: Arc<str>,
    /// The user the agent serves.
    pub user_id: Arc<str>,
}

impl Default for Identity {
    fn default() -> Self {
        Self {
            session_id: shared_str(""),
            agent_id: shared_str(""),
            user_id: shared_str(""),
        }
    }
}

/// What a plugin knows about the call it serves.
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The session the call belongs to (empty for calls made by the host itself).
    pub session_id: Arc<str>,
    /// The request id.
    pub req_id: Arc<str>,
    /// Fires when the call must stop: timeout, cancellation, session end.
    pub cancel: CancellationToken,
    /// When the call's time runs out, if it has a limit.
    pub deadline: Option<Instant>,
    /// The agent's correlation id of the request (empty when none), to follow one
    /// agent turn through calls and the audit log.
    pub correlation_id: Arc<str>,
    /// The agent the call's session acts for (empty for the host's own calls).
    pub agent_id: Arc<str>,
    /// The user the call's session serves (empty for the host's own calls).
    pub user_id: Arc<str>,
    /// The idempotency key of a call made for a node of a durable run,
    /// `run_id/node_id/attempt` (empty otherwise). A node that was running
    /// when its host died runs again with the same key: a plugin that
    /// remembers the keys it has seen can leave out a side effect it
    /// already made.
    pub idempotency_key: Arc<str>,
    /// What the call needs beyond its arguments, by type: the link to the
    /// MCP client it came from, the host for the skills that are part of
    /// it, a resumed run. Empty (and free) for most calls; a nested call
    /// made through a [`HostHandle`](crate::HostHandle) carries its
    /// caller's.
    pub extensions: Extensions,
    events: EventSink,
}

/// Values of any type a call carries, at most one per type (`http`'s
/// extension map: clonable values, no allocation while empty).
pub type Extensions = http::Extensions;

/// `s` as a shared string; the empty one is allocated once for all.
#[doc(hidden)]
pub fn shared_str(s: &str) -> Arc<str> {
    static EMPTY: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| Arc::from(""));
    if s.is_empty() {
        EMPTY.clone()
    } else {
        Arc::from(s)
    }
}

impl CallContext {
    /// A context for a call of session `session_id` acting for nobody in
    /// particular, with the given token, deadline and event sink.
    pub fn new(
        session_id: &str,
        req_id: &str,
        cancel: CancellationToken,
        deadline: Option<Instant>,
        events: EventSink,
    ) -> Self {
        let session = Identity {
            session_id: shared_str(session_id),
            ..Identity::default()
        };
        Self::for_identity(&session, req_id, cancel, deadline, events)
    }

    /// A context for a call of the session `identity` names, acting for it.
    pub fn for_identity(
        identity: &Identity,
        req_id: &str,
        cancel: CancellationToken,
        deadline: Option<Instant>,
        events: EventSink,
    ) -> Self {
        Self {
            session_id: identity.session_id.clone(),
            req_id: shared_str(req_id),
            cancel,
            deadline,
            correlation_id: shared_str(""),
            agent_id: identity.agent_id.clone(),
            user_id: identity.user_id.clone(),
            idempotency_key: shared_str(""),
            extensions: Extensions::new(),
            events,
        }
    }

    /// The same context carrying a durable run's idempotency key (see
    /// [`CallContext::idempotency_key`]).
    pub fn with_idempotency_key(mut self, key: &str) -> Self {
        self.idempotency_key = shared_str(key);
        self
    }

    /// The same context, carrying `extensions`.
    pub fn with_extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// The same context carrying the request's correlation id.
    pub fn with_correlation_id(mut self, correlation_id: &str) -> Self {
        self.correlation_id = shared_str(correlation_id);
        self
    }

    /// A context for tests and host-internal calls: no session, no limit, events dropped.
    pub fn detached() -> Self {
        Self::new("", "", CancellationToken::new(), None, EventSink::discard())
    }

    /// Emits an event of `kind` with `data` (see [`a2e_proto::EventData`] for payloads).
    pub async fn emit(&self, kind: EventKind, data: Map<String, Value>) {
        self.events.emit(kind, data).await;
    }

    /// Emits a `log` event.
    pub async fn log(&self, level: &str, message: impl Into<String>) {
        self.emit(EventKind::LOG, a2e_proto::EventData::log(level, message))
            .await;
    }

    /// Emits a `progress` event.
    pub async fn progress(&self, pct: i64, message: impl Into<String>) {
        self.emit(
            EventKind::PROGRESS,
            a2e_proto::EventData::progress(pct, message),
        )
        .await;
    }

    /// Time left before the deadline (`None`: no limit).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The event sink (to hand to nested work).
    pub fn events(&self) -> &EventSink {
        &self.events
    }

    /// The same call with another event sink.
    pub fn with_events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }
}
