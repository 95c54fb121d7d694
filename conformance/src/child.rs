//! A host process under test, driven over its stdin and stdout: the one
//! child-process harness of the workspace (the black-box suite and the host's
//! end-to-end tests both use it).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A child process speaking NDJSON: lines in on stdin, lines out on stdout (read
/// by a thread, so a read can time out). Killed and reaped when dropped.
pub struct HostProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl HostProcess {
    /// Starts `command` (program and arguments); stderr is discarded.
    pub fn start(command: &[String]) -> Result<Self, String> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| "empty host command".to_owned())?;
        let mut cmd = Command::new(program);
        cmd.args(args);
        Self::spawn(cmd)
    }

    /// Starts a prepared command with piped stdin and stdout (stderr is
    /// discarded unless the command says otherwise).
    pub fn spawn(mut cmd: Command) -> Result<Self, String> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start `{:?}`: {e}", cmd.get_program()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| "the host's stdout is not piped".to_owned())?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            stdin: child.stdin.take(),
            child,
            lines,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one line (a newline is added).
    pub fn send(&mut self, line: &[u8]) -> Result<(), String> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| "stdin closed".to_owned())?;
        stdin
            .write_all(line)
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to the host: {e}"))
    }

    /// Closes stdin (end of input for the host).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next line, within `timeout`.
    pub fn recv_line(&self, timeout: Duration) -> Result<String, String> {
        self.lines
            .recv_timeout(timeout)
            .map_err(|_| format!("no answer within {timeout:?}"))
    }

    /// Reads lines (each handed to `seen`) until the message answering `req_id`
    /// that is not an event; returns it and the events for `req_id` before it.
    pub fn answer(
        &self,
        req_id: &str,
        timeout: Duration,
        mut seen: impl FnMut(&str),
    ) -> Result<(Value, Vec<Value>), String> {
        let mut events = Vec::new();
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no answer to `{req_id}` within {timeout:?}"));
            }
            let line = self.recv_line(left)?;
            seen(&line);
            let msg: Value = serde_json::from_str(&line).map_err(|e| format!("not JSON: {e}"))?;
            if msg.get("req_id").and_then(Value::as_str) != Some(req_id) {
                continue;
            }
            let kind = msg.get("type").and_then(Value::as_str).unwrap_or_default();
            if kind.ends_with("event") {
                events.push(msg);
            } else {
                return Ok((msg, events));
            }
        }
    }

    /// Waits up to `within` for the process to exit; its status, if it did.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
