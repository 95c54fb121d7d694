//! Stdio servers: spawned as leaders of their own process group, so stopping
//! one stops everything it started; their stderr kept as a short tail for
//! error messages.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::transport::TokioChildProcess;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::error::McpError;

/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 8;
/// Longest stderr line kept.
const STDERR_LINE_CHARS: usize = 400;

/// The last lines a server wrote to stderr.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines, joined with ` | `.
    pub(crate) fn joined(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().cloned().collect::<Vec<_>>().join(" | ")
    }
}

/// A stdio server's process group; dropping it kills the whole group.
#[derive(Debug)]
pub(crate) struct ProcessGroupGuard {
    pgid: Option<Pid>,
}

impl ProcessGroupGuard {
    /// The leader's pid (= the group id).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pgid.and_then(|p| u32::try_from(p.as_raw()).ok())
    }

    /// Sends `signal` to the group (ignored when it is gone already).
    pub(crate) fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid
            && let Err(e) = killpg(pgid, signal)
            && e != nix::errno::Errno::ESRCH
        {
            tracing::warn!(pgid = pgid.as_raw(), error = %e, "cannot signal MCP server group");
        }
    }
}

impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// Starts `command` as a group leader with piped stdio; stderr lines go to
/// `tracing` (debug) and into the returned tail.
pub(crate) fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&PathBuf>,
) -> Result<(TokioChildProcess, ProcessGroupGuard, StderrTail), McpError> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader());
    let (child, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| McpError::Spawn {
            server: server.into(),
            command: command.into(),
            reason: e.to_string(),
        })?;
    let pgid = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .map(Pid::from_raw);
    let tail = StderrTail::default();
    if let Some(stderr) = stderr {
        let tail = tail.clone();
        let server = server.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %server, "stderr: {line}");
                tail.push(line.chars().take(STDERR_LINE_CHARS).collect());
            }
        });
    }
    Ok((child, ProcessGroupGuard { pgid }, tail))
}
