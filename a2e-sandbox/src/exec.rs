//! The exec wrapper: the process the library starts in place of the program.
//! It applies the plan to itself with safe system calls and then runs the
//! program.
//!
//! Without a PID namespace it `exec`s the program directly (the program keeps
//! the parent-death signal). With one, the wrapper stays as the program's
//! grandparent: it starts itself again (`--init`) as the namespace's first
//! process, which starts the program, reaps orphans and reports how the program
//! ended; the wrapper then ends the same way (the same exit code, or death by
//! the same signal). When the first process of a PID namespace dies, the
//! kernel kills everything else in it, so no descendant outlives the wrapper.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::apply;
use crate::caps;
use crate::plan::ExecPlan;

/// Exit code of the wrapper when it could not set the sandbox up; its last
/// stderr line then starts with [`SETUP_FAILED_MARKER`].
pub const SETUP_FAILED_EXIT: i32 = 125;

/// Prefix of the stderr line the wrapper writes when it could not set the
/// sandbox up or start the program.
pub const SETUP_FAILED_MARKER: &str = "a2e-sandbox: setup failed: ";

/// Prefix of the stderr line with which the wrapper tells that the program
/// was killed by a signal when it must report it as an exit code (under
/// bubblewrap): `a2e-sandbox: killed by signal N`, with exit code 128 + N.
pub const SIGNAL_MARKER: &str = "a2e-sandbox: killed by signal ";

/// Largest report the init process sends to the wrapper.
const MAX_REPORT_BYTES: u64 = 4096;

/// Runs the exec wrapper with `args` (the arguments after the binary name and
/// any hidden subcommand) and never returns.
///
/// Forms: `--probe` prints the [`Capabilities`](crate::Capabilities) of this
/// host as JSON; `--probe-user-ns` does so trying namespaces only through a
/// user namespace; `--noop` exits 0; `PLAN -- PROGRAM [ARGS…]` runs PROGRAM
/// under PLAN (built by [`Sandbox`](crate::Sandbox)).
///
/// Call it before anything starts threads (before a tokio runtime is built):
/// a user namespace can only be entered by a single-threaded process.
pub fn exec_main<I: IntoIterator<Item = OsString>>(args: I) -> ! {
    let args: Vec<OsString> = args.into_iter().collect();
    let code = match dispatch(args) {
        Ok(code) => code,
        Err(message) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{SETUP_FAILED_MARKER}{message}");
            let _ = err.flush();
            SETUP_FAILED_EXIT
        }
    };
    std::process::exit(code)
}

/// `(before, after)` split at the first `--`.
fn split_dashes(args: &[OsString]) -> Result<(&[OsString], &[OsString]), String> {
    let at = args
        .iter()
        .position(|a| a == "--")
        .ok_or_else(|| "expected `--` before the program".to_owned())?;
    let (before, rest) = args.split_at(at);
    Ok((before, rest.get(1..).unwrap_or_default()))
}

fn dispatch(args: Vec<OsString>) -> Result<i32, String> {
    match args.first().and_then(|a| a.to_str()) {
        Some("--probe") | Some("--probe-user-ns") => {
            let force = args.first().is_some_and(|a| a == "--probe-user-ns");
            let caps = caps::probe_here(force);
            let json = serde_json::to_string(&caps).map_err(|e| e.to_string())?;
            println!("{json}");
            Ok(0)
        }
        Some("--noop") => Ok(0),
        Some("--init") => {
            let (head, program) = split_dashes(&args)?;
            let [_, plan, outer, fd] = head else {
                return Err("--init expects PLAN OUTER-PID FD".into());
            };
            let plan_text = plan;
            let plan = ExecPlan::decode(plan_text)?;
            let number = |s: &OsString, what: &str| {
                s.to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                    .ok_or_else(|| format!("--init: {what} is not a number"))
            };
            init(&plan, number(outer, "pid")?, number(fd, "fd")?, program)
        }
        _ => {
            let (head, program) = split_dashes(&args)?;
            let [plan_text] = head else {
                return Err("expected PLAN -- PROGRAM [ARGS…]".into());
            };
            let plan = ExecPlan::decode(plan_text)?;
            outer(&plan, plan_text, program)
        }
    }
}

/// The working directory, Landlock, the limits (late, so that the wrapper's
/// own work is not counted against them), then the capabilities.
fn prepare(plan: &ExecPlan) -> Result<(), String> {
    std::env::set_current_dir(&plan.cwd)
        .map_err(|e| format!("cannot enter {}: {e}", plan.cwd.display()))?;
    if let Some(landlock) = &plan.landlock {
        let outcome = apply::apply_landlock(landlock, &plan.cwd)?;
        if !outcome.enforced {
            return Err("Landlock rules were requested but nothing is enforced".into());
        }
    }
    apply::apply_limits(&plan.limits)?;
    if plan.drop_caps {
        apply::drop_capabilities()?;
    }
    Ok(())
}

