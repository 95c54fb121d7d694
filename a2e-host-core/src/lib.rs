//! The core of the A2E host: what one call needs, and nothing that serves,
//! journals or speaks another protocol.
//!
//! A [`Host`] holds the plugin [`registry::Registry`] (tools and skills,
//! ordered by priority), the configuration ([`config`]), the process table
//! ([`proc`]) and the audit log ([`audit`]). Every call passes the host's
//! call pipeline ([`Host::call_tool`], [`CallLayer`]); built-in tools
//! ([`builtins`]) are confined to a workspace root, commands and network
//! access are off unless allowed. Chains run on the host's node runner
//! ([`chains`]); Ontheia documents run on it in the crate `a2e-host-ontheia`.
//!
//! The crates above it add a layer each: ACMP and MCP adapters
//! (`a2e-host-acmp`, `a2e-host-mcp`), durable runs and the cluster
//! (`a2e-host-runs`), skills from files (`a2e-host-skills`), sessions,
//! transports and the live view (`a2e-host-serve`); `a2e-host` composes them
//! and is the crate an embedder depends on.
//!
//! **Features** (all on by default) keep the parts of the host that the
//! layers above need: `memory`, `mcp`, `llm`, `ontheia`, `sandbox`,
//! `journal`, `ui`.
//!
//! ```
//! use a2e_host_core::{CallOptions, Host, HostConfig};
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
//!     let read = ToolCallRequest::new("read_file", json!({"path": "notes.txt"}));
//!     let result = host.call_tool(read, CallOptions::new()).await?;
//!     assert_eq!(result.data["content"], "hello");
//!     Ok(())
//! })
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod acmp_config;
pub mod audit;
pub mod builtins;
pub mod chains;
pub mod config;
pub mod error;
pub mod host;
#[cfg(feature = "llm")]
pub mod llm;
#[cfg(feature = "llm")]
pub mod llm_tools;
#[cfg(feature = "llm")]
pub mod llm_turns;
#[cfg(feature = "memory")]
pub mod memory;
pub mod outbound;
pub mod plugin;
pub mod proc;
pub mod redact;
pub mod registry;
pub mod search;

pub use config::HostConfig;
pub use error::{Cause, ConfigError, FieldError, HostError, HostResult, SkillError};
#[cfg(feature = "ui")]
pub use host::live;
pub use host::{
    ApprovalRequired, BuildError, CANCEL_GRACE, CallHead, CallLayer, CallOptions, CallTarget, Host,
    HostBuilder, MAX_COLLECTED_EVENTS, MAX_TIMEOUT_SECS, WaitWatch, WatchWaits, effective_timeout,
};
pub use outbound::{EventReceiver, EventStream, Outbound};
