//! How a sandboxed run ended, told apart from its exit status, who stopped
//! it, and the tail of its stderr.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use crate::exec::{SETUP_FAILED_EXIT, SETUP_FAILED_MARKER, SIGNAL_MARKER};
use crate::policy::Limits;

/// Who ended the run, as the supervisor saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The program ended by itself (or by a signal someone else sent).
    Exited,
    /// The timeout ran out; the group was killed.
    TimedOut,
    /// The run was cancelled; the group was killed.
    Cancelled,
}

/// Lower-cased phrases runtimes print when an allocation fails: Python's
/// `MemoryError`, the C library's `Cannot allocate memory` (ENOMEM), Rust's
/// `memory allocation of N bytes failed`, C++'s `std::bad_alloc`, and the
/// `out of memory` of awk, perl, Go, node and others.
pub const OOM_MARKERS: &[&str] = &[
    "memoryerror",
    "cannot allocate memory",
    "cannot allocate",
    "memory allocation of",
    "bad_alloc",
    "out of memory",
    "failed to allocate",
    "allocation failed",
];

/// How a sandboxed run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Termination {
    /// Exited by itself with this code (0: success).
    Exited(i32),
    /// Killed by this signal (a crash: `sandbox_crash`).
    Signaled(i32),
    /// The address-space limit was hit: the program failed after an allocation
    /// failure it reported on stderr (`out_of_memory`).
    OutOfMemory {
        /// The exit code, when it exited.
        code: Option<i32>,
        /// The signal, when one ended it (typically SIGABRT).
        signal: Option<i32>,
    },
    /// The CPU-seconds limit was hit (SIGXCPU, or the SIGKILL that follows it).
    CpuLimit,
    /// The timeout ran out; the whole group was killed.
    TimedOut,
    /// Cancelled; the whole group was killed.
    Cancelled,
    /// The wrapper could not set the sandbox up or start the program.
    SetupFailed(String),
}

impl Termination {
    /// The A2E error code for an unsuccessful end: `timeout`, `out_of_memory`,
    /// `sandbox_crash`, `runtime_error` (setup), `cancelled`, or `None` for
    /// an exit (successful or not: the caller decides what a code means).
    pub fn error_code(&self) -> Option<&'static str> {
        match self {
            Self::Exited(_) => None,
            Self::Signaled(_) => Some("sandbox_crash"),
            Self::OutOfMemory { .. } => Some("out_of_memory"),
            Self::CpuLimit | Self::TimedOut => Some("timeout"),
            Self::Cancelled => Some("cancelled"),
            Self::SetupFailed(_) => Some("runtime_error"),
        }
    }

    /// Whether the program exited with code 0.
    pub fn success(&self) -> bool {
        matches!(self, Self::Exited(0))
    }
}

/// The name of a signal (`SIGSEGV`), or its number.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_owned())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

impl std::fmt::Display for Termination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exited with code {code}"),
            Self::Signaled(sig) => write!(f, "killed by {}", signal_name(*sig)),
            Self::OutOfMemory { .. } => f.write_str("ran out of memory (address-space limit)"),
            Self::CpuLimit => f.write_str("exceeded its CPU-time limit"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Cancelled => f.write_str("was cancelled"),
            Self::SetupFailed(why) => write!(f, "could not be started: {why}"),
        }
    }
}

/// Whether `stderr` holds one of the [`OOM_MARKERS`].
pub fn mentions_allocation_failure(stderr: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stderr).to_lowercase();
    OOM_MARKERS.iter().any(|m| text.contains(m))
}

/// The wrapper's setup-failure message in `stderr`, if it wrote one.
pub fn setup_failure(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .rev()
        .find_map(|line| line.strip_prefix(SETUP_FAILED_MARKER))
        .map(str::to_owned)
}

/// The signal N of exit code 128 + N when the wrapper's [`SIGNAL_MARKER`]
/// line for N is in `stderr`.
fn marked_signal(code: Option<i32>, stderr: &[u8]) -> Option<i32> {
    let sig = code?.checked_sub(128).filter(|s| *s > 0)?;
    let want = format!("{SIGNAL_MARKER}{sig}");
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .any(|line| line == want)
        .then_some(sig)
}

