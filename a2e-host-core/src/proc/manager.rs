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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_proto::{
    ErrorCode, Message, ProcKillRequest, ProcKillResponse, ProcReadEvent, ProcSpawnRequest,
    ProcSpawnResponse, ProcState, ProcStatusRequest, ProcStatusResponse, ProcWriteRequest,
    ProcWriteResponse, StreamType,
};
use nix::sys::signal::Signal;
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{self as process, Ending, GroupChild, RunLimits, StreamKind};
use stream::supervise_proc;
use table::{Proc, ProcStatus, Run, RunRegistration, SessionProcs, SharedTable, lock};

mod stream;
mod table;
use crate::builtins::paths;
use crate::config::HostConfig;
use crate::error::{HostError, HostResult};

/// How long `kill` waits for the process to end before it answers.
const KILL_WAIT: Duration = Duration::from_secs(3);

/// Processes of every session.
pub struct ProcManager {
    config: Arc<HostConfig>,
    launcher: process::Launcher,
    table: SharedTable,
    next_run: AtomicU64,
}

fn unknown(proc_id: &str) -> HostError {
    HostError::Proc {
        code: ErrorCode::UNKNOWN_PROC,
        message: format!("no process `{proc_id}` in this session"),
    }
}

fn dead(proc_id: &str) -> HostError {
    HostError::Proc {
        code: ErrorCode::PROC_DEAD,
        message: format!("process `{proc_id}` has exited"),
    }
}

/// The signal a `proc/kill` names: `SIGTERM` (also when empty), `SIGKILL` or
/// `SIGINT`, case-insensitive, with or without the `SIG` prefix.
pub fn parse_signal(name: &str) -> HostResult<Signal> {
    let upper = name.trim().to_ascii_uppercase();
    match upper.strip_prefix("SIG").unwrap_or(&upper) {
        "" | "TERM" => Ok(Signal::SIGTERM),
        "KILL" => Ok(Signal::SIGKILL),
        "INT" => Ok(Signal::SIGINT),
        _ => Err(HostError::schema(vec![format!(
            "signal: `{name}` is not one of SIGTERM, SIGKILL, SIGINT"
        )])),
    }
}

fn new_proc_id() -> String {
    let hex: String = uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .chars()
        .take(8)
        .collect();
    format!("p-{hex}")
}

/// A command checked against the policy, ready to spawn.
struct Prepared {
    argv0: String,
    cmd: tokio::process::Command,
}

impl ProcManager {
    /// An empty table.
    pub fn new(config: Arc<HostConfig>) -> Self {
        Self {
            config,
            launcher: process::Launcher::default(),
            table: SharedTable::default(),
            next_run: AtomicU64::new(0),
        }
    }

    /// The same table, its commands started by `launcher`.
    pub fn with_launcher(mut self, launcher: process::Launcher) -> Self {
        self.launcher = launcher;
        self
    }

    /// Checks `argv`, `cwd` and `env` against the policy and builds the command.
    fn prepare(
        &self,
        argv: &[String],
        cwd: &str,
        env: &Map<String, Value>,
        stdin_piped: bool,
    ) -> HostResult<Prepared> {
        let argv0 = argv
            .first()
            .ok_or_else(|| HostError::schema(vec!["cmd: the program name is missing".into()]))?;
        if argv.iter().any(|a| a.contains('\0')) {
            return Err(HostError::schema(vec![
                "cmd: arguments may not contain NUL".into(),
            ]));
        }
        process::check_allowed(&self.config.commands.allow, argv0)?;
        let dir = paths::resolve(&self.config.root, cwd)?;
        if !dir.path.is_dir() {
            return Err(HostError::Runtime(format!(
                "working directory `{}` is not a directory",
                dir.relative()
            )));
        }
        let env = process::env_pairs(env)?;
        let program = process::resolve_program(argv0)
            .ok_or_else(|| HostError::Runtime(format!("command `{argv0}` not found")))?;
        Ok(Prepared {
            argv0: argv0.clone(),
            cmd: process::command(
                &self.launcher,
                &program,
                argv,
                &dir.path,
                &env,
                stdin_piped,
                &self.config.commands.inherit_env,
            ),
        })
    }

    fn limit_error(&self, live: usize) -> HostError {
        HostError::Proc {
            code: ErrorCode::PROC_LIMIT,
            message: format!(
                "the session has {live} live processes; the limit is {}",
                self.config.commands.proc_limit
            ),
        }
    }

