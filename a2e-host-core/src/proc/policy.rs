//! The command policy: the allow-list check on `argv[0]`, the lookup of a bare
//! program name in the host's own `PATH`, the environment a command gets, and
//! the `Command` built from all of it.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Map, Value};
use tokio::process::Command;

use crate::error::{HostError, HostResult};

/// Environment variable prefixes a caller may not set: they would let a
/// workspace file be loaded into an allowed program (`LD_PRELOAD`, …).
const DENIED_ENV_PREFIXES: &[&str] = &["LD_", "DYLD_"];

/// Checks `argv0` against the allow-list. Only an exact match counts: an entry
/// `echo` allows `echo` (looked up in the host's `PATH`), an entry `/bin/echo`
/// allows `/bin/echo`; `./echo` or `bin/echo` are allowed by neither.
pub fn check_allowed(allow: &[String], argv0: &str) -> HostResult<()> {
    if !argv0.is_empty() && allow.iter().any(|a| a == argv0) {
        Ok(())
    } else {
        Err(HostError::Denied(format!(
            "command `{argv0}` is not in the allow-list"
        )))
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The program to execute for `argv0`: a name without `/` is looked up in the
/// host's own `PATH` (absolute entries only), never in a `PATH` the caller
/// passes in the command's environment; anything with a `/` is used as given.
/// `None` when a name is found nowhere.
pub fn resolve_program(argv0: &str) -> Option<PathBuf> {
    if argv0.contains('/') {
        return Some(PathBuf::from(argv0));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(argv0))
        .find(|candidate| is_executable(candidate))
}

/// Environment variables from a JSON object. Strings are taken as they are,
/// numbers and booleans as their JSON text; anything else, an empty name or a
/// name with `=` or NUL is a schema error. Names starting with `LD_` or
/// `DYLD_` are denied.
pub fn env_pairs(env: &Map<String, Value>) -> HostResult<Vec<(String, String)>> {
    let mut pairs = Vec::with_capacity(env.len());
    let mut violations = Vec::new();
    for (name, value) in env {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            violations.push(format!("env.{name}: not a valid variable name"));
            continue;
        }
        if DENIED_ENV_PREFIXES.iter().any(|p| name.starts_with(p)) {
            return Err(HostError::Denied(format!(
                "environment variable `{name}` may not be set"
            )));
        }
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                violations.push(format!("env.{name}: expected a string, number or boolean"));
                continue;
            }
        };
        if text.contains('\0') {
            violations.push(format!("env.{name}: value contains NUL"));
            continue;
        }
        pairs.push((name.clone(), text));
    }
    if violations.is_empty() {
        Ok(pairs)
    } else {
        Err(HostError::schema(violations))
    }
}

/// How a host starts commands: directly, or through its sandbox once it has
/// one. Clones share the sandbox slot: the parts built before the sandbox is
/// known (the built-in tools, the process table, program skills) start their
/// commands through it from when it is set.
#[derive(Clone, Default)]
pub struct Launcher {
    #[cfg(feature = "sandbox")]
    sandbox: std::sync::Arc<std::sync::OnceLock<std::sync::Arc<a2e_sandbox::Sandbox>>>,
}

impl std::fmt::Debug for Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launcher")
            .field("sandboxed", &self.sandboxed())
            .finish()
    }
}

impl Launcher {
    /// Whether commands start through a sandbox.
    pub fn sandboxed(&self) -> bool {
        #[cfg(feature = "sandbox")]
        {
            self.sandbox.get().is_some()
        }
        #[cfg(not(feature = "sandbox"))]
        {
            false
        }
    }

    /// Starts every later command through `sandbox` with the process policy
    /// of `a2e-sandbox`: the parent-death signal on each child and, where the
    /// kernel allows a PID namespace (or bubblewrap is installed), its
    /// descendants contained, so that nothing a command started outlives the
    /// host, even when the host is killed outright. Without it commands start
    /// directly (process groups still end them with their call, session or
    /// host shutdown). `false` when a sandbox is set already.
    #[cfg(feature = "sandbox")]
    pub fn set_sandbox(&self, sandbox: std::sync::Arc<a2e_sandbox::Sandbox>) -> bool {
        self.sandbox.set(sandbox).is_ok()
    }

    /// The sandbox, once set.
    #[cfg(feature = "sandbox")]
    pub fn sandbox(&self) -> Option<std::sync::Arc<a2e_sandbox::Sandbox>> {
        self.sandbox.get().cloned()
    }
}

#[cfg(feature = "sandbox")]
fn sandboxed(
    sandbox: &a2e_sandbox::Sandbox,
    program: &Path,
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
    inherit: &[String],
) -> Result<Command, String> {
    let cwd = std::fs::canonicalize(cwd).map_err(|e| format!("{}: {e}", cwd.display()))?;
    let mut policy = a2e_sandbox::Policy::process(&cwd);
    policy.env.inherit = inherit.to_vec();
    policy.env.set = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    sandbox
        .command(&policy, program, argv.iter().skip(1))
        .map_err(|e| e.to_string())
}

/// The host's environment variables a command inherits by default: enough to
/// find programs and format text, nothing that is likely to be a secret.
pub const DEFAULT_INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM",
];

/// A command for `argv` (non-empty) with `program` resolved, working directory,
/// stdout and stderr piped, and stdin piped or null. Its environment is minimal:
/// only the host's variables named in `inherit` (see
/// [`DEFAULT_INHERITED_ENV`]), then the call's extra `env` — never the host's
/// whole environment, so secrets in it do not reach commands.
pub fn command(
    launcher: &Launcher,
    program: &Path,
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
    stdin_piped: bool,
    inherit: &[String],
) -> Command {
    #[cfg(feature = "sandbox")]
    if let Some(sandbox) = launcher.sandbox.get() {
        match sandboxed(sandbox, program, argv, cwd, env, inherit) {
            Ok(mut cmd) => {
                cmd.stdin(if stdin_piped {
                    Stdio::piped()
                } else {
                    Stdio::null()
                });
                return cmd;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the command through the sandbox; starting it directly")
            }
        }
    }
    #[cfg(not(feature = "sandbox"))]
    let _ = launcher;
    let mut cmd = Command::new(program);
    if let Some((argv0, rest)) = argv.split_first() {
        cmd.arg0(argv0);
        cmd.args(rest);
    }
    cmd.env_clear();
    for name in inherit {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(if stdin_piped {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}
