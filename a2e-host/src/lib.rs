//! The A2E host runtime.
//!
//! A [`Host`] holds the plugin [`registry::Registry`] (tools and skills, ordered by
//! priority), the configuration, the process table and the audit log. A
//! [`session::Session`] speaks the protocol with one agent over any transport:
//! handshake, authorisation, concurrent dispatch up to `max_parallel`, per-call
//! timeouts, events numbered per request. Built-in tools are confined to a
//! workspace root; commands and network access are off unless allowed.
//!
//! The surface, by what a user does with it:
//! - embed a host: [`Compose::from_config`] and [`Compose::start`]
//!   (methods of [`HostBuilder`] once `a2e_host::Compose` is in scope) build
//!   the host a configuration describes, exactly as `a2e serve` runs it
//!   ([`compose`]); or assemble one from parts with [`Host::builder`].
//!   [`HostConfig`] ([`config`]), [`HostError`]; calls take a [`CallOptions`]
//!   (session, [`EventStream`] for events, cancellation, typed extensions);
//!   a concern every call passes is a [`CallLayer`];
//! - write plugins: [`plugin`] (re-exported from the `a2e-plugin` crate: the
//!   traits, typed and closure tools, the call context), [`registry`]; run a
//!   plugin as a process of its own: [`plugins`] (`[[plugins]]`);
//! - serve it: [`session`] and [`transport`] (stdio, WebSocket, HTTP+SSE);
//! - run chains, DAGs, Ontheia documents and skills: [`chains`], `acmp`,
//!   `ontheia_host`, [`skills`] (files are read by the `a2e-document` crate);
//! - built-in tools and processes: [`builtins`], [`proc`]; long-term memory:
//!   `memory`; the audit log: [`audit`]; redaction of secrets: [`redact`].
//!
//! **Features** (all on by default): `memory` (SQLite memory tools), `mcp`
//! (mounted MCP servers, the host as an MCP server), `llm` (model providers,
//! LLM skills, Ontheia `llm` steps), `ontheia`, `acmp` (task DAGs), `sandbox`
//! (sandboxed program skills and commands), `journal` (durable chain runs:
//! the run journal, resume, `chain/attach`, and hosts sharing runs on NATS
//! JetStream, `[cluster]`; [`runs`]). With `default-features = false`
//! the host is a light embeddable runtime (built-in tools, plugins, chains,
//! processes, transports) that refuses the configuration sections and skill
//! kinds of a missing feature by name.
//!
//! The host is built of crates in layers, each importing only the ones
//! below it, so that cargo keeps the arrows: `a2e-host-core` (errors,
//! configuration, plugins, registry, processes, built-ins, memory, [`Host`]
//! and its call pipeline, chains, Ontheia documents, plugin processes), then
//! the adapters `a2e-host-acmp` and `a2e-host-mcp`, then durable runs and
//! the cluster (`a2e-host-runs`), then skills (`a2e-host-skills`), then
//! sessions, transports and the live view (`a2e-host-serve`), and this
//! crate on top: the composition root, [`compose`], and the paths an
//! embedder uses (`a2e_host::session`, `a2e_host::runs`, …).
//!
//! Internals (the BM25 tokenizer, path resolution, text encoding) stay private.
//!
//! The hot path's figures (tool calls and a 1000-node chain over stdio, beside
//! a raw pipe echo and an rmcp server, with their ratios) come from
//! `cargo xtask bench transport`; the workspace's `BENCHMARKS.md` gives each
//! round's runs and how to run one part of the bench alone.
//!
//! ```
//! use a2e_host::{CallOptions, Host, HostConfig};
//! use a2e_proto::ToolCallRequest;
//! use serde_json::json;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let dir = tempfile::tempdir()?;
//!     std::fs::write(dir.path().join("notes.txt"), "hello")?;
//!     let config = HostConfig { root: dir.path().to_path_buf(), ..HostConfig::default() };
//!     let host = Host::builder(config).with_builtins().build()?;
//!     let names: Vec<String> = host.list_tools(&Default::default()).into_iter().map(|t| t.name).collect();
//!     assert!(names.contains(&"read_file".to_string()));
//!
//!     let read = ToolCallRequest::new("read_file", json!({"path": "notes.txt"}));
//!     let result = host.call_tool(read, CallOptions::new()).await?;
//!     assert!(result.success);
//!     assert_eq!(result.data["content"], "hello");
//!     Ok(())
//! })
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod compose;
pub mod plugins;

// The crates of the host keep the paths their modules had when they were
// modules of this one (`a2e_host::config`, `a2e_host::session`, …).
/// The host as an A2A agent (`a2e serve --a2a`).
#[cfg(feature = "a2a")]
pub use a2e_host_a2a as a2a;
#[cfg(feature = "acmp")]
pub use a2e_host_acmp as acmp;
/// Calls that wait for a person's decision (`[[approvals]]`).
#[cfg(feature = "journal")]
pub use a2e_host_approvals as approvals;
#[cfg(feature = "memory")]
pub use a2e_host_core::memory;
pub use a2e_host_core::{
    acmp_config, audit, builtins, chains, config, outbound, plugin, proc, redact, registry,
};
#[cfg(feature = "llm")]
pub use a2e_host_core::{llm, llm_tools};
#[cfg(feature = "mcp")]
pub use a2e_host_mcp as mcp;
#[cfg(feature = "ontheia")]
pub use a2e_host_ontheia as ontheia_host;
#[cfg(feature = "journal")]
pub use a2e_host_runs as runs;
#[cfg(feature = "ui")]
pub use a2e_host_serve::ui;
pub use a2e_host_serve::{session, transport};
pub use a2e_host_skills as skills;

#[cfg(feature = "ui")]
pub use a2e_host_core::live;
pub use a2e_host_core::{
    ApprovalRequired, BuildError, CANCEL_GRACE, CallHead, CallLayer, CallOptions, CallTarget,
    Cause, ConfigError, EventReceiver, EventStream, FieldError, Host, HostBuilder, HostConfig,
    HostError, HostResult, MAX_COLLECTED_EVENTS, MAX_TIMEOUT_SECS, Outbound, SkillError, WaitWatch,
    WatchWaits, effective_timeout,
};
pub use compose::Compose;
