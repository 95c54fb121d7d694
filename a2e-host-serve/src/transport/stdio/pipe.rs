//! Room in the output pipe for a run of lines written at once.

use std::os::fd::{AsFd, OwnedFd};

/// The most the host grows its output pipe to, on demand: 1 MiB, Linux's
/// default `pipe-max-size` (the ceiling for a user without
/// `CAP_SYS_RESOURCE`).
pub const MAX_PIPE_BYTES: usize = 1024 * 1024;

/// Grows the output pipe, on demand, to hold a run of lines at once.
///
/// A streaming chain's events leave in runs (a 1000-node chain's 2,000
/// lines are ~400 KB, more than the [`super::PIPE_BYTES`] the pipe starts
/// with): a run larger than the pipe is written in pieces, the writer
/// waiting for the agent to read each, and each wait costs a switch to the
/// agent and a wake-up back. Grown once, such a run goes in with one write.
/// Only a host that writes such runs grows its pipe: a pipe's size counts
/// against its user's `pipe-user-pages-soft` (64 MiB by default; past it,
/// the user's new pipes get a single page), and a grown host holds 1.25 MiB
/// of it with its input pipe. The pipe is not shrunk again.
#[derive(Debug)]
pub(super) struct PipeRoom {
    /// The output pipe (a duplicate of its descriptor).
    fd: OwnedFd,
    /// Its size as last read; at [`MAX_PIPE_BYTES`] (or when growing was
    /// refused) it is not grown any more.
    size: usize,
}

impl PipeRoom {
    /// Room in the pipe `fd` writes to.
    pub(super) fn new(fd: OwnedFd) -> Self {
        let size = pipe_size(&fd).unwrap_or(MAX_PIPE_BYTES);
        Self { fd, size }
    }

    /// Grows the pipe to hold `bytes` at once (to the next power of two,
    /// at most [`MAX_PIPE_BYTES`]) unless it already does. A refusal (the
    /// user's pipe pages are spent, a lower `pipe-max-size`) leaves the
    /// pipe as it is and stops further attempts.
    pub(super) fn make_room(&mut self, bytes: usize) {
        if bytes <= self.size || self.size >= MAX_PIPE_BYTES {
            return;
        }
        let want = bytes.next_power_of_two().min(MAX_PIPE_BYTES);
        self.size = match grow(&self.fd, want) {
            Ok(size) => size,
            Err(e) => {
                tracing::debug!("output pipe kept at {} bytes ({e})", self.size);
                MAX_PIPE_BYTES
            }
        };
    }

    /// The pipe's size as last read.
    #[cfg(test)]
    pub(super) fn size(&self) -> usize {
        self.size
    }
}

#[cfg(target_os = "linux")]
fn pipe_size(fd: &impl AsFd) -> Option<usize> {
    use nix::fcntl::{FcntlArg, fcntl};
    fcntl(fd, FcntlArg::F_GETPIPE_SZ)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
}

#[cfg(not(target_os = "linux"))]
fn pipe_size(_: &impl AsFd) -> Option<usize> {
    None
}

/// Sets the size of the pipe `fd` is an end of to `bytes` (the kernel
/// rounds up to a power of two of pages); the size it now has.
#[cfg(target_os = "linux")]
pub(super) fn grow(fd: &impl AsFd, bytes: usize) -> nix::Result<usize> {
    use nix::fcntl::{FcntlArg, fcntl};
    let want = i32::try_from(bytes).unwrap_or(i32::MAX);
    let got = fcntl(fd, FcntlArg::F_SETPIPE_SZ(want))?;
    Ok(usize::try_from(got).unwrap_or(bytes))
}

/// Pipe sizes are Linux's: refused elsewhere.
#[cfg(not(target_os = "linux"))]
pub(super) fn grow(_: &impl AsFd, _: usize) -> nix::Result<usize> {
    Err(nix::Error::ENOTSUP)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::os::fd::OwnedFd;

    use nix::fcntl::{FcntlArg, fcntl};

    use super::{MAX_PIPE_BYTES, PipeRoom};

    fn size_of(fd: &impl std::os::fd::AsFd) -> usize {
        usize::try_from(fcntl(fd, FcntlArg::F_GETPIPE_SZ).unwrap()).unwrap()
    }

    #[test]
    fn the_pipe_grows_to_hold_a_run_up_to_its_ceiling() {
        let ceiling: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if ceiling < MAX_PIPE_BYTES {
            eprintln!("SKIPPED: pipe-max-size is {ceiling}, below {MAX_PIPE_BYTES}");
            return;
        }
        let (_reader, writer) = std::io::pipe().unwrap();
        let start = size_of(&writer);
        let mut room = PipeRoom::new(OwnedFd::from(writer.try_clone().unwrap()));
        assert_eq!(room.size(), start);
        // A run that fits changes nothing.
        room.make_room(start);
        assert_eq!(size_of(&writer), start);
        // A larger one: the next power of two.
        room.make_room(300 * 1024);
        assert_eq!(size_of(&writer), 512 * 1024);
        assert_eq!(room.size(), 512 * 1024);
        // Past the ceiling: the ceiling, and no further attempts.
        room.make_room(5 * MAX_PIPE_BYTES);
        assert_eq!(size_of(&writer), MAX_PIPE_BYTES);
        room.make_room(usize::MAX);
        assert_eq!(room.size(), MAX_PIPE_BYTES);
    }

    #[test]
    fn a_refused_growth_leaves_the_pipe_and_stops_trying() {
        // Not a pipe: F_SETPIPE_SZ is refused.
        let file = tempfile::tempfile().unwrap();
        let mut room = PipeRoom::new(OwnedFd::from(file));
        assert_eq!(room.size(), MAX_PIPE_BYTES, "not a pipe: never grown");
        room.size = 4096;
        room.make_room(1 << 16);
        assert_eq!(room.size(), MAX_PIPE_BYTES);
    }
}
