//! The host side: probes what the host can use once, then turns a
//! [`Policy`] into a `tokio::process::Command` that runs the exec wrapper.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::process::Command;

use crate::caps::{Capabilities, Layer};
use crate::error::SandboxError;
use crate::plan::{ExecPlan, LandlockPlan, NsPlan, PLAN_VERSION};
use crate::policy::{Network, Policy};

/// Longest the capability probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// How to start the exec wrapper: a binary plus the arguments that select
/// [`exec_main`](crate::exec_main) in it (a hidden subcommand).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapper {
    /// The binary.
    pub program: PathBuf,
    /// Arguments before the wrapper's own (e.g. `["__sandbox-exec"]`).
    pub prefix: Vec<String>,
}

impl Wrapper {
    /// A wrapper binary that calls `exec_main` with all its arguments.
    pub fn binary(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            prefix: Vec::new(),
        }
    }

    /// The running binary itself, with a hidden subcommand that calls `exec_main`.
    pub fn current_exe(subcommand: &str) -> std::io::Result<Self> {
        Ok(Self {
            program: std::env::current_exe()?,
            prefix: vec![subcommand.to_owned()],
        })
    }
}

/// Which layers the sandbox may use (all by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// Use PID and network namespaces created by the wrapper itself.
    pub namespaces: bool,
    /// Use Landlock.
    pub landlock: bool,
    /// When to use bubblewrap.
    pub bubblewrap: BubblewrapUse,
    /// Enter the namespaces through a user namespace even when privileged
    /// (what an unprivileged host does anyway).
    pub force_user_namespace: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            namespaces: true,
            landlock: true,
            bubblewrap: BubblewrapUse::Fallback,
            force_user_namespace: false,
        }
    }
}

/// When bubblewrap runs the wrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BubblewrapUse {
    /// Never.
    Never,
    /// When the wrapper's own namespaces are unavailable and bubblewrap works.
    Fallback,
    /// Always for containment and network isolation, when it works.
    Prefer,
}

/// How the descendants of a run are contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Containment {
    /// A PID namespace created by the wrapper.
    PidNamespace,
    /// bubblewrap's PID namespace.
    Bubblewrap,
    /// Not contained: only the direct child gets the parent-death signal
    /// (the process group is still killed on timeout, cancel and exit).
    ProcessGroupOnly,
}

/// How the network is cut off for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetIsolation {
    /// The policy allows the network.
    NotRequested,
    /// An empty network namespace created by the wrapper.
    Namespace,
    /// bubblewrap's empty network namespace.
    Bubblewrap,
    /// Landlock denies TCP bind and connect (UDP and UNIX sockets stay open).
    LandlockTcp,
    /// Nothing was available.
    None,
}

/// The layers one run gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// Descendants.
    pub containment: Containment,
    /// Network.
    pub network: NetIsolation,
    /// Whether Landlock filesystem rules apply.
    pub filesystem: bool,
}

/// Layers already warned about in this process.
fn warned() -> &'static Mutex<HashSet<String>> {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    WARNED.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Logs a warning the first time this process meets `key`.
fn warn_once(key: &str, message: &str) {
    let first = warned()
        .lock()
        .map(|mut set| set.insert(key.to_owned()))
        .unwrap_or(true);
    if first {
        tracing::warn!(layer = key, "{message}");
    }
}

/// Starts sandboxed children. Build one per host with [`Sandbox::new`] (it
/// probes the host once) and share it.
#[derive(Debug, Clone)]
pub struct Sandbox {
    wrapper: Wrapper,
    config: SandboxConfig,
    caps: Capabilities,
    bwrap: Option<PathBuf>,
}

