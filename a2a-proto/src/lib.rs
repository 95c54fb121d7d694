//! Wire types of the A2A (Agent2Agent) protocol, version 1.0.
//!
//! In v1.0 the normative definition is the proto file of the specification
//! (`specification/a2a.proto`, package `lf.a2a.v1`); every JSON binding
//! writes its messages with the ProtoJSON mapping: camelCase field names,
//! enums by name (`TASK_STATE_COMPLETED`, `ROLE_USER`), `oneof`s as one of
//! several keys (a [`Part`] is `{"text": …}`, `{"raw": …}`, `{"url": …}` or
//! `{"data": …}`; a [`StreamResponse`] is `{"statusUpdate": …}`…), no `kind`
//! discriminators. The types here are those messages, one Rust type each,
//! with the proto's field names in camelCase on the wire.
//!
//! - Data model: [`Task`], [`TaskStatus`], [`TaskState`], [`Message`],
//!   [`Role`], [`Part`], [`Artifact`], the streaming events and
//!   [`StreamResponse`] ([`task`], [`message`]).
//! - Discovery: [`AgentCard`] and its parts ([`card`]), security schemes and
//!   requirements ([`security`]).
//! - Push notifications: [`TaskPushNotificationConfig`] ([`push`]).
//! - Operations: the request and response messages ([`requests`]), the
//!   eleven operations and a typed request of any of them ([`operations`]).
//! - Bindings: JSON-RPC envelopes ([`jsonrpc`]), HTTP+JSON routes
//!   ([`http`]), headers and media types ([`headers`]), the error catalogue
//!   with codes and statuses ([`errors`]).
//! - Checking: decoding with the bad field's path ([`decode()`]) and the
//!   proto's REQUIRED fields ([`validate`]).
//!
//! Decoding is as lenient as ProtoJSON: unknown fields are ignored, an absent
//! or `null` field is its default, snake_case field names and enum numbers
//! are accepted. Encoding leaves out fields at their default except those the
//! proto marks REQUIRED. Timestamps are RFC 3339 strings.
//!
//! ```
//! use a2a_proto::{
//!     AgentCapabilities, AgentCard, AgentInterface, AgentSkill, JsonRpcRequest, A2aRequest,
//!     Message, SecurityRequirement, SecurityScheme, SendMessageRequest, binding,
//! };
//! use serde_json::json;
//!
//! // An agent describes itself…
//! let card = AgentCard {
//!     name: "Echo".into(),
//!     description: "Says back what it is told.".into(),
//!     supported_interfaces: vec![AgentInterface::new("https://agent.example/a2a", binding::JSONRPC)],
//!     version: "0.1.0".into(),
//!     capabilities: AgentCapabilities { streaming: Some(true), ..Default::default() },
//!     security_schemes: [("bearer".to_owned(), SecurityScheme::bearer(Some("JWT")))].into(),
//!     security_requirements: vec![SecurityRequirement::scheme("bearer", vec![])],
//!     default_input_modes: vec!["text/plain".into()],
//!     default_output_modes: vec!["text/plain".into()],
//!     skills: vec![AgentSkill {
//!         id: "echo".into(),
//!         name: "Echo".into(),
//!         description: "Echoes the input.".into(),
//!         tags: vec!["echo".into()],
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let json = serde_json::to_value(&card).unwrap();
//! assert_eq!(json["supportedInterfaces"][0]["protocolVersion"], "1.0");
//! assert_eq!(json["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer");
//!
//! // …and a client sends it a message over JSON-RPC.
//! let send = A2aRequest::SendMessage(SendMessageRequest::new(Message::user_text("m-1", "hello")));
//! let request = JsonRpcRequest::new(1, &send);
//! assert_eq!(
//!     serde_json::to_value(&request).unwrap(),
//!     json!({
//!         "jsonrpc": "2.0",
//!         "id": 1,
//!         "method": "SendMessage",
//!         "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}
//!     })
//! );
//!
//! // The server reads it back into the typed request.
//! let body = serde_json::to_vec(&request).unwrap();
//! let got = JsonRpcRequest::decode(&body).unwrap().to_a2a().unwrap();
//! assert_eq!(got, send);
//! ```
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod wire;

pub mod card;
pub mod decode;
pub mod errors;
pub mod headers;
pub mod http;
pub mod jsonrpc;
pub mod message;
pub mod operations;
pub mod push;
pub mod requests;
pub mod schema;
pub mod security;
pub mod task;
pub mod validate;

pub use card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface,
    AgentProvider, AgentSkill, binding,
};
pub use decode::{DecodeError, decode, decode_value};
pub use errors::{A2aError, ErrorInfo, ErrorKind, FieldViolation, HttpError, HttpErrorBody};
pub use headers::{EXTENSIONS_HEADER, PROTOCOL_VERSION, VERSION_HEADER};
pub use http::{HttpMethod, HttpRoute, ROUTES, RouteError, RouteMatch, route_request};
pub use jsonrpc::{JsonRpcError, JsonRpcId, JsonRpcOutcome, JsonRpcRequest, JsonRpcResponse};
pub use message::{Artifact, Message, Part, PartContent, Role};
pub use operations::{A2aRequest, Operation};
pub use push::{AuthenticationInfo, TaskPushNotificationConfig};
pub use requests::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse,
    SendMessageConfiguration, SendMessageRequest, SubscribeToTaskRequest,
};
pub use security::{
    ApiKeySecurityScheme, AuthorizationCodeOAuthFlow, ClientCredentialsOAuthFlow,
    DeviceCodeOAuthFlow, HttpAuthSecurityScheme, ImplicitOAuthFlow, MutualTlsSecurityScheme,
    OAuth2SecurityScheme, OAuthFlows, OpenIdConnectSecurityScheme, PasswordOAuthFlow,
    SecurityRequirement, SecurityScheme, StringList,
};
pub use task::{
    SendMessageResponse, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
pub use validate::Validate;
pub use wire::{Metadata, OneofError, UnknownEnumValue};
