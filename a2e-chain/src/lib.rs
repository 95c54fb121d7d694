//! An event-driven async DAG engine for A2E chains (`chain/req`).
//!
//! [`Engine::run`] validates a [`ChainRequest`](a2e_proto::ChainRequest),
//! then runs its nodes as their dependencies complete: no polling loop, a
//! node starts the moment its last dependency settles. `tool`, `skill` and
//! `proc` nodes go to a [`NodeRunner`] the host provides; `branch` and `map`
//! nodes are the engine's own. Inputs are resolved with JMESPath
//! expressions compiled once at validation and evaluated on shared values.
//! Progress is reported as [`Event`]s to an [`ChainEventSink`]; the result is a
//! [`ChainResponse`](a2e_proto::ChainResponse).
//!
//! The exact semantics (dependencies, skips, `on_error`, timeouts, events,
//! `final_output`) are written down in `docs/semantics.md`; measured
//! overheads (`cargo xtask bench chain`) are in the crate's `README.md`.
//!
//! Chains come from agents: expressions are bounded before the parser sees
//! them ([`expr::check_expression`]: 4,096 bytes, 64 levels), every timeout
//! is clamped to [`MAX_TIMEOUT_SECS`] with checked deadline arithmetic, and a
//! panic in a runner or in the engine's own work for a node is that node's
//! `runtime_error`: whatever the input, one run ends in one response.
//!
//! ```
//! use a2e_chain::{runner_fn, Engine, NodeCall, NodeError};
//! use a2e_proto::{ChainNode, ChainRequest, NodeKind};
//! use serde_json::json;
//! use tokio_util::sync::CancellationToken;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // An in-process runner: `read_file` returns text, `upper` shouts it.
//! let runner = runner_fn(|call: NodeCall| async move {
//!     match &*call.name {
//!         "read_file" => Ok(json!({"text": format!("hello from {}", call.input["path"])})),
//!         "upper" => Ok(json!(call.input["text"].as_str().unwrap_or("").to_uppercase())),
//!         other => Err(NodeError::tool(format!("no tool {other}"))),
//!     }
//! });
//!
//! let mut read = ChainNode::new("read", NodeKind::TOOL, "read_file");
//! read.input.insert("path".into(), json!("notes.txt"));
//! read.next_node = "shout".into();
//! let mut shout = ChainNode::new("shout", NodeKind::TOOL, "upper");
//! shout.input_map.insert("text".into(), json!("read.output.text"));
//! let req = ChainRequest { nodes: vec![read, shout], entry_node: "read".into(), ..Default::default() };
//!
//! let mut phases = Vec::new();
//! let engine = Engine::new(runner);
//! let resp = engine
//!     .run(&req, |ev: &a2e_chain::Event<'_>| phases.push(format!("{}:{}", ev.node_id, ev.phase)), CancellationToken::new())
//!     .await
//!     .unwrap();
//!
//! assert!(resp.success);
//! assert_eq!(resp.final_output, json!("HELLO FROM \"NOTES.TXT\""));
//! assert_eq!(resp.nodes_run, 2);
//! assert_eq!(phases, ["read:start", "read:done", "shout:start", "shout:done"]);
//! # });
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod config;
mod context;
mod cycle;
mod downstream;
mod engine;
mod error;
mod events;
pub mod expr;
mod graph;
mod hash;
mod input;
mod notice;
mod prefetch;
mod references;
mod resume;
mod runner;
mod validate;

pub use config::{ChainConfig, MAX_TIMEOUT_SECS, clamp_timeout, deadline_after};
pub use engine::Engine;
pub use error::{NodeError, ValidationError};
pub use events::{ChainEventSink, Event, Progress, WireEvents, channel_sink};
pub use graph::Plan;
pub use input::NodeInput;
pub use notice::Notices;
pub use references::{ExprField, Reference};
pub use resume::{CallObserver, ObserveFuture, Resume, RunOptions};
pub use runner::{
    BoxNodeFuture, CallKey, DynNodeRunner, FnRunner, NodeCall, NodeResult, NodeRunner, runner_fn,
    wire_id,
};
pub use validate::validate;
