//! A host spawned as a child process, NDJSON over its stdin/stdout.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use a2e_proto::Message;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::Guard;
use crate::conn::Shared;
use crate::error::{ClientError, ClientResult};

/// Spawns `cmd` with piped stdin/stdout (stderr is inherited) and connects to it.
/// The child is killed when the guard drops.
pub(crate) fn spawn(
    mut cmd: Command,
    shared: &Arc<Shared>,
    out: mpsc::Receiver<Message>,
    max: usize,
) -> ClientResult<Guard> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| ClientError::transport("cannot start the host", e))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ClientError::transport_msg(
            "the host's stdin/stdout are not piped",
        ));
    };
    let mut guard = super::io::spawn(stdout, stdin, shared, out, max);
    guard.child = Some(child);
    Ok(guard)
}

/// Ends a child host the way the reference does: its stdin is already closed;
/// wait 3 s, SIGTERM, wait 2 s, SIGKILL.
pub(crate) async fn stop_child(mut child: Child) {
    if tokio::time::timeout(Duration::from_secs(3), child.wait())
        .await
        .is_ok()
    {
        return;
    }
    // Off Unix there is no SIGTERM: the child is killed outright below.
    #[cfg(unix)]
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    if tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .is_ok()
    {
        return;
    }
    let _ = child.kill().await;
}
