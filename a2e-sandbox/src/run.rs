//! Supervision of a spawned sandboxed child: stdin written, stdout and stderr
//! read with bounds, a timeout and a cancellation token that kill the whole
//! process group, and what is left of the group killed once the leader exits.

use std::ffi::OsStr;
use std::process::ExitStatus;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::error::SandboxError;
use crate::outcome::{Ending, Termination, classify};
use crate::policy::Policy;
use crate::sandbox::{Applied, Sandbox};

/// How long, once the group is killed or the leader has exited, the output
/// pipes are given to reach end of file.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Read size for the output pipes.
const CHUNK: usize = 16 * 1024;

/// Limits and inputs of one supervised run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Wall-clock limit (`None`: none); the group is killed when it runs out.
    pub timeout: Option<Duration>,
    /// Kills the group when cancelled.
    pub cancel: CancellationToken,
    /// Written to the child's stdin, which is then closed (`None`: stdin is null).
    pub stdin: Option<Vec<u8>>,
    /// Bytes of stdout kept (the head; the rest is read and dropped).
    pub stdout_max_bytes: usize,
    /// Bytes of stderr kept (the tail).
    pub stderr_max_bytes: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            timeout: None,
            cancel: CancellationToken::new(),
            stdin: None,
            stdout_max_bytes: 1 << 20,
            stderr_max_bytes: 64 * 1024,
        }
    }
}

/// The last bytes of a stream, and how much passed in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// The kept bytes (the end of the stream).
    pub bytes: Vec<u8>,
    /// Bytes the stream carried in all.
    pub total: u64,
    cap: usize,
}

impl Tail {
    /// An empty tail keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    /// Appends `data`, dropping the oldest bytes beyond the cap.
    pub fn push(&mut self, data: &[u8]) {
        self.total = self.total.saturating_add(data.len() as u64);
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > self.cap {
            let cut = self.bytes.len() - self.cap;
            self.bytes.drain(..cut);
        }
    }

    /// Whether bytes were dropped.
    pub fn truncated(&self) -> bool {
        self.total > self.bytes.len() as u64
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// What a supervised run came to.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// How it ended.
    pub termination: Termination,
    /// The wrapper's exit status (`None` if it could not be collected).
    pub status: Option<ExitStatus>,
    /// The head of stdout (at most `stdout_max_bytes`).
    pub stdout: Vec<u8>,
    /// Whether stdout went past `stdout_max_bytes`.
    pub stdout_truncated: bool,
    /// The tail of stderr.
    pub stderr: Tail,
    /// The layers the run had.
    pub applied: Applied,
}

/// Receives stdout as it arrives. An error stops the run: the group is killed.
pub(crate) trait StdoutSink: Send {
    /// Takes a chunk.
    fn feed(&mut self, chunk: &[u8]) -> Result<(), String>;
    /// The end of the stream.
    fn finish(&mut self) -> Result<(), String>;
}

/// What [`drive`] saw.
#[derive(Debug)]
pub(crate) struct Driven {
    pub ending: Ending,
    pub status: Option<ExitStatus>,
    pub stderr: Tail,
    /// Why the sink stopped the run, if it did.
    pub stopped: Option<String>,
}

/// SIGKILL to group `pgid` (never group 0 or 1); gone already is fine.
pub(crate) fn kill_group(pgid: u32) {
    let Some(raw) = i32::try_from(pgid).ok().filter(|p| *p > 1) else {
        return;
    };
    match killpg(Pid::from_raw(raw), Signal::SIGKILL) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pgid, error = %e, "cannot kill a sandboxed process group"),
    }
}

/// Kills the group when dropped (an aborted run leaves nothing behind).
struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

async fn read_chunks<R: AsyncRead + Unpin>(mut reader: R, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; CHUNK];
    let mut open = true;
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if open
                    && tx
                        .send(buf.get(..n).unwrap_or_default().to_vec())
                        .await
                        .is_err()
                {
                    // Nobody listens any more: keep the pipe drained.
                    open = false;
                }
            }
        }
    }
}

