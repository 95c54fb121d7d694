//! The agent-side A2E SDK.
//!
//! A [`Client`] is one connection to an A2E host, over any transport:
//!
//! - [`Client::connect_stdio`]: spawn the host (`a2e serve --stdio`) as a
//!   child and speak NDJSON over its pipes; the child is killed when the
//!   client is dropped;
//! - [`Client::connect_ws`]: `ws://host:port/`, one message per text frame;
//! - [`Client::connect_http`]: `http://host:port/`, the reference's HTTP+SSE
//!   protocol (`POST /session`, `GET /stream`, `POST /send`);
//! - [`ClientBuilder::connect_io`]: any pair of byte streams.
//!
//! The handshake runs on connect ([`ClientBuilder::agent_id`],
//! [`ClientBuilder::capabilities`], [`ClientBuilder::auth_token`]); the
//! session id and accepted capabilities are on the client. Requests are
//! matched to their answers by `req_id`, many may be in flight at once over
//! one connection, each has a deadline, and a dropped connection fails every
//! pending request with [`ClientError::ConnectionClosed`] instead of hanging.
//!
//! Typed APIs mirror the specification's: [`Client::tools`] (list, cached;
//! search; call with streaming, timeout, correlation id), [`Client::skills`],
//! [`Client::chains`] (events as a stream, then the `chain/resp`),
//! [`Client::proc`] (spawn, write, kill, status, output as a stream),
//! [`Client::ping`], [`Client::shutdown`]. A call's events arrive on its
//! [`Call`], a [`futures::Stream`], or through an `on_event` callback
//! ([`Call::finish_with`], [`api::ToolApi::call_with_events`]). Messages that
//! answer no pending request go to the handlers of [`Client::on_push`].
//!
//! Errors are one enum, [`ClientError`]: a request the host refused comes
//! back as [`ClientError::Protocol`] with its wire code; a tool that ran and
//! failed is a normal result with `success: false`.
//!
//! ```no_run
//! use a2e_client::{Client, ClientError, ToolCall};
//! use a2e_proto::{A2ECapability, ChainNode, ChainRequest, ErrorCode, NodeKind};
//! use futures::StreamExt;
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), ClientError> {
//! let mut host = tokio::process::Command::new("a2e");
//! host.args(["serve", "--stdio", "--root", "."]);
//! let client = Client::builder()
//!     .agent_id("doc-agent")
//!     .capabilities([A2ECapability::TOOLS, A2ECapability::CHAINS])
//!     .connect_stdio(host)
//!     .await?;
//! println!("session {}", client.session_id());
//!
//! for tool in client.tools().list().await?.iter() {
//!     println!("{}: {}", tool.name, tool.description);
//! }
//! let read = client.tools().call("read_file", json!({"path": "README.md"})).await?;
//! assert!(read.success);
//!
//! // A refused call is an error with the wire code.
//! match client.tools().call("no_such_tool", json!({})).await {
//!     Err(e) if e.code() == Some(&ErrorCode::UNKNOWN_TOOL) => {}
//!     other => panic!("{other:?}"),
//! }
//!
//! // A chain's events as they arrive, then its response.
//! let mut node = ChainNode::new("list", NodeKind::TOOL, "list_dir");
//! node.input.insert("path".into(), json!("."));
//! let req = ChainRequest { nodes: vec![node], entry_node: "list".into(), ..Default::default() };
//! let mut run = client.chains().run(req).await?;
//! while let Some(event) = run.next().await {
//!     println!("{} {}", event.node_id, event.phase);
//! }
//! let resp = run.finish().await?;
//! assert!(resp.success);
//! # let _ = ToolCall::new("x", json!({}));
//! client.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! The same flow runs for real, against an in-process host, in this crate's
//! `tests/` and in `examples/agent.rs`.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod api;
mod call;
mod client;
mod conn;
pub mod error;
mod transport;

pub use api::{
    AttachTarget, ChainApi, InvokeOptions, ProcApi, ProcExit, Process, SkillApi, SkillCall,
    SkillQuery, ToolApi, ToolCall, ToolQuery,
};
pub use call::{Call, FromMessage};
pub use client::{Client, ClientBuilder};
pub use error::{ClientError, ClientResult};
pub use transport::http::SESSION_HEADER;

/// The wire types, re-exported.
pub use a2e_proto as proto;
