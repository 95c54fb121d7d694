//! Driving a spawned group to its end under a timeout and a cancellation token,
//! killing what is left of the group once the leader has exited.

use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::*;

/// How long, once a group has been killed, its output pipes are given to reach end of file.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How a supervised run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ending {
    /// The leader exited by itself (or by a signal someone else sent).
    Exited,
    /// The timeout ran out; the group was killed.
    TimedOut,
    /// The token was cancelled; the group was killed.
    Cancelled,
}

/// Limits of a supervised run.
#[derive(Debug, Clone, Default)]
pub struct RunLimits {
    /// Wall-clock limit (`None`: none).
    pub timeout: Option<Duration>,
    /// Kills the group when cancelled.
    pub cancel: CancellationToken,
    /// Bytes passed on per stream (`None`: no limit).
    pub output_max_bytes: Option<usize>,
    /// Whether the output is kept in [`RunOutcome`].
    pub keep_output: bool,
}

/// What a supervised run came to.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Why it ended.
    pub ending: Ending,
    /// The leader's exit status (`None` if it could not be collected in time).
    pub status: Option<ExitStatus>,
    /// Standard output.
    pub stdout: Captured,
    /// Standard error.
    pub stderr: Captured,
}

impl RunOutcome {
    /// The exit code, when the leader exited normally.
    pub fn exit_code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// The signal that ended the leader, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.status.and_then(|s| s.signal())
    }
}

/// Kills the group for `why` and starts the drain grace period.
fn stop(
    guard: &GroupGuard,
    why: Ending,
    ending: &mut Option<Ending>,
    drain_until: &mut Option<Instant>,
) {
    guard.kill();
    *ending = Some(why);
    *drain_until = Some(Instant::now() + DRAIN_GRACE);
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Drives `child` to its end. Output lines within the per-stream cap are
/// handed to `on_line` one at a time, in the order they were read. When the
/// timeout runs out or `cancel` fires, the whole group is killed; once the
/// leader has exited, what is left of its group is killed too, and the pipes
/// are drained. The child's stdout and stderr must be piped and not taken.
pub async fn supervise<F, Fut>(
    mut child: GroupChild,
    limits: RunLimits,
    mut on_line: F,
) -> io::Result<RunOutcome>
where
    F: FnMut(Line) -> Fut,
    Fut: Future<Output = ()>,
{
    let (tx, mut rx) = mpsc::channel::<Line>(64);
    let mut readers = Vec::new();
    if let Some(out) = child.child.stdout.take() {
        let tx = tx.clone();
        readers.push(AbortOnDropHandle::new(tokio::spawn(async move {
            let _ = forward_lines(out, StreamKind::Stdout, tx).await;
        })));
    }
    if let Some(err) = child.child.stderr.take() {
        let tx = tx.clone();
        readers.push(AbortOnDropHandle::new(tokio::spawn(async move {
            let _ = forward_lines(err, StreamKind::Stderr, tx).await;
        })));
    }
    drop(tx);

    let mut stdout = Captured::new(limits.output_max_bytes, limits.keep_output);
    let mut stderr = Captured::new(limits.output_max_bytes, limits.keep_output);
    // Checked: a timeout past what the clock can represent is no deadline.
    let deadline = limits.timeout.and_then(|t| Instant::now().checked_add(t));
    let mut status: Option<ExitStatus> = None;
    let mut ending: Option<Ending> = None;
    let mut readers_done = false;
    let mut drain_until: Option<Instant> = None;

    while !(readers_done && status.is_some()) {
        tokio::select! {
            biased;
            _ = limits.cancel.cancelled(), if ending.is_none() => {
                stop(&child.guard, Ending::Cancelled, &mut ending, &mut drain_until);
            }
            _ = sleep_until_opt(deadline), if ending.is_none() && deadline.is_some() => {
                stop(&child.guard, Ending::TimedOut, &mut ending, &mut drain_until);
            }
            waited = child.child.wait(), if status.is_none() => {
                status = Some(waited?);
                // Leftovers of the group (background children) go with their leader.
                child.guard.kill();
                if drain_until.is_none() {
                    drain_until = Some(Instant::now() + DRAIN_GRACE);
                }
                if ending.is_none() {
                    ending = Some(Ending::Exited);
                }
            }
            _ = sleep_until_opt(drain_until), if drain_until.is_some() => {
                tracing::warn!(pgid = child.pid(), "output still pending after the group was killed");
                break;
            }
            line = rx.recv(), if !readers_done => match line {
                Some(line) => {
                    // Output still flows: the drain grace counts from the last line.
                    if let Some(until) = drain_until.as_mut() {
                        *until = Instant::now() + DRAIN_GRACE;
                    }
                    let budget = match line.stream {
                        StreamKind::Stdout => &mut stdout,
                        StreamKind::Stderr => &mut stderr,
                    };
                    if let Some(line) = budget.admit(line) {
                        // A slow consumer must not hold off the timeout or the cancellation.
                        let delivery = on_line(line);
                        tokio::pin!(delivery);
                        let delivered = loop {
                            tokio::select! {
                                biased;
                                () = &mut delivery => break true,
                                _ = limits.cancel.cancelled(), if ending.is_none() => {
                                    stop(&child.guard, Ending::Cancelled, &mut ending, &mut drain_until);
                                }
                                _ = sleep_until_opt(deadline), if ending.is_none() && deadline.is_some() => {
                                    stop(&child.guard, Ending::TimedOut, &mut ending, &mut drain_until);
                                }
                                // Killed, and the consumer takes nothing: give the line up.
                                _ = sleep_until_opt(drain_until), if ending.is_some_and(|e| e != Ending::Exited) => break false,
                            }
                        };
                        if let (true, Some(until)) = (delivered, drain_until.as_mut()) {
                            *until = Instant::now() + DRAIN_GRACE;
                        }
                    }
                }
                None => readers_done = true,
            },
        }
    }
    if status.is_some() {
        child.guard.disarm();
    }
    Ok(RunOutcome {
        ending: ending.unwrap_or(Ending::Exited),
        status,
        stdout,
        stderr,
    })
}
