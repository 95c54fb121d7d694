//! Sandboxed child processes for A2E hosts: process groups, parent-death
//! signal, rlimits, a minimal environment, no network, Landlock rules, and
//! outcomes (out of memory, crash by signal, CPU limit, timeout).
//!
//! Two halves:
//!
//! - the **exec wrapper**, [`exec_main`], which a binary calls (this crate
//!   ships `a2e-sandbox-exec`; a host calls it from a hidden subcommand). In
//!   the child it applies the plan to itself with safe system calls — the
//!   parent-death signal (and a check that the parent is still there),
//!   namespaces, Landlock, rlimits, the working directory — and then runs the
//!   program;
//! - the **host side**, [`Sandbox`], which probes once what the host can use
//!   ([`Capabilities`], each missing layer logged once), builds the
//!   `tokio::process::Command` for a [`Policy`] ([`Sandbox::command`]),
//!   supervises runs ([`Sandbox::run`]) and runs sandboxed skills
//!   ([`run_skill`]). [`classify`] tells how a run ended ([`Termination`]).
//!
//! # Example
//!
//! A host binary is its own wrapper: it hands a hidden subcommand to
//! [`exec_main`] before it builds its runtime.
//!
//! ```standalone_crate
//! use a2e_sandbox::{Policy, RunOptions, Sandbox, SandboxConfig, Termination, Wrapper};
//!
//! fn main() {
//!     let mut args = std::env::args_os().skip(1).peekable();
//!     if args.peek().is_some_and(|a| a == "__sandbox-exec") {
//!         a2e_sandbox::exec_main(args.skip(1)); // never returns
//!     }
//!     let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//!     rt.block_on(async {
//!         let wrapper = Wrapper::current_exe("__sandbox-exec").unwrap();
//!         let sandbox = Sandbox::new(wrapper, SandboxConfig::default()).await.unwrap();
//!         let workdir = tempfile::tempdir().unwrap();
//!         let policy = Policy::skill(workdir.path());
//!         let report = sandbox
//!             .run(&policy, "sh", ["-c", "echo hello; kill -TERM $$"], &RunOptions::default())
//!             .await
//!             .unwrap();
//!         assert_eq!(report.stdout, b"hello\n");
//!         assert_eq!(report.termination, Termination::Signaled(15));
//!         assert_eq!(report.termination.error_code(), Some("sandbox_crash"));
//!     });
//! }
//! ```

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
mod apply;
mod caps;
mod error;
mod exec;
mod outcome;
mod plan;
mod policy;
mod run;
mod sandbox;
mod skill;

pub use caps::{Capabilities, Layer};
pub use error::SandboxError;
pub use exec::{SETUP_FAILED_EXIT, SETUP_FAILED_MARKER, SIGNAL_MARKER, exec_main};
pub use outcome::{
    Ending, OOM_MARKERS, Termination, classify, mentions_allocation_failure, setup_failure,
    signal_name,
};
pub use policy::{
    DEFAULT_ENV_ALLOW, DEFAULT_WRITABLE_DEVICES, EnvPolicy, FsPolicy, Limits, Network, Policy,
};
pub use run::{RunOptions, RunReport, Tail};
pub use sandbox::{
    Applied, BubblewrapUse, Containment, NetIsolation, Sandbox, SandboxConfig, Wrapper,
};
pub use skill::{SkillError, SkillEvent, SkillOptions, SkillOutput, run_skill};
