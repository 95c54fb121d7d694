//! Process groups, shared by the `run_command` built-in and the proc capability.
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

use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::error::{HostError, HostResult};

/// Longest line passed on at once; a longer line is split into pieces of this size.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// How long, once a group has been killed, its output pipes are given to reach end of file.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Environment variable prefixes a caller may not set: they would let a
/// workspace file be loaded into an allowed program (`LD_PRELOAD`, …).
const DENIED_ENV_PREFIXES: &[&str] = &["LD_", "DYLD_"];

/// Checks `argv0` against the allow-list. Only an exact match counts: an entry
/// `echo` allows `echo` (looked up in the host's `PATH`), an entry `/bin/echo`
/// allows `/bin/echo`; `./echo` or `bin/echo` are allowed by neither.
pub fn check_allowed(allow: &[String], argv0: &str) -> HostResult<()> {
    if !argv0.is_empty() && allow.iter().any(|a| a == argv0) {
        Ok(())
    } else {
        Err(HostError::Denied(format!(
            "command `{argv0}` is not in the allow-list"
        )))
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The program to execute for `argv0`: a name without `/` is looked up in the
/// host's own `PATH` (absolute entries only), never in a `PATH` the caller
/// passes in the command's environment; anything with a `/` is used as given.
/// `None` when a name is found nowhere.
pub fn resolve_program(argv0: &str) -> Option<PathBuf> {
    if argv0.contains('/') {
        return Some(PathBuf::from(argv0));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(argv0))
        .find(|candidate| is_executable(candidate))
}

/// Environment variables from a JSON object. Strings are taken as they are,
/// numbers and booleans as their JSON text; anything else, an empty name or a
/// name with `=` or NUL is a schema error. Names starting with `LD_` or
/// `DYLD_` are denied.
pub fn env_pairs(env: &Map<String, Value>) -> HostResult<Vec<(String, String)>> {
    let mut pairs = Vec::with_capacity(env.len());
    let mut violations = Vec::new();
    for (name, value) in env {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            violations.push(format!("env.{name}: not a valid variable name"));
            continue;
        }
        if DENIED_ENV_PREFIXES.iter().any(|p| name.starts_with(p)) {
            return Err(HostError::Denied(format!(
                "environment variable `{name}` may not be set"
            )));
        }
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                violations.push(format!("env.{name}: expected a string, number or boolean"));
                continue;
            }
        };
        if text.contains('\0') {
            violations.push(format!("env.{name}: value contains NUL"));
            continue;
        }
        pairs.push((name.clone(), text));
    }
    if violations.is_empty() {
        Ok(pairs)
    } else {
        Err(HostError::schema(violations))
    }
}

/// A command for `argv` (non-empty) with `program` resolved, working directory,
/// extra environment, stdout and stderr piped, and stdin piped or null.
pub fn command(
    program: &Path,
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
    stdin_piped: bool,
) -> Command {
    let mut cmd = Command::new(program);
    if let Some((argv0, rest)) = argv.split_first() {
        cmd.arg0(argv0);
        cmd.args(rest);
    }
    cmd.current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(if stdin_piped {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Sends `signal` to every process of group `pgid`. `Ok(false)`: no such group
/// (it is gone already). Groups 0 and 1 are refused: signalling them would hit
/// the host's own group or every process.
pub fn kill_group(pgid: u32, signal: Signal) -> io::Result<bool> {
    let raw = i32::try_from(pgid)
        .ok()
        .filter(|raw| *raw > 1)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("refusing to signal process group {pgid}"),
            )
        })?;
    match killpg(Pid::from_raw(raw), signal) {
        Ok(()) => Ok(true),
        Err(Errno::ESRCH) => Ok(false),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Kills a process group (SIGKILL) when dropped, unless disarmed.
#[derive(Debug)]
pub struct GroupGuard {
    pgid: u32,
    armed: bool,
}

impl GroupGuard {
    /// A guard for group `pgid`.
    pub fn new(pgid: u32) -> Self {
        Self { pgid, armed: true }
    }

    /// The group id (the leader's pid).
    pub fn pgid(&self) -> u32 {
        self.pgid
    }

    /// Kills the group now (SIGKILL); the guard stays armed.
    pub fn kill(&self) {
        if let Err(e) = kill_group(self.pgid, Signal::SIGKILL) {
            tracing::warn!(pgid = self.pgid, error = %e, "cannot kill process group");
        }
    }

    /// Sends `signal` to the group.
    pub fn signal(&self, signal: Signal) -> io::Result<bool> {
        kill_group(self.pgid, signal)
    }

    /// Leaves the group alone on drop (once it is known to be gone).
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = kill_group(self.pgid, Signal::SIGKILL);
        }
    }
}