async fn read_tail<R: AsyncRead + Unpin>(mut reader: R, cap: usize) -> Tail {
    let mut tail = Tail::new(cap);
    let mut buf = vec![0u8; CHUNK];
    while let Ok(n) = reader.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tail.push(buf.get(..n).unwrap_or_default());
    }
    tail
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Drives a spawned child (stdout and stderr piped, stdin piped when
/// `opts.stdin` is set) to its end.
pub(crate) async fn drive(
    mut child: Child,
    opts: &RunOptions,
    sink: &mut (dyn StdoutSink + Send),
) -> Result<Driven, SandboxError> {
    let pgid = child
        .id()
        .ok_or_else(|| SandboxError::Io(std::io::Error::other("the child has no pid")))?;
    let guard = GroupGuard(pgid);

    let _writer = match (child.stdin.take(), opts.stdin.clone()) {
        (Some(mut stdin), Some(data)) => Some(AbortOnDropHandle::new(tokio::spawn(async move {
            // A child that does not read its input is not an error here.
            let _ = stdin.write_all(&data).await;
            let _ = stdin.shutdown().await;
        }))),
        _ => None,
    };
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(16);
    let _stdout_task = child
        .stdout
        .take()
        .map(|out| AbortOnDropHandle::new(tokio::spawn(read_chunks(out, tx))));
    let mut stderr_task = child
        .stderr
        .take()
        .map(|err| AbortOnDropHandle::new(tokio::spawn(read_tail(err, opts.stderr_max_bytes))));

    let deadline = opts.timeout.map(|t| Instant::now() + t);
    let mut ending: Option<Ending> = None;
    let mut status: Option<ExitStatus> = None;
    let mut stdout_done = false;
    let mut drain_until: Option<Instant> = None;
    let mut stopped: Option<String> = None;
    let kill = |why: Option<Ending>, ending: &mut Option<Ending>, drain: &mut Option<Instant>| {
        kill_group(pgid);
        if ending.is_none() {
            *ending = why;
        }
        if drain.is_none() {
            *drain = Some(Instant::now() + DRAIN_GRACE);
        }
    };

    while !(stdout_done && status.is_some()) {
        tokio::select! {
            biased;
            _ = opts.cancel.cancelled(), if ending.is_none() && status.is_none() => {
                kill(Some(Ending::Cancelled), &mut ending, &mut drain_until);
            }
            _ = sleep_until_opt(deadline), if ending.is_none() && status.is_none() && deadline.is_some() => {
                kill(Some(Ending::TimedOut), &mut ending, &mut drain_until);
            }
            waited = child.wait(), if status.is_none() => {
                status = Some(waited.map_err(SandboxError::Io)?);
                // What is left of the group goes with its leader.
                kill(None, &mut ending, &mut drain_until);
            }
            chunk = rx.recv(), if !stdout_done => match chunk {
                Some(chunk) => {
                    if stopped.is_none()
                        && let Err(why) = sink.feed(&chunk)
                    {
                        stopped = Some(why);
                        kill(None, &mut ending, &mut drain_until);
                    }
                }
                None => {
                    stdout_done = true;
                    if stopped.is_none()
                        && let Err(why) = sink.finish()
                    {
                        stopped = Some(why);
                        kill(None, &mut ending, &mut drain_until);
                    }
                }
            },
            _ = sleep_until_opt(drain_until), if drain_until.is_some() => {
                tracing::warn!(pgid, "sandboxed output still open after the group was killed");
                break;
            }
        }
    }
    let stderr = match stderr_task.take() {
        Some(task) => {
            let until = drain_until.unwrap_or_else(|| Instant::now() + DRAIN_GRACE);
            tokio::time::timeout_at(until, task)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default()
        }
        None => Tail::default(),
    };
    drop(guard);
    Ok(Driven {
        ending: ending.unwrap_or(Ending::Exited),
        status,
        stderr,
        stopped,
    })
}

/// Keeps the head of stdout.
struct HeadSink {
    bytes: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl StdoutSink for HeadSink {
    fn feed(&mut self, chunk: &[u8]) -> Result<(), String> {
        let room = self.cap.saturating_sub(self.bytes.len());
        if chunk.len() > room {
            self.truncated = true;
        }
        self.bytes
            .extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

impl Sandbox {
    /// Spawns `program` under `policy` (the command of [`Sandbox::command`],
    /// with stdin piped when `stdin_piped`).
    pub fn spawn(
        &self,
        policy: &Policy,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
        stdin_piped: bool,
    ) -> Result<Child, SandboxError> {
        let mut cmd = self.command(policy, program, args)?;
        if stdin_piped {
            cmd.stdin(std::process::Stdio::piped());
        }
        cmd.spawn().map_err(SandboxError::Spawn)
    }

    /// Runs `program` under `policy` to its end and collects its output.
    pub async fn run(
        &self,
        policy: &Policy,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
        opts: &RunOptions,
    ) -> Result<RunReport, SandboxError> {
        let child = self.spawn(policy, program, args, opts.stdin.is_some())?;
        self.supervise(policy, child, opts).await
    }

    /// Drives a child spawned with [`Sandbox::spawn`] (or [`Sandbox::command`])
    /// for `policy` to its end: writes `opts.stdin`, keeps the head of stdout
    /// and the tail of stderr, kills the whole group on timeout or
    /// cancellation, and kills what is left of the group once the leader exits.
    pub async fn supervise(
        &self,
        policy: &Policy,
        child: Child,
        opts: &RunOptions,
    ) -> Result<RunReport, SandboxError> {
        let applied = self.applied(policy);
        let mut sink = HeadSink {
            bytes: Vec::new(),
            cap: opts.stdout_max_bytes,
            truncated: false,
        };
        let driven = drive(child, opts, &mut sink).await?;
        Ok(RunReport {
            termination: classify(
                driven.status,
                driven.ending,
                &driven.stderr.bytes,
                &policy.limits,
            ),
            status: driven.status,
            stdout: sink.bytes,
            stdout_truncated: sink.truncated,
            stderr: driven.stderr,
            applied,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end() {
        let mut t = Tail::new(4);
        t.push(b"ab");
        assert!(!t.truncated());
        t.push(b"cdef");
        assert_eq!(t.bytes, b"cdef");
        assert_eq!(t.total, 6);
        assert!(t.truncated());
        assert_eq!(t.text(), "cdef");
    }

    #[test]
    fn head_keeps_the_start() {
        let mut h = HeadSink {
            bytes: Vec::new(),
            cap: 5,
            truncated: false,
        };
        h.feed(b"abc").unwrap();
        h.feed(b"defg").unwrap();
        assert_eq!(h.bytes, b"abcde");
        assert!(h.truncated);
    }
}
