//! What the checkers of the A2E conformance suite share: the host checker,
//! the client checker and the plugin checker of `a2e-conformance` are built
//! on these parts, and none of them knows the others.
//!
//! - [`check`]: one testable rule of the specs ([`check::CheckDef`]) and what
//!   a run found for it, gathered by a [`check::Recorder`];
//! - [`scenario`]: a unit of work against a peer, the protocol areas and the
//!   transports, and which scenarios a run selects;
//! - [`link`]: one connection to a peer as text messages, over stdio,
//!   WebSocket or HTTP+SSE, from either side;
//! - [`session`]: requests to a host and its answers matched to them;
//! - [`wire`]: the rules every message on the wire is held to, and the log of
//!   what broke them;
//! - [`schemas`]: the compiled JSON Schemas of every wire type;
//! - [`profile`]: the fixture profile a host under test may offer;
//! - [`report`] and [`expected`]: what a run prints and writes, and its
//!   failures against the expected ones.
//!
//! A scenario records what it found, check by check; the recorder fails the
//! checks it never reached:
//!
//! ```
//! use conformance_harness::check::{CheckDef, Recorder, must};
//!
//! const CHECKS: &[CheckDef] = &[
//!     must("core.ping.pong", "a2e-core: ping", "a ping is answered with a pong"),
//!     must("core.ping.ts", "a2e-core: ping", "the pong carries the ping's ts"),
//! ];
//! let mut rec = Recorder::new("core/ping", CHECKS);
//! rec.check("core.ping.pong", true, "a pong", "a pong");
//! let results = rec.finish(Some("the host closed the connection"));
//! assert!(results[0].passed());
//! assert!(results[1].failed());
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod check;
pub mod expected;
pub mod link;
pub mod profile;
pub mod report;
pub mod scenario;
pub mod schemas;
pub mod session;
pub mod wire;
