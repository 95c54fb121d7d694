//! Errors of the host side.

use std::io;

/// What can go wrong before or around a sandboxed run (how the run itself
/// ended is a [`Termination`](crate::Termination), not an error).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The policy cannot be applied as given.
    #[error("invalid sandbox policy: {0}")]
    Policy(String),
    /// The capability probe failed (the wrapper could not be run or answered nonsense).
    #[error("sandbox capability probe failed: {0}")]
    Probe(String),
    /// The wrapper could not be started.
    #[error("cannot start the sandboxed process: {0}")]
    Spawn(#[source] io::Error),
    /// Waiting for or talking to the child failed.
    #[error("i/o with the sandboxed process failed: {0}")]
    Io(#[source] io::Error),
}
