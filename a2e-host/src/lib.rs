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
//! - embed a host: [`Host`], [`HostBuilder`], [`HostConfig`] ([`config`]), [`HostError`];
//! - write plugins: [`plugin`] (the traits, typed tools, the call context), [`registry`];
//! - serve it: [`session`] and [`transport`] (stdio, WebSocket, HTTP+SSE);
//! - run documents: [`document`], [`chains`], [`acmp`], [`skills`];
//! - built-in tools and processes: [`builtins`], [`proc`]; long-term memory:
//!   [`memory`]; the audit log: [`audit`];
//!   redaction of secrets: [`redact`].
//!
//! Internals (the BM25 tokenizer, path resolution, text encoding) stay private.
//!
//! The hot path's figures (tool calls and a 1000-node chain over stdio, beside
//! a raw pipe echo and an rmcp server, with their ratios) come from
//! `cargo xtask bench transport`; the workspace's `BENCHMARKS.md` gives each
//! round's runs and how to run one part of the bench alone.
//!
//! ```
//! use a2e_host::{Host, HostConfig};
//!
//! # tokio_test_main();
//! # fn tokio_test_main() {
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! rt.block_on(async {
//!     let dir = std::env::temp_dir();
//!     let config = HostConfig { root: dir, ..HostConfig::default() };
//!     let host = Host::builder(config).with_builtins().build().unwrap();
//!     let names: Vec<String> = host.list_tools(&Default::default()).into_iter().map(|t| t.name).collect();
//!     assert!(names.contains(&"read_file".to_string()));
//! });
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod acmp;
pub mod audit;
pub mod builtins;
pub mod chains;
pub mod config;
pub mod document;
mod error;
mod host;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod ontheia_host;
pub mod outbound;
pub mod plugin;
pub mod plugins;
pub mod proc;
pub mod redact;
pub mod registry;
mod search;
pub mod session;
pub mod skills;
#[cfg(test)]
mod test_support;
pub mod transport;

pub use config::HostConfig;
pub use error::{Cause, HostError, HostResult};
pub use host::{
    BuildError, CANCEL_GRACE, Host, HostBuilder, Identity, MAX_COLLECTED_EVENTS, MAX_TIMEOUT_SECS,
    effective_timeout,
};