/// A child that leads its own process group, with the guard that kills the group.
#[derive(Debug)]
pub struct GroupChild {
    /// The child (the group leader).
    pub child: Child,
    /// Kills the group when dropped.
    pub guard: GroupGuard,
}

impl GroupChild {
    /// The leader's pid, which is also the group id.
    pub fn pid(&self) -> u32 {
        self.guard.pgid()
    }
}

/// Spawns `cmd` as the leader of a new process group (`process_group(0)`).
pub fn spawn_group(cmd: &mut Command) -> io::Result<GroupChild> {
    cmd.process_group(0).kill_on_drop(true);
    let child = cmd.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the child's pid could not be read"))?;
    Ok(GroupChild {
        child,
        guard: GroupGuard::new(pid),
    })
}

/// Which output stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl StreamKind {
    /// `stdout` or `stderr`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }
}

/// One line of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Where it came from.
    pub stream: StreamKind,
    /// The text, without its line ending; invalid UTF-8 replaced by U+FFFD.
    pub text: String,
    /// Whether a newline ended it (false for a last unterminated line and for
    /// the leading pieces of a line split at [`MAX_LINE_BYTES`]).
    pub newline: bool,
}

/// Reads `reader` to its end and sends each line tagged with `stream` on `tx`.
/// Lines are split at [`MAX_LINE_BYTES`]. When the receiver is gone the rest is
/// read and dropped, so the writer never blocks on a full pipe.
pub async fn forward_lines<R: AsyncRead + Unpin>(
    reader: R,
    stream: StreamKind,
    tx: mpsc::Sender<Line>,
) -> io::Result<()> {
    let mut reader = BufReader::new(reader);
    let mut line: Vec<u8> = Vec::new();
    let mut open = true;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if !line.is_empty() && open {
                let _ = tx.send(make_line(stream, &line, false)).await;
            }
            return Ok(());
        }
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        let window = buf.get(..room.min(buf.len())).unwrap_or(buf);
        let (taken, complete) = match window.iter().position(|b| *b == b'\n') {
            Some(i) => {
                line.extend_from_slice(window.get(..i).unwrap_or_default());
                (i + 1, true)
            }
            None => {
                line.extend_from_slice(window);
                (window.len(), false)
            }
        };
        reader.consume(taken);
        if complete || line.len() >= MAX_LINE_BYTES {
            if open && tx.send(make_line(stream, &line, complete)).await.is_err() {
                open = false;
            }
            line.clear();
        }
    }
}

