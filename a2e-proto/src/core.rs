//! Core messages: handshake, ping/pong, shutdown, error, generic events (a2e-core.md §2).

use serde_json::{Map, Value};

use crate::capability::{A2ECapability, Capability};
use crate::codes::ErrorCode;
use crate::event::EventKind;

wire_message! {
    /// `handshake/req` — agent → host: opens a session.
    pub struct HandshakeRequest = "handshake/req" {
        /// Who the agent is.
        #[serde(default)]
        pub agent_id: String = String::new(),
        /// Capabilities the agent wants.
        #[serde(default)]
        pub agent_caps: Vec<A2ECapability> = Vec::new(),
        /// Secret the host may require.
        #[serde(default)]
        pub auth_token: String = String::new(),
    }
}

wire_message! {
    /// `handshake/resp` — host → agent: the session and what it may use.
    pub struct HandshakeResponse = "handshake/resp" {
        /// The handshake request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// The new session.
        #[serde(default = "crate::envelope::new_id")]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::id()"))]
        pub session_id: String = crate::envelope::new_id(),
        /// Requested ∩ loaded capabilities (missing ones with `enabled: false`).
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "proptest::collection::vec(proptest::arbitrary::any::<Capability>(), 0..3)"))]
        pub accepted_caps: Vec<Capability> = Vec::new(),
        /// Most concurrent requests this session may have in flight.
        #[serde(default = "default_max_parallel")]
        #[serde(deserialize_with = "crate::num::int")]
        pub max_parallel: u32 = default_max_parallel(),
        /// Whether the session was opened.
        #[serde(default = "crate::envelope::yes")]
        pub ok: bool = true,
        /// Why not, when `ok` is false: `auth_failed`, `version_mismatch`, `no_caps`, `server_error`.
        #[serde(default)]
        pub reason: String = String::new(),
    }
}

fn default_max_parallel() -> u32 {
    4
}

wire_message! {
    /// `ping` — either direction: liveness probe.
    pub struct Ping = "ping" {}
}

wire_message! {
    /// `pong` — answer to `ping`.
    pub struct Pong = "pong" {
        /// The ping's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// How long the answering side has run.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::finite()"))]
        pub uptime_seconds: f64 = 0.0,
    }
}

wire_message! {
    /// `shutdown` — agent → host: drain in-flight work, then end the session.
    pub struct Shutdown = "shutdown" {
        /// Seconds to drain in-flight work.
        #[serde(default = "default_shutdown_timeout")]
        #[serde(deserialize_with = "crate::num::int")]
        pub timeout: u64 = default_shutdown_timeout(),
    }
}

fn default_shutdown_timeout() -> u64 {
    10
}

wire_message! {
    /// `error` — either direction: a request refused before anything ran.
    pub struct ErrorMessage = "error" {
        /// The refused request's id (empty when it could not be read).
        #[serde(default)]
        pub req_id: String = String::new(),
        /// The error code.
        pub code: ErrorCode = ErrorCode::RUNTIME_ERROR,
        /// What went wrong, for a person.
        #[serde(default)]
        pub message: String = String::new(),
        /// Structured detail (e.g. every schema violation).
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub detail: Map<String, Value> = Map::new(),
        /// Whether retrying may succeed.
        #[serde(default)]
        pub retryable: bool = false,
        /// The capability concerned, if any.
        #[serde(default)]
        pub capability_name: String = String::new(),
    }
}

impl ErrorMessage {
    /// An error answering the request with id `req_id`; `retryable` follows the code.
    pub fn new(req_id: impl Into<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            req_id: req_id.into(),
            retryable: code.retryable(),
            code,
            message: message.into(),
            ..Self::default()
        }
    }
}

wire_message! {
    /// `invoke/event` — host → agent: a generic event.
    pub struct InvokeEvent = "invoke/event" {
        /// Event kind.
        #[serde(default)]
        pub kind: EventKind = EventKind::STATUS,
        /// The request this event belongs to.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// Payload.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub data: Map<String, Value> = Map::new(),
        /// 0, 1, 2, … per `req_id`.
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub seq: u64 = 0,
    }
}

impl_request!(HandshakeRequest, Ping);
impl_response!(HandshakeResponse, Pong, ErrorMessage, InvokeEvent);
