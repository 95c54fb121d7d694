//! The proc capability (a2e-core.md §5): processes per session, each in its
//! own process group.
//!
//! - `spawn` starts an allowed program (no shell) with its working directory
//!   confined to the workspace root, and streams its output as
//!   `proc/read/event`s on the channel it is given: one event per line
//!   (`stream_type` `stdout`/`stderr`, `data: {"text": line}`), then one
//!   `killed` event at the end (`data: {"code": exit code or null, "state": …}`,
//!   plus `"signal"` when a signal ended it). `seq` counts 0, 1, 2, … per
//!   process and `req_id` is the spawn request's id.
//! - States: `running`; `stopped` (exit code 0, or ended after a kill request
//!   or the end of its session); `crashed` (non-zero exit, or a signal nobody
//!   asked for); `timedout` (killed at its `timeout`).
//! - A session has at most `commands.proc_limit` live processes (spawned ones
//!   that still run, plus [`ProcManager::run_to_exit`] runs).
//! - A process or run of one session is invisible to every other session
//!   (`unknown_proc`). [`ProcManager::end_session`] kills every process group
//!   of the session; so does dropping the manager.
//!
//! When a process's leader exits, what is left of its process group
//! (background children) is killed with it.
//!
//! Process groups, shared by the `run_command` built-in and the proc capability:
//!
//! Every command the host starts runs in a process group of its own
//! ([`spawn_group`]), so that the whole tree it forks can be signalled at once
//! ([`kill_group`]). A [`GroupGuard`] kills the group when it is dropped, which
//! is what makes an aborted call (a host timeout drops the call's future) leave
//! no process behind. [`supervise`] drives a spawned group to its end: it reads
//! stdout and stderr line by line with per-stream byte caps, enforces a timeout
//! and a cancellation token, and kills what is left of the group once the
//! leader has exited, so background children do not outlive the command.
//!
//! The command policy lives here too: the allow-list check on `argv[0]`
//! ([`check_allowed`]), the lookup of a bare program name in the host's own
//! `PATH` ([`resolve_program`]), and the conversion of a JSON environment
//! ([`env_pairs`]).

mod capture;
mod group;
mod manager;
mod policy;
mod supervise;
#[cfg(test)]
mod tests;

pub use capture::*;
pub use group::*;
pub use manager::*;
pub use policy::*;
pub use supervise::*;
