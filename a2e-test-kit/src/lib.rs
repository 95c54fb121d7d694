//! Test support the workspace's crates share, taken as a dev-dependency
//! (never published): what their integration tests, and the examples that
//! reuse test fixtures, would otherwise include from each other's
//! directories.
//!
//! - [`skip`]: how a test says it skipped for a missing package.
//! - [`ci_tools`]: where the installers put packages, and their settings.
//! - [`nats_server`]: a real nats-server with JetStream for one test.
//! - [`process`]: whether a process runs, which run a command, polling.
//! - [`journaled_chain`] (feature `journal`): a chain run journaled the way a
//!   host does it, and resumed from the journal.
//! - [`plugin`] (feature `plugin`): a tool plugin and a counting waker for
//!   the host crates' unit tests.

pub mod ci_tools;
#[cfg(feature = "journal")]
pub mod journaled_chain;
pub mod nats_server;
#[cfg(feature = "plugin")]
pub mod plugin;
pub mod process;
pub mod skip;