fn make_line(stream: StreamKind, bytes: &[u8], newline: bool) -> Line {
    let bytes = if newline {
        bytes.strip_suffix(b"\r").unwrap_or(bytes)
    } else {
        bytes
    };
    Line {
        stream,
        text: String::from_utf8_lossy(bytes).into_owned(),
        newline,
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub fn prefix_at_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// What one stream may pass on and what of it is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The kept text (lines joined as they came, each newline kept).
    pub text: String,
    /// Whether the stream went past its cap.
    pub truncated: bool,
    /// Bytes passed on so far.
    pub bytes: usize,
    cap: Option<usize>,
    keep: bool,
}

impl Captured {
    /// A budget of `cap` bytes (`None`: no limit), keeping the text when `keep`.
    pub fn new(cap: Option<usize>, keep: bool) -> Self {
        Self {
            cap,
            keep,
            ..Self::default()
        }
    }

    /// Takes in a line: the part of it within the cap, or `None` once the cap is reached.
    pub fn admit(&mut self, mut line: Line) -> Option<Line> {
        if self.truncated {
            return None;
        }
        let need = line.text.len() + usize::from(line.newline);
        if let Some(cap) = self.cap {
            let room = cap.saturating_sub(self.bytes);
            if need > room {
                self.truncated = true;
                let cut = prefix_at_boundary(&line.text, room).len();
                if cut == 0 {
                    return None;
                }
                line.text.truncate(cut);
                line.newline = false;
            }
        }
        self.bytes += line.text.len() + usize::from(line.newline);
        if self.keep {
            self.text.push_str(&line.text);
            if line.newline {
                self.text.push('\n');
            }
        }
        Some(line)
    }
}

/// How a supervised run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    let deadline = limits.timeout.map(|t| Instant::now() + t);
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

/// Whether a process with this pid exists (a zombie counts as gone).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if nix::sys::signal::kill(Pid::from_raw(raw), None).is_err() {
        return false;
    }
    // A zombie still answers signal 0; its /proc stat says `Z`.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_none_or(|state| state != "Z" && state != "X"),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sh -c script` spawned in a process group of its own.
    fn spawn_sh(script: &str) -> GroupChild {
        let sh = resolve_program("sh").unwrap();
        let argv = ["sh".to_owned(), "-c".to_owned(), script.to_owned()];
        let mut cmd = command(&sh, &argv, Path::new("/"), &[], false);
        spawn_group(&mut cmd).unwrap()
    }

    fn line(text: &str) -> Line {
        Line {
            stream: StreamKind::Stdout,
            text: text.into(),
            newline: true,
        }
    }

    #[test]
    fn allow_list_is_exact() {
        let allow = vec!["echo".to_owned(), "/bin/cat".to_owned()];
        assert!(check_allowed(&allow, "echo").is_ok());
        assert!(check_allowed(&allow, "/bin/cat").is_ok());
        for bad in ["/bin/echo", "./echo", "cat", "", "echo "] {
            let err = check_allowed(&allow, bad).unwrap_err();
            assert!(matches!(err, HostError::Denied(_)), "{bad}: {err:?}");
        }
    }

    #[test]
    fn env_conversion_and_refusals() {
        let env: Map<String, Value> = serde_json::from_str(r#"{"A":"x","N":3,"B":true}"#).unwrap();
        let pairs = env_pairs(&env).unwrap();
        assert_eq!(
            pairs,
            vec![
                ("A".to_owned(), "x".to_owned()),
                ("N".to_owned(), "3".to_owned()),
                ("B".to_owned(), "true".to_owned())
            ]
        );
        let env: Map<String, Value> = serde_json::from_str(r#"{"LD_PRELOAD":"x.so"}"#).unwrap();
        assert!(matches!(env_pairs(&env), Err(HostError::Denied(_))));
        let env: Map<String, Value> = serde_json::from_str(r#"{"A":[1],"B=C":"x"}"#).unwrap();
        match env_pairs(&env) {
            Err(HostError::Schema { violations, .. }) => assert_eq!(violations.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bare_names_resolve_in_the_host_path() {
        let sh = resolve_program("sh").unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{sh:?}");
        assert_eq!(resolve_program("./x").unwrap(), PathBuf::from("./x"));
        assert!(resolve_program("surely-no-such-program-a2e").is_none());
    }

    #[test]
    fn group_zero_and_one_are_never_signalled() {
        assert!(kill_group(0, Signal::SIGKILL).is_err());
        assert!(kill_group(1, Signal::SIGKILL).is_err());
    }

    #[test]
    fn capture_cuts_at_the_cap_on_a_char_boundary() {
        let mut c = Captured::new(Some(6), true);
        assert_eq!(c.admit(line("abc")).unwrap().text, "abc");
        let cut = c.admit(line("dé")).unwrap();
        assert_eq!(cut.text, "d");
        assert!(!cut.newline);
        assert!(c.truncated);
        assert!(c.admit(line("more")).is_none());
        assert_eq!(c.text, "abc\nd");
        assert_eq!(c.bytes, 5);
    }

    #[test]
    fn capture_without_cap_or_keep() {
        let mut c = Captured::new(None, false);
        for _ in 0..100 {
            assert!(c.admit(line("xxxxxxxxxx")).is_some());
        }
        assert!(!c.truncated);
        assert!(c.text.is_empty());
        assert_eq!(c.bytes, 1100);
    }

    #[tokio::test]
    async fn lines_are_split_stripped_and_lossy() {
        let mut data = b"one\r\ntwo\n\xffbad\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
        let (tx, mut rx) = mpsc::channel(16);
        forward_lines(&data[..], StreamKind::Stderr, tx)
            .await
            .unwrap();
        let mut got = Vec::new();
        while let Some(l) = rx.recv().await {
            got.push(l);
        }
        assert_eq!(got.len(), 5);
        assert_eq!(got[0].text, "one");
        assert_eq!(got[1].text, "two");
        assert_eq!(got[2].text, "\u{fffd}bad");
        assert_eq!(got[3].text.len(), MAX_LINE_BYTES);
        assert!(!got[3].newline);
        assert_eq!(got[4].text.len(), 10);
        assert!(got.iter().all(|l| l.stream == StreamKind::Stderr));
    }

    #[tokio::test]
    async fn supervise_collects_output_and_kills_leftovers() {
        let child = spawn_sh("echo out; echo err >&2; sleep 30 & echo $!");
        let mut seen = Vec::new();
        let outcome = supervise(
            child,
            RunLimits {
                timeout: Some(Duration::from_secs(20)),
                keep_output: true,
                ..RunLimits::default()
            },
            |l| {
                seen.push(l);
                async {}
            },
        )
        .await
        .unwrap();
        assert_eq!(outcome.ending, Ending::Exited);
        assert_eq!(outcome.exit_code(), Some(0));
        assert_eq!(outcome.stderr.text, "err\n");
        let mut lines = outcome.stdout.text.lines();
        assert_eq!(lines.next(), Some("out"));
        let bg: u32 = lines.next().unwrap().parse().unwrap();
        assert_eq!(seen.len(), 3);
        // The background sleep was in the group and is gone with it.
        let gone = async {
            while pid_alive(bg) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), gone)
            .await
            .expect("background child still alive");
    }

    #[tokio::test]
    async fn a_stuck_consumer_does_not_hold_off_the_timeout() {
        let child = spawn_sh("echo $$; sleep 30");
        let pid = child.pid();
        let limits = RunLimits {
            timeout: Some(Duration::from_secs(1)),
            ..RunLimits::default()
        };
        let outcome = tokio::time::timeout(
            Duration::from_secs(20),
            supervise(child, limits, |_| std::future::pending::<()>()),
        )
        .await
        .expect("supervise waited for a consumer that never takes a line")
        .unwrap();
        assert_eq!(outcome.ending, Ending::TimedOut);
        assert!(!pid_alive(pid));
    }

    #[tokio::test]
    async fn a_slow_consumer_after_exit_loses_no_line() {
        let child = spawn_sh("echo 1; echo 2; echo 3");
        let mut seen = Vec::new();
        let outcome = supervise(child, RunLimits::default(), |l| {
            seen.push(l.text);
            tokio::time::sleep(Duration::from_millis(1500))
        })
        .await
        .unwrap();
        assert_eq!(outcome.ending, Ending::Exited);
        assert_eq!(seen, vec!["1", "2", "3"]);
    }

    #[tokio::test]
    async fn dropping_the_guard_kills_the_group() {
        let sleep = resolve_program("sleep").unwrap();
        let argv = vec!["sleep".to_owned(), "30".to_owned()];
        let mut cmd = command(&sleep, &argv, Path::new("/"), &[], false);
        let child = spawn_group(&mut cmd).unwrap();
        let pid = child.pid();
        assert!(pid_alive(pid));
        drop(child);
        let gone = async {
            while pid_alive(pid) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), gone)
            .await
            .expect("process survived its guard");
    }
}