impl Sandbox {
    /// Probes what this host can use (running the wrapper with `--probe`, and
    /// bubblewrap when found in `PATH`), and logs each unavailable layer once.
    pub async fn new(wrapper: Wrapper, config: SandboxConfig) -> Result<Self, SandboxError> {
        let mut caps = probe_wrapper(&wrapper, config.force_user_namespace).await?;
        let mut bwrap = None;
        caps.bubblewrap = if config.bubblewrap == BubblewrapUse::Never {
            Layer::Unavailable("disabled by configuration".into())
        } else {
            match probe_bubblewrap(&wrapper).await {
                Ok(path) => {
                    bwrap = Some(path);
                    Layer::Available
                }
                Err(why) => Layer::Unavailable(why),
            }
        };
        if !config.namespaces {
            let off = Layer::Unavailable("disabled by configuration".into());
            caps.pid_namespace = off.clone();
            caps.net_namespace = off;
        }
        if !config.landlock {
            let off = Layer::Unavailable("disabled by configuration".into());
            caps.landlock_fs = off.clone();
            caps.landlock_tcp = off.clone();
            caps.landlock_scope = off;
        }
        for (name, why) in caps.unavailable() {
            warn_once(
                name,
                &format!("sandbox layer `{name}` is unavailable: {why}"),
            );
        }
        Ok(Self {
            wrapper,
            config,
            caps,
            bwrap,
        })
    }

    /// What this host can use, as probed.
    pub fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// The wrapper this sandbox runs.
    pub fn wrapper(&self) -> &Wrapper {
        &self.wrapper
    }

    /// The plan for `policy` and the layers it gets. Layers the policy asks for
    /// but this host lacks are logged once (as warnings) and left out.
    fn plan(&self, policy: &Policy) -> (ExecPlan, Applied) {
        let caps = &self.caps;
        let native = caps.native_ns();
        let bwrap_ok = caps.bubblewrap.is_available() && self.bwrap.is_some();
        let want_pid = policy.contain_descendants;
        let want_net = policy.network == Network::Deny;
        let prefer_bwrap = self.config.bubblewrap == BubblewrapUse::Prefer;
        let missing = (want_pid && !native.pid) || (want_net && !native.net);
        let use_bwrap = bwrap_ok && (want_pid || want_net) && (prefer_bwrap || missing);

        let mut ns = NsPlan::default();
        let containment = if use_bwrap {
            Containment::Bubblewrap
        } else if want_pid && native.pid {
            ns.pid = true;
            Containment::PidNamespace
        } else {
            if want_pid {
                warn_once(
                    "containment",
                    "descendants of sandboxed children are not contained (no PID namespace, no bubblewrap): they may outlive the host",
                );
            }
            Containment::ProcessGroupOnly
        };
        let tcp = caps.landlock_tcp.is_available();
        let network = if !want_net {
            NetIsolation::NotRequested
        } else if use_bwrap {
            NetIsolation::Bubblewrap
        } else if native.net {
            ns.net = true;
            NetIsolation::Namespace
        } else if tcp {
            warn_once(
                "network",
                "no network namespace: sandboxed children lose TCP only (Landlock)",
            );
            NetIsolation::LandlockTcp
        } else {
            warn_once(
                "network",
                "no network namespace, bubblewrap or Landlock TCP rules: sandboxed children keep the network",
            );
            NetIsolation::None
        };
        ns.user = ns.any() && native.user;

        let fs_ok = caps.landlock_fs.is_available();
        if policy.filesystem.is_some() && !fs_ok {
            warn_once(
                "filesystem",
                "Landlock is unavailable: sandboxed children keep the host's filesystem access",
            );
        }
        let fs = policy.filesystem.as_ref().filter(|_| fs_ok);
        let deny_tcp = want_net && tcp;
        let landlock = (fs.is_some() || deny_tcp).then(|| LandlockPlan {
            fs: fs.is_some(),
            read: fs.map(|f| f.readable.clone()).unwrap_or_default(),
            write: fs.map(|f| f.writable.clone()).unwrap_or_default(),
            deny_tcp,
            scope: fs.is_some() && caps.landlock_scope.is_available(),
        });
        let plan = ExecPlan {
            v: PLAN_VERSION,
            parent_pid: Some(std::process::id()),
            cwd: policy.workdir.clone(),
            limits: policy.limits,
            ns,
            landlock,
            bwrap: self.bwrap.clone().filter(|_| use_bwrap),
            drop_caps: policy.drop_capabilities,
            signal_marker: false,
            reexec_prefix: self.wrapper.prefix.clone(),
        };
        let applied = Applied {
            containment,
            network,
            filesystem: fs.is_some(),
        };
        (plan, applied)
    }

