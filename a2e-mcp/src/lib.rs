//! MCP both ways for A2E hosts, on `rmcp`.
//!
//! **Client side** — mount MCP servers as toolkits: [`McpServerConfig`]
//! (stdio command or Streamable HTTP URL), [`McpToolkit`] (lazy or eager
//! start, tool listing with JSON Schema → [`a2e_proto::ToolParameter`]s,
//! calls with progress, cancellation and timeouts, restart with backoff,
//! process-group shutdown), [`NameTable`] (the collision rule for tools
//! of several servers) and [`McpMounts`] (all of a host's servers under one
//! name table).
//!
//! **Server side** — serve a host's tools to MCP clients: implement
//! [`ToolBackend`] and hand it to [`serve_stdio`], [`serve_io`] or
//! [`serve_http`] / [`http_router`].
//!
//! ```
//! use a2e_mcp::{McpServerConfig, McpToolkit, NameTable, schema::params_from_schema};
//! use serde_json::json;
//!
//! // A server to mount (nothing starts until first use).
//! let kit = McpToolkit::new(McpServerConfig::stdio("time", "mcp-server-time", &[])).unwrap();
//! assert_eq!(kit.name(), "time");
//!
//! // How an MCP input schema becomes A2E parameters.
//! let schema = json!({"type": "object", "properties": {
//!     "timezone": {"type": "string", "description": "IANA zone"}}, "required": ["timezone"]});
//! let params = params_from_schema(schema.as_object().unwrap());
//! assert!(params[0].required && params[0].param_type == "string");
//!
//! // Two servers offering `now`: both become `server.now`.
//! let a = vec!["now".to_owned()];
//! let table = NameTable::build([("time", &a[..]), ("clock", &a[..])], &Default::default()).unwrap();
//! assert_eq!(table.exposed_name("clock", "now"), Some("clock.now"));
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod call;
mod challenge;
pub mod config;
pub mod error;
pub mod mounts;
pub mod names;
pub mod oauth;
pub mod output;
mod process;
mod protocol;
pub mod schema;
pub mod server;
pub mod tool;
pub mod toolkit;

pub use call::{McpCallOptions, McpProgress, ProgressFn};
pub use config::{
    CommandLine, ElicitationPolicy, McpServerConfig, McpTransport, Revision, SamplingConfig,
};
pub use error::{McpError, ServeError};
pub use mounts::McpMounts;
pub use names::NameTable;
pub use output::{McpOutput, to_mcp_result};
pub use server::{
    BackendTool, ClientLink, ClientRequestError, Features, ProgressSink, ToolBackend, http_router,
    serve_http, serve_io, serve_stdio,
};
pub use tool::{McpTool, ToolCatalog};
pub use toolkit::{McpToolkit, http_client};

/// The MCP SDK this crate is built on, for its protocol types.
pub use rmcp;