fn program_parts(program: &[OsString]) -> Result<(&OsString, &[OsString]), String> {
    program
        .split_first()
        .ok_or_else(|| "no program to run".to_owned())
}

fn outer(plan: &ExecPlan, plan_text: &OsString, program: &[OsString]) -> Result<i32, String> {
    let (name, args) = program_parts(program)?;
    apply::die_with_parent(plan.parent_pid)?;
    apply::no_core_dumps()?;
    if let Some(bwrap) = &plan.bwrap {
        return Err(exec_bwrap(bwrap, plan, program));
    }
    if plan.ns.any() {
        apply::enter_namespaces(plan.ns)?;
    }
    if plan.ns.pid {
        // The group's signals are for the program (a graceful SIGTERM must
        // not kill the wrapper, whose death kills the namespace at once); the
        // wrapper ends by the program's status. SIGKILL cannot be blocked.
        nix::sys::signal::SigSet::all()
            .thread_block()
            .map_err(|e| format!("sigprocmask: {e}"))?;
        return run_under_init(plan, plan_text, program);
    }
    prepare(plan)?;
    if plan.signal_marker {
        return run_and_mark(name, args);
    }
    let err = Command::new(name).args(args).exec();
    Err(format!("cannot run `{}`: {err}", name.to_string_lossy()))
}

/// Replaces the wrapper with bubblewrap, which runs the wrapper again inside
/// its namespaces with the rest of the plan.
fn exec_bwrap(bwrap: &std::path::Path, plan: &ExecPlan, program: &[OsString]) -> String {
    let me = match std::env::current_exe() {
        Ok(me) => me,
        Err(e) => return format!("cannot find the wrapper binary: {e}"),
    };
    let mut inner = plan.clone();
    inner.bwrap = None;
    inner.signal_marker = true;
    inner.parent_pid = None;
    let unshare_net = inner.ns.net;
    inner.ns = Default::default();
    let inner_text = match inner.encode() {
        Ok(t) => t,
        Err(e) => return e,
    };
    let mut cmd = Command::new(bwrap);
    cmd.args(["--die-with-parent", "--unshare-pid"]);
    if unshare_net {
        cmd.arg("--unshare-net");
    }
    cmd.args(["--dev-bind", "/", "/", "--"])
        .arg(me)
        .args(&plan.reexec_prefix)
        .arg(inner_text)
        .arg("--")
        .args(program);
    let err = cmd.exec();
    format!("cannot run bubblewrap {}: {err}", bwrap.display())
}

/// Runs the program as a child; a death by signal N becomes exit code 128 + N
/// with a [`SIGNAL_MARKER`] line on stderr.
fn run_and_mark(name: &OsString, args: &[OsString]) -> Result<i32, String> {
    use std::os::unix::process::ExitStatusExt;
    let status = Command::new(name)
        .args(args)
        .status()
        .map_err(|e| format!("cannot run `{}`: {e}", name.to_string_lossy()))?;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ok(code),
        (None, Some(sig)) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{SIGNAL_MARKER}{sig}");
            let _ = err.flush();
            Ok(128 + sig)
        }
        (None, None) => Err("the program ended without a status".into()),
    }
}

/// Starts the init process in the new PID namespace and ends as the program did.
fn run_under_init(
    plan: &ExecPlan,
    plan_text: &OsString,
    program: &[OsString],
) -> Result<i32, String> {
    // The init process opens the write end through /proc (nothing is inherited).
    let (read_end, write_end) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(&plan.reexec_prefix)
        .arg("--init")
        .arg(plan_text)
        .arg(std::process::id().to_string())
        .arg(write_end.as_raw_fd().to_string())
        .arg("--")
        .args(program);
    let mut init = cmd
        .spawn()
        .map_err(|e| format!("cannot start the namespace's init process: {e}"))?;
    let status = init
        .wait()
        .map_err(|e| format!("cannot wait for the init process: {e}"))?;
    drop(write_end);
    let mut report = String::new();
    let _ = File::from(read_end)
        .take(MAX_REPORT_BYTES)
        .read_to_string(&mut report);
    match Report::parse(&report) {
        Some(Report::Exit(code)) => Ok(code),
        Some(Report::Signal(sig)) => die_by_signal(sig),
        Some(Report::Error(message)) => Err(message),
        None => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => Ok(code),
                (None, Some(sig)) => die_by_signal(sig),
                (None, None) => Err("the init process ended without a status".into()),
            }
        }
    }
}