    /// The layers `policy` gets on this host.
    pub fn applied(&self, policy: &Policy) -> Applied {
        self.plan(policy).1
    }

    /// A command that runs `program` with `args` under `policy`: the wrapper
    /// in a process group of its own (`process_group(0)`), an environment of
    /// only the policy's variables, the working directory set, `kill_on_drop`,
    /// stdin null and stdout/stderr piped (change them as needed).
    ///
    /// Spawn it from a thread that lives as long as the child should (a
    /// runtime worker or the main thread, not `spawn_blocking`): the
    /// parent-death signal fires when the spawning thread ends.
    pub fn command(
        &self,
        policy: &Policy,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<Command, SandboxError> {
        let (plan, _) = self.plan(policy);
        if !policy.workdir.is_dir() {
            return Err(SandboxError::Policy(format!(
                "the working directory {} is not a directory",
                policy.workdir.display()
            )));
        }
        if !policy.workdir.is_absolute() {
            return Err(SandboxError::Policy(format!(
                "the working directory {} is not absolute",
                policy.workdir.display()
            )));
        }
        let text = plan.encode().map_err(SandboxError::Policy)?;
        let mut cmd = Command::new(&self.wrapper.program);
        cmd.args(&self.wrapper.prefix)
            .arg(text)
            .arg("--")
            .arg(program.as_ref())
            .args(args);
        cmd.env_clear();
        for (name, value) in policy.env.resolve(|name| std::env::var_os(name)) {
            cmd.env(name, value);
        }
        cmd.current_dir(&policy.workdir)
            .process_group(0)
            .kill_on_drop(true)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Ok(cmd)
    }
}

/// Runs the wrapper with `--probe` (or `--probe-user-ns`) and reads its report.
async fn probe_wrapper(
    wrapper: &Wrapper,
    force_user_ns: bool,
) -> Result<Capabilities, SandboxError> {
    let flag = if force_user_ns {
        "--probe-user-ns"
    } else {
        "--probe"
    };
    let out = run_quiet(
        &wrapper.program,
        wrapper
            .prefix
            .iter()
            .map(OsString::from)
            .chain([flag.into()]),
    )
    .await
    .map_err(|e| SandboxError::Probe(format!("cannot run the wrapper: {e}")))?;
    if !out.status.success() {
        return Err(SandboxError::Probe(format!(
            "the wrapper's probe failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| SandboxError::Probe(format!("the wrapper's report is not valid: {e}")))
}

/// Whether `bwrap` (from `PATH`) can run the wrapper with the flags the plan
/// uses: its path, or why not.
async fn probe_bubblewrap(wrapper: &Wrapper) -> Result<PathBuf, String> {
    let bwrap = find_in_path("bwrap")
        .ok_or_else(|| "`bwrap` is not installed (Debian package `bubblewrap`)".to_owned())?;
    let args = [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--dev-bind",
        "/",
        "/",
        "--",
    ]
    .map(OsString::from)
    .into_iter()
    .chain([wrapper.program.clone().into_os_string()])
    .chain(wrapper.prefix.iter().map(OsString::from))
    .chain(["--noop".into()]);
    match run_quiet(&bwrap, args).await {
        Ok(out) if out.status.success() => Ok(bwrap),
        Ok(out) => Err(format!(
            "bwrap failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run bwrap: {e}")),
    }
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

async fn run_quiet(
    program: &Path,
    args: impl IntoIterator<Item = OsString>,
) -> std::io::Result<std::process::Output> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(std::env::var_os("PATH").map(|p| ("PATH", p)))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(PROBE_TIMEOUT, cmd.output())
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "probe timed out"))?
}
