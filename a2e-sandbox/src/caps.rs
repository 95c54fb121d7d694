//! What the running kernel and the host's privileges allow: probed once, in a
//! child (the wrapper run with `--probe`), never in the host itself.

use std::fmt;

use landlock::ABI;
use nix::sched::{CloneFlags, unshare};
use serde::{Deserialize, Serialize};

use crate::apply;
use crate::plan::{LandlockPlan, NsPlan};

/// Whether one isolation layer can be used, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// Usable.
    Available,
    /// Not usable, with the reason.
    Unavailable(String),
}

impl Layer {
    /// Whether the layer is usable.
    pub fn is_available(&self) -> bool {
        matches!(self, Self::Available)
    }

    fn from_result<E: fmt::Display>(r: Result<(), E>) -> Self {
        match r {
            Ok(()) => Self::Available,
            Err(e) => Self::Unavailable(e.to_string()),
        }
    }
}

/// The isolation layers this host can use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// `prctl(PR_SET_PDEATHSIG)`: the direct child dies with the host.
    pub parent_death_signal: Layer,
    /// `setrlimit`.
    pub rlimits: Layer,
    /// A PID namespace: every descendant dies with the child's wrapper.
    pub pid_namespace: Layer,
    /// An empty network namespace.
    pub net_namespace: Layer,
    /// Whether the namespaces need a user namespace (the host is not privileged).
    pub needs_user_namespace: bool,
    /// The Landlock ABI the kernel offers (0: none).
    pub landlock_abi: u32,
    /// Landlock filesystem rules.
    pub landlock_fs: Layer,
    /// Landlock TCP rules (ABI 4).
    pub landlock_tcp: Layer,
    /// Landlock scopes: signals and abstract UNIX sockets (ABI 6).
    pub landlock_scope: Layer,
    /// bubblewrap (`bwrap`) with `--unshare-pid --unshare-net --die-with-parent`
    /// (filled in by the host side of the probe).
    pub bubblewrap: Layer,
}

impl Capabilities {
    /// Each layer with its name, in a fixed order.
    pub fn layers(&self) -> [(&'static str, &Layer); 8] {
        [
            ("parent_death_signal", &self.parent_death_signal),
            ("rlimits", &self.rlimits),
            ("pid_namespace", &self.pid_namespace),
            ("net_namespace", &self.net_namespace),
            ("landlock_fs", &self.landlock_fs),
            ("landlock_tcp", &self.landlock_tcp),
            ("landlock_scope", &self.landlock_scope),
            ("bubblewrap", &self.bubblewrap),
        ]
    }

    /// The names of the layers that are not available, with the reasons.
    pub fn unavailable(&self) -> Vec<(&'static str, &str)> {
        self.layers()
            .into_iter()
            .filter_map(|(name, layer)| match layer {
                Layer::Available => None,
                Layer::Unavailable(why) => Some((name, why.as_str())),
            })
            .collect()
    }

    pub(crate) fn native_ns(&self) -> NsPlan {
        NsPlan {
            user: self.needs_user_namespace,
            pid: self.pid_namespace.is_available(),
            net: self.net_namespace.is_available(),
        }
    }
}

/// Probes this process (the wrapper run with `--probe`, single-threaded):
/// tries each layer on itself. The process is changed by it and must exit after.
pub(crate) fn probe_here(force_user_ns: bool) -> Capabilities {
    let parent_death_signal = Layer::from_result(apply::die_with_parent(None));
    let rlimits = Layer::from_result(apply::no_core_dumps());

    let (mut net, mut pid, mut needs_user) = if force_user_ns {
        let skipped = || Layer::Unavailable("not tried without a user namespace".into());
        (skipped(), skipped(), true)
    } else {
        let net = Layer::from_result(unshare(CloneFlags::CLONE_NEWNET));
        let pid = Layer::from_result(unshare(CloneFlags::CLONE_NEWPID));
        (net, pid, false)
    };
    if !(pid.is_available() && net.is_available()) {
        // Without privileges, the namespaces come with a user namespace of one's own.
        let user = apply::enter_namespaces(NsPlan {
            user: true,
            pid: !pid.is_available(),
            net: !net.is_available(),
        });
        match user {
            Ok(()) => {
                needs_user = true;
                net = Layer::Available;
                pid = Layer::Available;
            }
            Err(e) => {
                if let Layer::Unavailable(why) = &mut pid {
                    *why = format!("{why}; {e}");
                }
                if let Layer::Unavailable(why) = &mut net {
                    *why = format!("{why}; {e}");
                }
                needs_user = false;
            }
        }
    }

    let plan = LandlockPlan {
        fs: true,
        read: vec!["/".into()],
        write: Vec::new(),
        deny_tcp: true,
        scope: true,
    };
    let (abi, landlock_fs, landlock_tcp, landlock_scope) =
        match apply::apply_landlock(&plan, std::path::Path::new("/")) {
            Ok(outcome) if outcome.enforced => {
                let at = |want: ABI, what: &str| {
                    if apply::abi_at_least(outcome.abi, want) {
                        Layer::Available
                    } else {
                        Layer::Unavailable(format!(
                            "{what} needs Landlock ABI {want}, the kernel offers {}",
                            outcome.abi
                        ))
                    }
                };
                (
                    outcome.abi,
                    Layer::Available,
                    at(ABI::V4, "TCP rules"),
                    at(ABI::V6, "scopes"),
                )
            }
            Ok(_) => {
                let no = Layer::Unavailable("Landlock is not enabled in this kernel".into());
                (0, no.clone(), no.clone(), no)
            }
            Err(e) => {
                let no = Layer::Unavailable(e);
                (0, no.clone(), no.clone(), no)
            }
        };

    Capabilities {
        parent_death_signal,
        rlimits,
        pid_namespace: pid,
        net_namespace: net,
        needs_user_namespace: needs_user,
        landlock_abi: abi,
        landlock_fs,
        landlock_tcp,
        landlock_scope,
        bubblewrap: Layer::Unavailable("not probed".into()),
    }
}
