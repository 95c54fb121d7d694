//! The plan the library hands to the exec wrapper: what to apply, decided
//! from the policy and the host's capabilities. It travels as one JSON
//! argument; the program and its arguments follow after `--`.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::policy::Limits;

/// Version of the plan format; the wrapper refuses another.
pub(crate) const PLAN_VERSION: u32 = 1;

/// Largest plan the wrapper reads.
const MAX_PLAN_BYTES: usize = 256 * 1024;

/// Namespaces the wrapper creates for itself before starting the program.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NsPlan {
    /// A user namespace first (needed when the host is not privileged).
    pub user: bool,
    /// A PID namespace (the program runs under an init-like reaper).
    pub pid: bool,
    /// An empty network namespace.
    pub net: bool,
}

impl NsPlan {
    pub(crate) fn any(self) -> bool {
        self.pid || self.net
    }
}

/// Landlock rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LandlockPlan {
    /// Whether filesystem rules apply (`read` and `write`, plus the working directory).
    pub fs: bool,
    /// Read-only (and executable) trees.
    pub read: Vec<PathBuf>,
    /// Writable trees (the working directory is added).
    pub write: Vec<PathBuf>,
    /// Deny TCP bind and connect.
    pub deny_tcp: bool,
    /// Deny signals and abstract UNIX sockets across the sandbox's boundary.
    pub scope: bool,
}

/// Everything the wrapper does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ExecPlan {
    /// [`PLAN_VERSION`].
    pub v: u32,
    /// The host's pid: the wrapper stops when its parent is already another process.
    pub parent_pid: Option<u32>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Resource limits.
    pub limits: Limits,
    /// Namespaces.
    pub ns: NsPlan,
    /// Filesystem (and TCP) rules.
    pub landlock: Option<LandlockPlan>,
    /// Run under this bubblewrap binary (for the PID and network namespaces).
    pub bwrap: Option<PathBuf>,
    /// Drop every capability and empty the bounding set before the program starts.
    #[serde(default)]
    pub drop_caps: bool,
    /// Run the program as a child and report a death by signal N as exit code
    /// 128 + N with a [`SIGNAL_MARKER`](crate::exec::SIGNAL_MARKER) line on
    /// stderr (under bubblewrap, which turns signals into exit codes).
    #[serde(default)]
    pub signal_marker: bool,
    /// Arguments between the wrapper binary and the plan (a hidden subcommand),
    /// used when the wrapper starts itself again.
    pub reexec_prefix: Vec<String>,
}

impl ExecPlan {
    pub(crate) fn encode(&self) -> Result<String, String> {
        serde_json::to_string(self).map_err(|e| format!("cannot encode the plan: {e}"))
    }

    pub(crate) fn decode(text: &OsString) -> Result<Self, String> {
        let text = text
            .to_str()
            .ok_or_else(|| "the plan is not UTF-8".to_owned())?;
        if text.len() > MAX_PLAN_BYTES {
            return Err(format!("the plan exceeds {MAX_PLAN_BYTES} bytes"));
        }
        let plan: Self =
            serde_json::from_str(text).map_err(|e| format!("the plan is not valid: {e}"))?;
        if plan.v != PLAN_VERSION {
            return Err(format!(
                "plan version {} is not supported (expected {PLAN_VERSION})",
                plan.v
            ));
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> ExecPlan {
        ExecPlan {
            v: PLAN_VERSION,
            parent_pid: Some(7),
            cwd: "/w".into(),
            limits: Limits::skill_defaults(),
            ns: NsPlan {
                user: false,
                pid: true,
                net: true,
            },
            landlock: Some(LandlockPlan {
                fs: true,
                read: vec!["/".into()],
                write: vec!["/tmp".into()],
                deny_tcp: true,
                scope: true,
            }),
            bwrap: None,
            drop_caps: true,
            signal_marker: false,
            reexec_prefix: vec!["__sandbox-exec".into()],
        }
    }

    #[test]
    fn round_trip() {
        let p = plan();
        let text = OsString::from(p.encode().unwrap());
        assert_eq!(ExecPlan::decode(&text).unwrap(), p);
    }

    #[test]
    fn bad_plans_are_named() {
        let mut p = plan();
        p.v = 99;
        let err = ExecPlan::decode(&OsString::from(p.encode().unwrap())).unwrap_err();
        assert!(err.contains("version 99"), "{err}");
        let err = ExecPlan::decode(&OsString::from("{\"v\":1")).unwrap_err();
        assert!(err.contains("not valid"), "{err}");
        let big = OsString::from("x".repeat(MAX_PLAN_BYTES + 1));
        assert!(ExecPlan::decode(&big).unwrap_err().contains("exceeds"));
    }
}
