//! What a sandboxed child may do: limits, environment, filesystem, network,
//! and whether its descendants are contained.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Variables a child inherits from the host by default ([`EnvPolicy::inherit`]).
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TERM",
    "USER",
    "LOGNAME",
];

/// Paths a child may always write to under a filesystem policy (when they exist).
pub const DEFAULT_WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Resource limits (`setrlimit`), applied in the child before the program starts.
/// `None` leaves the limit the host has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Address space in bytes (`RLIMIT_AS`). Exceeding it makes allocations
    /// fail; the run then ends as [`Termination::OutOfMemory`](crate::Termination::OutOfMemory)
    /// when the program says so on stderr (see the crate docs).
    pub address_space_bytes: Option<u64>,
    /// CPU seconds (`RLIMIT_CPU`): `SIGXCPU` at this many seconds, `SIGKILL`
    /// one second later if the program ignores it.
    pub cpu_seconds: Option<u64>,
    /// Open file descriptors (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
    /// Processes of the user (`RLIMIT_NPROC`; counted per user, not per
    /// sandbox, and not enforced for root).
    pub processes: Option<u64>,
}

impl Limits {
    /// Limits for a sandboxed skill: 1 GiB of address space, 60 CPU seconds,
    /// 256 open files, no process limit.
    pub fn skill_defaults() -> Self {
        Self {
            address_space_bytes: Some(1 << 30),
            cpu_seconds: Some(60),
            open_files: Some(256),
            processes: None,
        }
    }
}

/// The child's environment: it starts empty; the named variables are copied
/// from the host's environment when set there, then `set` is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Names copied from the host (default [`DEFAULT_ENV_ALLOW`]).
    pub inherit: Vec<String>,
    /// Variables set explicitly (after the inherited ones; a later pair wins).
    pub set: Vec<(OsString, OsString)>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        Self {
            inherit: DEFAULT_ENV_ALLOW.iter().map(|s| (*s).to_owned()).collect(),
            set: Vec::new(),
        }
    }
}

impl EnvPolicy {
    /// The variables the child gets, read from `lookup` for the inherited names.
    pub fn resolve(
        &self,
        mut lookup: impl FnMut(&str) -> Option<OsString>,
    ) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = Vec::new();
        for name in &self.inherit {
            if let Some(value) = lookup(name) {
                out.push((OsString::from(name), value));
            }
        }
        for (name, value) in &self.set {
            out.retain(|(n, _)| n != name);
            out.push((name.clone(), value.clone()));
        }
        out
    }
}

/// Filesystem rules (Landlock): everything below `readable` may be read and
/// executed, everything below the working directory and `writable` may also be
/// written; the rest is denied. Paths that do not exist are left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsPolicy {
    /// Read-only (and executable) trees; default `/`.
    pub readable: Vec<PathBuf>,
    /// Writable trees besides the working directory; default
    /// [`DEFAULT_WRITABLE_DEVICES`].
    pub writable: Vec<PathBuf>,
}

impl Default for FsPolicy {
    fn default() -> Self {
        Self {
            readable: vec![PathBuf::from("/")],
            writable: DEFAULT_WRITABLE_DEVICES.iter().map(PathBuf::from).collect(),
        }
    }
}

/// Whether the child may use the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Network {
    /// The host's network.
    #[default]
    Allow,
    /// No network: an empty network namespace (or bubblewrap's), else Landlock's
    /// TCP rules (bind and connect denied).
    Deny,
}

/// The policy of one sandboxed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The working directory (the child starts there and, under a filesystem
    /// policy, may write below it).
    pub workdir: PathBuf,
    /// Resource limits.
    pub limits: Limits,
    /// The environment.
    pub env: EnvPolicy,
    /// Filesystem rules; `None`: the host's own access.
    pub filesystem: Option<FsPolicy>,
    /// Network access.
    pub network: Network,
    /// Whether descendants (background children, daemons) are contained so
    /// that they die with the child's wrapper and with the host (a PID
    /// namespace or bubblewrap). The direct child always gets the parent-death signal.
    pub contain_descendants: bool,
    /// Drop every capability (and empty the bounding set), so that a child of
    /// a root host runs without privileges (it could otherwise leave its
    /// namespaces). An unprivileged host's children have none anyway.
    pub drop_capabilities: bool,
}

impl Policy {
    /// For commands and processes the host starts on request: no limits, the
    /// host's filesystem, network and privileges, a minimal environment,
    /// descendants contained.
    pub fn process(workdir: impl AsRef<Path>) -> Self {
        Self {
            workdir: workdir.as_ref().to_path_buf(),
            limits: Limits::default(),
            env: EnvPolicy::default(),
            filesystem: None,
            network: Network::Allow,
            contain_descendants: true,
            drop_capabilities: false,
        }
    }

    /// For sandboxed skills: [`Limits::skill_defaults`], writes only below the
    /// working directory, no network, no capabilities, a minimal environment,
    /// descendants contained.
    pub fn skill(workdir: impl AsRef<Path>) -> Self {
        Self {
            workdir: workdir.as_ref().to_path_buf(),
            limits: Limits::skill_defaults(),
            env: EnvPolicy::default(),
            filesystem: Some(FsPolicy::default()),
            network: Network::Deny,
            contain_descendants: true,
            drop_capabilities: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_starts_from_the_allow_list_and_set_wins() {
        let mut env = EnvPolicy::default();
        env.set.push(("HOME".into(), "/work".into()));
        env.set.push(("X".into(), "1".into()));
        let got = env.resolve(|name| match name {
            "PATH" => Some("/bin".into()),
            "HOME" => Some("/root".into()),
            "SECRET" => Some("s3cr3t".into()),
            _ => None,
        });
        assert_eq!(
            got,
            vec![
                ("PATH".into(), "/bin".into()),
                ("HOME".into(), "/work".into()),
                ("X".into(), "1".into()),
            ]
        );
    }

    #[test]
    fn presets_differ_where_they_should() {
        let p = Policy::process("/w");
        assert_eq!(p.network, Network::Allow);
        assert!(p.filesystem.is_none());
        assert_eq!(p.limits, Limits::default());
        let s = Policy::skill("/w");
        assert_eq!(s.network, Network::Deny);
        assert!(s.filesystem.is_some());
        assert_eq!(s.limits.address_space_bytes, Some(1 << 30));
    }
}
