//! Wire types of the A2E protocol.
//!
//! Every message of the core, tools, skills, chains and proc specifications is
//! a typed struct here, with the specification's field names and defaults, and
//! so are this implementation's wire extensions ([`extensions`]: `chain/attach`,
//! `dag/req`). [`Message`] holds any of them, dispatched on `type`; a message of
//! a type this crate does not know is kept whole as [`Message::Unknown`]. Codes,
//! capabilities, event kinds, statuses and phases are open enums: unknown
//! values survive a round trip.
//!
//! [`decode()`] turns bytes into a [`Message`] with errors that map to wire
//! codes (`parse_error`, `invalid_message`, `schema_violation` naming the JSON
//! path, `version_mismatch`), under a size and a nesting limit.
//!
//! Features: `schema` (JSON Schema of every type, via schemars), `codec`
//! (NDJSON framing for tokio streams), `arbitrary` (proptest strategies).
//!
//! ```
//! use a2e_proto::{decode, Message, Response, ToolCallRequest, ToolCallResponse, ToolResult};
//! use serde_json::json;
//!
//! // An agent builds a request and sends it as one NDJSON line.
//! let req = ToolCallRequest::new("read_file", json!({"path": "notes.txt"}));
//! let line = Message::from(req.clone()).to_line();
//!
//! // The host decodes it…
//! let Message::ToolCallRequest(got) = decode(line.trim_ascii_end()).unwrap() else { panic!() };
//! assert_eq!(got.tool_name, "read_file");
//! assert_eq!(got.timeout, 30); // the spec's default
//!
//! // …and answers it; `for_request` fills `req_id`.
//! let mut resp = ToolCallResponse::for_request(&got);
//! resp.data = ToolResult::ok("read_file", json!({"content": "hello"}));
//! assert_eq!(resp.req_id, req.id);
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

#[macro_use]
mod macros;

#[cfg(feature = "arbitrary")]
pub mod arb;
pub mod capability;
pub mod chains;
pub mod codes;
pub mod core;
pub mod decode;
pub mod envelope;
pub mod event;
pub mod extensions;
pub mod input_map;
pub mod message;
#[cfg(feature = "codec")]
pub mod ndjson;
mod num;
pub mod outputs;
pub mod params;
pub mod proc;
#[cfg(feature = "schema")]
pub mod schema;
pub mod skills;
pub mod tools;

pub use capability::{A2ECapability, Capability};
pub use chains::{
    ChainEvent, ChainEventRef, ChainNode, ChainPhase, ChainRequest, ChainResponse, NodeKind,
    OnError,
};
pub use codes::ErrorCode;
pub use core::{
    ErrorMessage, HandshakeRequest, HandshakeResponse, InvokeEvent, Ping, Pong, Shutdown,
};
pub use decode::{DecodeError, DecodeErrorKind, DecodeOptions, decode, decode_with, json_kind};
pub use envelope::{
    PROTOCOL_VERSION, Request, Response, TypeTag, WireType, new_chain_id, new_id, new_id_in, now,
};
pub use event::{EventData, EventKind};
pub use extensions::{ChainAttach, ChainFork, DagRequest};
pub use input_map::InputMap;
pub use message::Message;
pub use outputs::Outputs;
pub use params::params_from_schema;
pub use proc::{
    ProcKillRequest, ProcKillResponse, ProcReadEvent, ProcSpawnRequest, ProcSpawnResponse,
    ProcState, ProcStatusRequest, ProcStatusResponse, ProcWriteRequest, ProcWriteResponse,
    StreamType,
};
pub use skills::{
    LLMConfig, SkillCallRequest, SkillCallResponse, SkillDefinition, SkillDiscoverRequest,
    SkillDiscoverResponse, SkillEvent, SkillResult, SkillStatus,
};
pub use tools::{
    ToolCallRequest, ToolCallResponse, ToolDefinition, ToolEvent, ToolListRequest,
    ToolListResponse, ToolParameter, ToolResult,
};