    /// `proc/spawn`: starts `req.cmd` and streams its output on `out` until it ends.
    pub async fn spawn(
        &self,
        session_id: &str,
        req: &ProcSpawnRequest,
        out: crate::outbound::EventStream,
    ) -> HostResult<ProcSpawnResponse> {
        let stdin_piped = match req.stdin_mode.as_str() {
            "" | "pipe" => true,
            "null" => false,
            other => {
                return Err(HostError::schema(vec![format!(
                    "stdin_mode: `{other}` is not one of pipe, null"
                )]));
            }
        };
        let mut prepared = self.prepare(&req.cmd, &req.cwd, &req.env, stdin_piped)?;
        let (entry, child) = {
            let mut table = lock(&self.table);
            let session = table.sessions.entry(session_id.to_owned()).or_default();
            let live = session.live();
            if live >= self.config.commands.proc_limit {
                return Err(self.limit_error(live));
            }
            let mut child = process::spawn_group(&mut prepared.cmd)
                .map_err(|e| HostError::io(format!("cannot start `{}`", prepared.argv0), e))?;
            let mut id = new_proc_id();
            while session.procs.iter().any(|p| p.id == id) {
                id = new_proc_id();
            }
            let entry = Arc::new(Proc {
                id,
                pid: child.pid(),
                stdin: tokio::sync::Mutex::new(child.child.stdin.take()),
                status: Mutex::new(ProcStatus {
                    state: ProcState::RUNNING,
                    kill_requested: false,
                }),
                cancel: CancellationToken::new(),
                done: watch::Sender::new(false),
            });
            session.prune();
            session.procs.push(entry.clone());
            (entry, child)
        };
        tracing::debug!(session = session_id, proc_id = %entry.id, pid = entry.pid, command = %prepared.argv0, "process spawned");
        let timeout = (req.timeout > 0)
            .then(|| Duration::from_secs(req.timeout.min(a2e_chain::MAX_TIMEOUT_SECS)));
        tokio::spawn(supervise_proc(
            entry.clone(),
            child,
            timeout,
            req.id.clone(),
            out,
        ));
        Ok(ProcSpawnResponse {
            req_id: req.id.clone(),
            proc_id: entry.id.clone(),
            ok: true,
            pid: entry.pid,
            ..ProcSpawnResponse::default()
        })
    }

    fn find(&self, session_id: &str, proc_id: &str) -> HostResult<Arc<Proc>> {
        lock(&self.table)
            .sessions
            .get(session_id)
            .and_then(|s| s.procs.iter().find(|p| p.id == proc_id))
            .cloned()
            .ok_or_else(|| unknown(proc_id))
    }

    /// `proc/write`: writes `data` to the process's stdin, then closes it when `eof`.
    pub async fn write(
        &self,
        session_id: &str,
        req: &ProcWriteRequest,
    ) -> HostResult<ProcWriteResponse> {
        let entry = self.find(session_id, &req.proc_id)?;
        if !entry.is_running() {
            return Err(dead(&req.proc_id));
        }
        let written = async {
            let mut stdin = entry.stdin.lock().await;
            let Some(pipe) = stdin.as_mut() else {
                return Err(HostError::Runtime(format!(
                    "the standard input of `{}` is closed",
                    req.proc_id
                )));
            };
            let io = async {
                if !req.data.is_empty() {
                    pipe.write_all(req.data.as_bytes()).await?;
                    pipe.flush().await?;
                }
                Ok::<(), std::io::Error>(())
            };
            io.await.map_err(|e| match e.kind() {
                std::io::ErrorKind::BrokenPipe => dead(&req.proc_id),
                _ => HostError::io(format!("cannot write to `{}`", req.proc_id), e),
            })?;
            if req.eof
                && let Some(mut pipe) = stdin.take()
            {
                let _ = pipe.shutdown().await;
            }
            Ok(())
        };
        tokio::select! {
            result = written => result?,
            () = entry.finished() => return Err(dead(&req.proc_id)),
        }
        Ok(ProcWriteResponse {
            req_id: req.id.clone(),
            proc_id: entry.id.clone(),
            ok: true,
            pid: entry.pid,
            ..ProcWriteResponse::default()
        })
    }

    /// `proc/kill`: sends the signal to the process group and waits briefly for
    /// the end. `ok` is false when the process had already ended (nothing sent).
    pub async fn kill(
        &self,
        session_id: &str,
        req: &ProcKillRequest,
    ) -> HostResult<ProcKillResponse> {
        let signal = parse_signal(&req.signal)?;
        let entry = self.find(session_id, &req.proc_id)?;
        let running = {
            let mut status = entry.status();
            if status.state == ProcState::RUNNING {
                status.kill_requested = true;
                true
            } else {
                false
            }
        };
        if running {
            process::kill_group(entry.pid, signal)
                .map_err(|e| HostError::io(format!("cannot signal `{}`", req.proc_id), e))?;
            let _ = tokio::time::timeout(KILL_WAIT, entry.finished()).await;
        }
        Ok(ProcKillResponse {
            req_id: req.id.clone(),
            ok: running,
            state: entry.state().to_string(),
            ..ProcKillResponse::default()
        })
    }

