//! The A2E host served: one agent's [`session`] (handshake, authorisation,
//! concurrent dispatch, answers), the [`transport`]s that carry sessions
//! (stdio, WebSocket, HTTP+SSE), and the live view (`ui`, feature `ui`:
//! `/ui`, its JSON and its SSE stream). The routes of a listener are
//! composed above both transport and live view, in `a2e_host::compose`.
//!
//! **Features** (all on by default): `journal` (durable chain runs and
//! `chain/attach` through `a2e-host-runs`), `acmp` (`dag/req`), `ontheia`
//! (Ontheia documents in the live view), `ui` (the live view).
//!
//! A host served over an in-memory pipe, as `a2e serve` serves it on stdio:
//!
//! ```
//! use a2e_host_core::{Host, HostConfig};
//! use a2e_host_serve::transport::stdio::{StdioOptions, serve};
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let host = Host::builder(HostConfig::default()).with_builtins().build()?;
//!     let (mut to_host, host_reads) = tokio::io::duplex(1 << 16);
//!     let (host_writes, from_host) = tokio::io::duplex(1 << 16);
//!     tokio::spawn(serve(host, host_reads, host_writes, StdioOptions::default()));
//!
//!     to_host
//!         .write_all(b"{\"type\":\"handshake/req\",\"id\":\"hs\",\"agent_id\":\"me\"}\n")
//!         .await?;
//!     let mut lines = BufReader::new(from_host).lines();
//!     let answer: serde_json::Value = serde_json::from_str(&lines.next_line().await?.unwrap_or_default())?;
//!     assert_eq!(answer["type"], "handshake/resp");
//!     assert_eq!(answer["ok"], true);
//!     Ok(())
//! })
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod session;
pub mod transport;
#[cfg(feature = "ui")]
pub mod ui;
