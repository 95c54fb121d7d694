//! A person in the loop for the A2E host: a call that an `[[approvals]]`
//! rule matches — a tool, a skill, `run_command`'s program, an HTTP host, a
//! file path, an agent — or whose chain node says `"approval": "required"`
//! does not start. It is journaled as waiting (it survives a SIGKILL of its
//! host and a cluster's take-over), its caller is told, and it runs once
//! somebody approves it (optionally with edited arguments); a denial fails
//! it with code `denied`, no decision in time with `approval_timeout` (or
//! runs it, if its rule says so).
//!
//! Decided by whoever reaches the run journal ([`decide`]: `a2e runs
//! approve | deny`, the live view), by the user of the MCP client the call
//! came from (elicitation), or by the client a call's
//! [`WaitWatch`](a2e_host_core::WaitWatch) tells (an A2A client, whose task
//! then waits for input). The layer ([`ApprovalLayer`]) is a
//! [`CallLayer`](a2e_host_core::CallLayer) of the host's call pipeline, so
//! tool calls, skill calls, chain nodes, DAG tasks and a skill's own tool
//! calls all pass it. The records it keeps are described in
//! [`a2e_journal::approval`]; the whole story in docs/approvals.md.
//!
//! ```
//! use a2e_host_approvals::ApprovalLayer;
//! use a2e_host_core::{Host, HostConfig};
//!
//! let config = HostConfig::from_toml(
//!     "[[approvals]]\ntool = \"run_command\"\nprogram = \"rm\"\ntimeout_secs = 600\n",
//! )?;
//! let layer = ApprovalLayer::from_config(&config)?;
//! let host = Host::builder(config).with_builtins().with_layer(layer).build()?;
//! assert!(host.registry().tool("run_command").is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

#[cfg(feature = "mcp")]
mod client;
mod decide;
mod layer;
mod policy;

pub use decide::{DecideError, Decided, Pending, Verdict, decide, pending, waiting_in};
pub use layer::{ApprovalLayer, WAITING};
pub use policy::{Matched, Policy};