/// Ends this process by `sig` (no core file). A signal whose default action
/// is to ignore (or that the runtime ignores, like SIGPIPE) ends it with exit
/// code 128 + `sig` instead.
fn die_by_signal(sig: i32) -> ! {
    let _ = apply::no_core_dumps();
    if let Ok(signal) = Signal::try_from(sig) {
        let mut only = nix::sys::signal::SigSet::empty();
        only.add(signal);
        let _ = only.thread_unblock();
        // The first delivery may land in the runtime's SIGSEGV/SIGBUS handler,
        // which restores the default action; the second one then ends the process.
        let _ = nix::sys::signal::raise(signal);
        let _ = nix::sys::signal::raise(signal);
    }
    std::process::exit(128 + sig)
}

/// How the program ended, as the init process reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Report {
    Exit(i32),
    Signal(i32),
    Error(String),
}

impl Report {
    fn render(&self) -> String {
        match self {
            Self::Exit(code) => format!("exit {code}"),
            Self::Signal(sig) => format!("signal {sig}"),
            Self::Error(message) => format!("error {message}"),
        }
    }

    fn parse(text: &str) -> Option<Self> {
        let (kind, rest) = text.split_once(' ')?;
        match kind {
            "exit" => rest.trim().parse().ok().map(Self::Exit),
            "signal" => rest.trim().parse().ok().map(Self::Signal),
            "error" => Some(Self::Error(rest.to_owned())),
            _ => None,
        }
    }
}

/// The first process of the PID namespace: starts the program, reaps every
/// orphan, and reports how the program ended to the wrapper.
fn init(plan: &ExecPlan, outer_pid: u32, fd: u32, program: &[OsString]) -> Result<i32, String> {
    apply::die_with_parent(None)?;
    // The wrapper blocked every signal and a spawned child keeps the mask:
    // the program must start with none blocked. (The init process itself
    // only gets the signals it handles, as the first process of its namespace.)
    nix::sys::signal::SigSet::all()
        .thread_unblock()
        .map_err(|e| format!("sigprocmask: {e}"))?;
    // Opening the wrapper's pipe also proves the wrapper is still alive now
    // that the parent-death signal is armed.
    let mut report = OpenOptions::new()
        .write(true)
        .open(format!("/proc/{outer_pid}/fd/{fd}"))
        .map_err(|e| format!("the wrapper {outer_pid} is gone: {e}"))?;
    let outcome = match supervise_program(plan, program) {
        Ok(r) => r,
        Err(message) => Report::Error(message),
    };
    report
        .write_all(outcome.render().as_bytes())
        .map_err(|e| format!("cannot report to the wrapper: {e}"))?;
    Ok(0)
}

fn supervise_program(plan: &ExecPlan, program: &[OsString]) -> Result<Report, String> {
    let (name, args) = program_parts(program)?;
    prepare(plan)?;
    let child = Command::new(name)
        .args(args)
        .spawn()
        .map_err(|e| format!("cannot run `{}`: {e}", name.to_string_lossy()))?;
    let target = i32::try_from(child.id())
        .map(Pid::from_raw)
        .map_err(|_| "the program's pid is out of range".to_owned())?;
    loop {
        match waitpid(Pid::from_raw(-1), None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == target => return Ok(Report::Exit(code)),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == target => {
                return Ok(Report::Signal(refine_signal(plan, sig)));
            }
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(e) => return Err(format!("waitpid: {e}")),
        }
    }
}

/// A SIGKILL after the CPU limit is used up is the hard CPU limit: reported as SIGXCPU.
fn refine_signal(plan: &ExecPlan, sig: Signal) -> i32 {
    if sig == Signal::SIGKILL
        && let Some(limit) = plan.limits.cpu_seconds
        && let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN)
    {
        let used = usage.user_time().tv_sec() + usage.system_time().tv_sec();
        if u64::try_from(used).is_ok_and(|used| used >= limit) {
            return Signal::SIGXCPU as i32;
        }
    }
    sig as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip() {
        for r in [
            Report::Exit(0),
            Report::Exit(255),
            Report::Signal(11),
            Report::Error("cannot run `x`: not found".into()),
        ] {
            assert_eq!(Report::parse(&r.render()), Some(r));
        }
        assert_eq!(Report::parse(""), None);
        assert_eq!(Report::parse("exit x"), None);
        assert_eq!(Report::parse("other 1"), None);
    }

    #[test]
    fn arguments_split_at_the_first_dashes() {
        let args: Vec<OsString> = ["p", "--", "sh", "--", "x"].map(OsString::from).to_vec();
        let (head, rest) = split_dashes(&args).unwrap();
        assert_eq!(head, &[OsString::from("p")]);
        assert_eq!(rest.len(), 3);
        assert!(split_dashes(&args[..1]).is_err());
    }
}
