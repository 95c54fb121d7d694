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
//! ```
//! use a2e_sandbox::{Policy, RunOptions, Sandbox, SandboxConfig, Termination, Wrapper};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let wrapper_path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
//! #     .join("../target/debug/a2e-sandbox-exec");
//! # if !wrapper_path.exists() { return Ok(()); }
//! // The host passes its own binary and hidden subcommand: Wrapper::current_exe("__sandbox-exec").
//! let sandbox = Sandbox::new(Wrapper::binary(wrapper_path), SandboxConfig::default()).await?;
//! let workdir = tempfile::tempdir()?;
//! let policy = Policy::skill(workdir.path());
//! let report = sandbox
//!     .run(&policy, "sh", ["-c", "echo hello; kill -TERM $$"], &RunOptions::default())
//!     .await?;
//! assert_eq!(report.stdout, b"hello\n");
//! assert_eq!(report.termination, Termination::Signaled(15));
//! assert_eq!(report.termination.error_code(), Some("sandbox_crash"));
//! # Ok(())
//! # }
//! ```

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