    /// `proc/status`: the state of one process, or (empty `proc_id`) a JSON
    /// object of every process of the session, id → state, as a string.
    pub fn status(
        &self,
        session_id: &str,
        req: &ProcStatusRequest,
    ) -> HostResult<ProcStatusResponse> {
        let status = if req.proc_id.is_empty() {
            let table = lock(&self.table);
            let all: Map<String, Value> = table
                .sessions
                .get(session_id)
                .map(|s| {
                    s.procs
                        .iter()
                        .map(|p| (p.id.clone(), Value::String(p.state().to_string())))
                        .collect()
                })
                .unwrap_or_default();
            Value::Object(all).to_string()
        } else {
            self.find(session_id, &req.proc_id)?.state().to_string()
        };
        Ok(ProcStatusResponse {
            req_id: req.id.clone(),
            proc_id: req.proc_id.clone(),
            status,
            ..ProcStatusResponse::default()
        })
    }

    /// Runs a command to its end for a chain's `proc` node:
    /// `{"exit_code", "signal", "stdout", "stderr", "truncated"}` with each
    /// stream capped at `commands.output_max_bytes`. Same policy as `spawn`;
    /// counts towards the session's process limit while it runs. The timeout,
    /// `cancel`, the end of the session and dropping the future kill the group.
    pub async fn run_to_exit(
        &self,
        session_id: &str,
        cmd: Vec<String>,
        cwd: &str,
        env: Map<String, Value>,
        timeout: Option<Duration>,
        cancel: CancellationToken,
    ) -> HostResult<Value> {
        let mut prepared = self.prepare(&cmd, cwd, &env, false)?;
        let run_cancel = cancel.child_token();
        let (child, _registration): (GroupChild, RunRegistration) = {
            let mut table = lock(&self.table);
            let session = table.sessions.entry(session_id.to_owned()).or_default();
            let live = session.live();
            if live >= self.config.commands.proc_limit {
                return Err(self.limit_error(live));
            }
            let child = process::spawn_group(&mut prepared.cmd)
                .map_err(|e| HostError::io(format!("cannot start `{}`", prepared.argv0), e))?;
            let id = self.next_run.fetch_add(1, Ordering::Relaxed);
            session.runs.insert(
                id,
                Run {
                    pgid: child.pid(),
                    cancel: run_cancel.clone(),
                },
            );
            let registration = RunRegistration {
                table: self.table.clone(),
                session: session_id.to_owned(),
                id,
            };
            (child, registration)
        };
        let limits = RunLimits {
            timeout,
            cancel: run_cancel,
            output_max_bytes: Some(self.config.commands.output_max_bytes),
            keep_output: true,
        };
        let outcome = process::supervise(child, limits, |_| async {})
            .await
            .map_err(|e| HostError::io(format!("`{}` failed", prepared.argv0), e))?;
        match outcome.ending {
            Ending::Exited => Ok(json!({
                "exit_code": outcome.exit_code(),
                "signal": outcome.signal(),
                "stdout": outcome.stdout.text,
                "stderr": outcome.stderr.text,
                "truncated": outcome.stdout.truncated || outcome.stderr.truncated,
            })),
            Ending::TimedOut => Err(HostError::Timeout(
                timeout.map_or(0, |t| t.as_secs_f64().ceil() as u64),
            )),
            Ending::Cancelled => Err(HostError::Cancelled),
        }
    }

    /// Kills every process group of a session and forgets its processes.
    /// Calling it again, or for an unknown session, does nothing.
    pub fn end_session(&self, session_id: &str) {
        let removed = lock(&self.table).sessions.remove(session_id);
        if let Some(session) = removed {
            tracing::debug!(session = session_id, "ending the session's processes");
            session.stop_all();
        }
    }

    /// Live processes (spawned and `run_to_exit`) of a session.
    pub fn live_count(&self, session_id: &str) -> usize {
        lock(&self.table)
            .sessions
            .get(session_id)
            .map_or(0, SessionProcs::live)
    }
}

impl Drop for ProcManager {
    fn drop(&mut self) {
        let sessions = std::mem::take(&mut lock(&self.table).sessions);
        for (_, session) in sessions {
            session.stop_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_by_name() {
        assert_eq!(parse_signal("SIGTERM").unwrap(), Signal::SIGTERM);
        assert_eq!(parse_signal("").unwrap(), Signal::SIGTERM);
        assert_eq!(parse_signal("kill").unwrap(), Signal::SIGKILL);
        assert_eq!(parse_signal("SigInt").unwrap(), Signal::SIGINT);
        assert!(matches!(
            parse_signal("SIGHUP"),
            Err(HostError::Schema { .. })
        ));
    }

    #[test]
    fn proc_ids_look_like_p_and_8_hex() {
        let id = new_proc_id();
        assert_eq!(id.len(), 10);
        assert!(id.starts_with("p-"));
        assert!(id.chars().skip(2).all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn end_session_of_an_unknown_session_is_a_no_op() {
        let m = ProcManager::new(Arc::new(HostConfig::default()));
        m.end_session("nope");
        m.end_session("nope");
        assert_eq!(m.live_count("nope"), 0);
    }
}