/// Tells how a run ended, in this order:
/// 1. the supervisor's own timeout or cancellation;
/// 2. exit code 125 with the wrapper's marker line: setup failed (exit code
///    128 + N with the wrapper's [`SIGNAL_MARKER`] line counts as signal N);
/// 3. SIGXCPU (or SIGKILL once the CPU limit is set and used up, which the
///    wrapper reports as SIGXCPU): CPU limit;
/// 4. an address-space limit set, a failure (non-zero exit or any signal),
///    and an allocation-failure phrase ([`OOM_MARKERS`]) in the stderr tail:
///    out of memory;
/// 5. any other signal: a crash with that signal; else the exit code.
///
/// `status` is `None` when the exit status could not be collected (then the
/// run counts as killed by SIGKILL).
pub fn classify(
    status: Option<ExitStatus>,
    ending: Ending,
    stderr_tail: &[u8],
    limits: &Limits,
) -> Termination {
    match ending {
        Ending::TimedOut => return Termination::TimedOut,
        Ending::Cancelled => return Termination::Cancelled,
        Ending::Exited => {}
    }
    let (mut code, mut signal) = match status {
        Some(s) => (s.code(), s.signal()),
        None => (None, Some(nix::libc::SIGKILL)),
    };
    if let Some(sig) = marked_signal(code, stderr_tail) {
        (code, signal) = (None, Some(sig));
    }
    if code == Some(SETUP_FAILED_EXIT)
        && let Some(why) = setup_failure(stderr_tail)
    {
        return Termination::SetupFailed(why);
    }
    if signal == Some(nix::libc::SIGXCPU) && limits.cpu_seconds.is_some() {
        return Termination::CpuLimit;
    }
    let failed = signal.is_some() || code.is_some_and(|c| c != 0);
    if failed && limits.address_space_bytes.is_some() && mentions_allocation_failure(stderr_tail) {
        return Termination::OutOfMemory { code, signal };
    }
    match (code, signal) {
        (_, Some(sig)) => Termination::Signaled(sig),
        (Some(code), None) => Termination::Exited(code),
        (None, None) => Termination::Signaled(nix::libc::SIGKILL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(code << 8))
    }

    fn killed(sig: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(sig))
    }

    #[test]
    fn the_order_of_the_rules() {
        let mem = Limits {
            address_space_bytes: Some(1 << 20),
            cpu_seconds: Some(1),
            ..Limits::default()
        };
        let none = Limits::default();
        let oom = b"Traceback...\nMemoryError\n";
        assert_eq!(
            classify(exited(1), Ending::TimedOut, oom, &mem),
            Termination::TimedOut
        );
        assert_eq!(
            classify(exited(1), Ending::Cancelled, b"", &mem),
            Termination::Cancelled
        );
        assert_eq!(
            classify(exited(1), Ending::Exited, oom, &mem),
            Termination::OutOfMemory {
                code: Some(1),
                signal: None
            }
        );
        // Without a memory limit the same text is an ordinary failure.
        assert_eq!(
            classify(exited(1), Ending::Exited, oom, &none),
            Termination::Exited(1)
        );
        // A success never counts as out of memory.
        assert_eq!(
            classify(exited(0), Ending::Exited, oom, &mem),
            Termination::Exited(0)
        );
        assert_eq!(
            classify(
                killed(6),
                Ending::Exited,
                b"memory allocation of 8 bytes failed",
                &mem
            ),
            Termination::OutOfMemory {
                code: None,
                signal: Some(6)
            }
        );
        assert_eq!(
            classify(killed(11), Ending::Exited, b"", &mem),
            Termination::Signaled(11)
        );
        assert_eq!(
            classify(killed(24), Ending::Exited, b"", &mem),
            Termination::CpuLimit
        );
        assert_eq!(
            classify(killed(24), Ending::Exited, b"", &none),
            Termination::Signaled(24)
        );
        let setup = format!("{SETUP_FAILED_MARKER}cannot run `x`: No such file\n");
        assert_eq!(
            classify(exited(125), Ending::Exited, setup.as_bytes(), &none),
            Termination::SetupFailed("cannot run `x`: No such file".into())
        );
        // 125 without the marker is the program's own code.
        assert_eq!(
            classify(exited(125), Ending::Exited, b"", &none),
            Termination::Exited(125)
        );
        assert_eq!(
            classify(None, Ending::Exited, b"", &none),
            Termination::Signaled(9)
        );
        let marked = format!("{SIGNAL_MARKER}11\n");
        assert_eq!(
            classify(exited(139), Ending::Exited, marked.as_bytes(), &none),
            Termination::Signaled(11)
        );
        // The marker must name the signal of the code.
        assert_eq!(
            classify(exited(137), Ending::Exited, marked.as_bytes(), &none),
            Termination::Exited(137)
        );
        assert_eq!(
            classify(exited(139), Ending::Exited, b"", &none),
            Termination::Exited(139)
        );
    }

    #[test]
    fn codes_and_names() {
        assert_eq!(
            Termination::Signaled(11).error_code(),
            Some("sandbox_crash")
        );
        assert_eq!(
            Termination::OutOfMemory {
                code: Some(1),
                signal: None
            }
            .error_code(),
            Some("out_of_memory")
        );
        assert_eq!(Termination::Exited(3).error_code(), None);
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(99), "signal 99");
        assert_eq!(Termination::Signaled(15).to_string(), "killed by SIGTERM");
    }
}
