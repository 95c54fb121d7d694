//! NDJSON over a child's stdin and stdout (the child runs in its own process
//! group, killed whole when the link goes), or over this process's own.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::{Ends, Incoming, Link, MAX_MESSAGE_BYTES, deliver, text_of};

/// A child process in a process group of its own; the group is killed when
/// this is dropped.
#[derive(Debug)]
pub struct Child {
    child: tokio::process::Child,
    pgid: Option<i32>,
    exited: bool,
}

impl Child {
    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits up to `within` for it to exit; whether it did.
    pub async fn wait(&mut self, within: Duration) -> bool {
        if self.exited {
            return true;
        }
        let done = matches!(
            tokio::time::timeout(within, self.child.wait()).await,
            Ok(Ok(_))
        );
        self.exited = done;
        done
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            // The whole group: the host and whatever it started.
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        let _ = self.child.start_kill();
    }
}

/// How a child's standard error is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stderr {
    /// Discarded.
    #[default]
    Discard,
    /// Passed through to the suite's own.
    Inherit,
}

/// Starts `command` (program and arguments) with `env` added, in a process
/// group of its own, and links to its stdin and stdout.
pub fn spawn(command: &[String], env: &[(String, String)], stderr: Stderr) -> Result<Link, String> {
    start(command, env, stderr, true)
}

/// [`spawn`] in this process's own group (a proxy whose group is killed
/// kills its host with it).
pub fn spawn_in_group(command: &[String], stderr: Stderr) -> Result<Link, String> {
    start(command, &[], stderr, false)
}

fn start(
    command: &[String],
    env: &[(String, String)],
    stderr: Stderr,
    own_group: bool,
) -> Result<Link, String> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| "an empty command".to_owned())?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(match stderr {
            Stderr::Discard => Stdio::null(),
            Stderr::Inherit => Stdio::inherit(),
        })
        .kill_on_drop(true);
    if own_group {
        cmd.process_group(0);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .filter(|_| own_group);
    let stdin = child.stdin.take().ok_or("the child's stdin is not piped")?;
    let stdout = child
        .stdout
        .take()
        .ok_or("the child's stdout is not piped")?;
    let mut link = over(stdout, stdin);
    link.own_child(Child {
        child,
        pgid,
        exited: false,
    });
    Ok(link)
}

/// A link over this process's own stdin and stdout (a host the suite plays).
pub fn own() -> Link {
    over(tokio::io::stdin(), tokio::io::stdout())
}

/// A link over any pair of byte streams.
pub fn over<R, W>(reader: R, writer: W) -> Link
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (mut link, Ends { out, inbox }) = Link::pair();
    link.hold(tokio::spawn(read_lines(reader, inbox)));
    link.hold(tokio::spawn(write_lines(writer, out)));
    link
}

/// Reads lines, each bounded by [`MAX_MESSAGE_BYTES`], until the end.
async fn read_lines<R: AsyncRead + Unpin>(reader: R, inbox: mpsc::Sender<Incoming>) {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let mut limited = (&mut reader).take(MAX_MESSAGE_BYTES as u64 + 1);
        let got = match limited.read_until(b'\n', &mut buf).await {
            Ok(n) => n,
            Err(e) => {
                deliver(&inbox, Incoming::Closed(format!("reading failed: {e}"))).await;
                return;
            }
        };
        if got == 0 {
            deliver(&inbox, Incoming::Closed("end of output".into())).await;
            return;
        }
        let item = if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            text_of(std::mem::take(&mut buf))
        } else if buf.len() > MAX_MESSAGE_BYTES {
            if skip_line(&mut reader).await.is_err() {
                return;
            }
            Incoming::Garbage(format!("a line over {MAX_MESSAGE_BYTES} bytes"))
        } else {
            Incoming::Garbage(format!(
                "a last line without its newline: {}",
                String::from_utf8_lossy(&buf)
            ))
        };
        if !deliver(&inbox, item).await {
            return;
        }
    }
}

/// Reads and drops the rest of an overlong line.
async fn skip_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<()> {
    let mut rest = Vec::new();
    loop {
        rest.clear();
        let mut chunk = (&mut *reader).take(64 * 1024);
        if chunk.read_until(b'\n', &mut rest).await? == 0 || rest.last() == Some(&b'\n') {
            return Ok(());
        }
    }
}

/// Writes each message as a line; closes the stream when the link's side closes.
async fn write_lines<W: AsyncWrite + Unpin>(mut writer: W, mut out: mpsc::Receiver<String>) {
    while let Some(mut text) = out.recv().await {
        text.push('\n');
        if writer.write_all(text.as_bytes()).await.is_err() || writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_come_through_and_the_end_is_reported() {
        let (theirs, mut ours) = tokio::io::duplex(1024);
        let mut link = over(theirs, tokio::io::sink());
        ours.write_all(b"{\"a\":1}\n\n\xff\n{\"b\"").await.unwrap();
        drop(ours);
        let t = Duration::from_secs(2);
        assert_eq!(link.recv(t).await, Some(Incoming::Text("{\"a\":1}".into())));
        assert!(matches!(link.recv(t).await, Some(Incoming::Garbage(_))));
        assert!(matches!(link.recv(t).await, Some(Incoming::Garbage(g)) if g.contains("newline")));
        assert!(matches!(link.recv(t).await, Some(Incoming::Closed(_))));
        assert!(matches!(link.recv(t).await, Some(Incoming::Closed(_))));
    }

    #[tokio::test]
    async fn a_child_is_killed_with_its_group() {
        let mut link = spawn(&["sleep".into(), "30".into()], &[], Stderr::Discard).unwrap();
        let pid = link.pid().unwrap();
        assert_eq!(
            link.wait_exit(Duration::from_millis(100)).await,
            Some(false)
        );
        drop(link);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        assert!(!alive, "the child outlived its link");
    }
}
