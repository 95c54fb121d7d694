//! Process groups: spawning a command as a group leader, signalling the whole
//! group, and the guard that kills it when dropped.

use std::io;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

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

/// The live processes (zombies count as gone) that have `arg` among their
/// arguments, found through /proc: a command inside a PID namespace is visible
/// to the host only this way, its `$$` being a pid of the namespace.
pub fn pids_with_arg(arg: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
                && pid_alive(*pid)
        })
        .collect()
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
