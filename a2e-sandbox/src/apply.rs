//! The wrapper applies these to itself before it starts the program:
//! parent-death signal, resource limits, namespaces, Landlock rules.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use nix::sched::{CloneFlags, unshare};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::Signal;

use crate::plan::{LandlockPlan, NsPlan};
use crate::policy::Limits;

/// The Landlock ABI the rules are written for; older kernels get a subset (best effort).
pub(crate) const LANDLOCK_ABI: ABI = ABI::V6;

/// Asks for SIGKILL when the parent dies, then checks that the parent is still
/// `expected` (it may have died before the request was made).
pub(crate) fn die_with_parent(expected: Option<u32>) -> Result<(), String> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|e| format!("prctl(PR_SET_PDEATHSIG): {e}"))?;
    if let Some(expected) = expected {
        let parent = nix::unistd::getppid().as_raw();
        if i64::from(parent) != i64::from(expected) {
            return Err(format!(
                "the parent process {expected} is gone (parent is now {parent})"
            ));
        }
    }
    Ok(())
}

/// Sets one limit, never above the hard limit the process already has.
fn limit(resource: Resource, soft: u64, hard: u64) -> Result<(), String> {
    let (_, max) = getrlimit(resource).map_err(|e| format!("getrlimit({resource:?}): {e}"))?;
    let hard = hard.min(max);
    let soft = soft.min(hard);
    setrlimit(resource, soft, hard).map_err(|e| format!("setrlimit({resource:?}): {e}"))
}

/// No core files.
pub(crate) fn no_core_dumps() -> Result<(), String> {
    limit(Resource::RLIMIT_CORE, 0, 0)
}

/// Applies the resource limits (and no core files).
pub(crate) fn apply_limits(limits: &Limits) -> Result<(), String> {
    no_core_dumps()?;
    if let Some(n) = limits.open_files {
        limit(Resource::RLIMIT_NOFILE, n, n)?;
    }
    if let Some(n) = limits.processes {
        limit(Resource::RLIMIT_NPROC, n, n)?;
    }
    if let Some(n) = limits.cpu_seconds {
        limit(Resource::RLIMIT_CPU, n, n.saturating_add(1))?;
    }
    if let Some(n) = limits.address_space_bytes {
        limit(Resource::RLIMIT_AS, n, n)?;
    }
    Ok(())
}

/// Moves this (single-threaded) process into new namespaces: its children
/// are created in the new PID namespace, it is itself in the new network one.
pub(crate) fn enter_namespaces(ns: NsPlan) -> Result<(), String> {
    let mut flags = CloneFlags::empty();
    if ns.pid {
        flags |= CloneFlags::CLONE_NEWPID;
    }
    if ns.net {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if ns.user {
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        unshare(flags | CloneFlags::CLONE_NEWUSER)
            .map_err(|e| format!("unshare(user namespace): {e}"))?;
        // Map the caller's own ids: files keep their owners, no privilege is gained.
        write_proc("/proc/self/setgroups", "deny")?;
        write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
        write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1"))?;
        // Gaining the namespace's capabilities made this process non-dumpable,
        // which hides its /proc entries from the init process (same uid) that
        // reports to it through /proc/<pid>/fd.
        // Gaining them also keeps a process that has them out of reach of
        // one that has not (the init process, after its exec): drop them all,
        // the namespaces are made.
        nix::sys::prctl::set_dumpable(true).map_err(|e| format!("prctl(PR_SET_DUMPABLE): {e}"))?;
        clear_capabilities()
    } else {
        unshare(flags).map_err(|e| format!("unshare({flags:?}): {e}"))
    }
}

/// Empties the effective, permitted and inheritable capability sets.
fn clear_capabilities() -> Result<(), String> {
    let none = rustix::thread::CapabilitySet::empty();
    rustix::thread::set_capabilities(
        None,
        rustix::thread::CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )
    .map_err(|e| format!("capset: {e}"))
}

/// Drops every capability for good: the bounding set is emptied first, so
/// that a root program does not get them back when it is executed.
pub(crate) fn drop_capabilities() -> Result<(), String> {
    let root = nix::unistd::geteuid().is_root();
    for cap in rustix::thread::CapabilitySet::all().iter() {
        match rustix::thread::remove_capability_from_bounding_set(cap) {
            // A capability this kernel does not know.
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            // Without CAP_SETPCAP only root would get them back on exec.
            Err(e) if root => return Err(format!("prctl(PR_CAPBSET_DROP): {e}")),
            Err(_) => {}
        }
    }
    clear_capabilities()
}

fn write_proc(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {path}: {e}"))
}

/// What restricting this process with Landlock came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LandlockOutcome {
    /// The Landlock ABI the kernel offers (0: none).
    pub abi: u32,
    /// Whether every requested right is enforced.
    pub fully: bool,
    /// Whether anything is enforced.
    pub enforced: bool,
}

fn abi_number(status: LandlockStatus) -> u32 {
    match status {
        LandlockStatus::Available { effective_abi, .. } => (1..=32)
            .find(|n| ABI::from(*n) == effective_abi)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0),
        _ => 0,
    }
}

/// The Landlock ABI a kernel offering `abi` gives these rules.
pub(crate) fn abi_at_least(abi: u32, want: ABI) -> bool {
    i32::try_from(abi).is_ok_and(|n| ABI::from(n) >= want)
}

/// Restricts this process (and what it starts) with `plan`, best effort.
pub(crate) fn apply_landlock(plan: &LandlockPlan, cwd: &Path) -> Result<LandlockOutcome, String> {
    let err = |e: landlock::RulesetError| format!("landlock: {e}");
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    if plan.fs {
        ruleset = ruleset
            .handle_access(AccessFs::from_all(LANDLOCK_ABI))
            .map_err(err)?;
    }
    if plan.deny_tcp {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(LANDLOCK_ABI))
            .map_err(err)?;
    }
    if plan.scope {
        ruleset = ruleset.scope(Scope::from_all(LANDLOCK_ABI)).map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    if plan.fs {
        created = created
            .add_rules(path_beneath_rules(
                &plan.read,
                AccessFs::from_read(LANDLOCK_ABI),
            ))
            .map_err(err)?
            .add_rules(path_beneath_rules(
                plan.write.iter().map(|p| p.as_path()).chain([cwd]),
                AccessFs::from_all(LANDLOCK_ABI),
            ))
            .map_err(err)?;
    }
    let status = created.restrict_self().map_err(err)?;
    Ok(LandlockOutcome {
        abi: abi_number(status.landlock),
        fully: status.ruleset == RulesetStatus::FullyEnforced,
        enforced: status.ruleset != RulesetStatus::NotEnforced,
    })
}
