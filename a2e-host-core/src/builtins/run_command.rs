//! `run_command`: one allowed program, no shell, in its own process group.
//!
//! Each output line is emitted as a `log` event as it arrives (stdout at
//! `info`, stderr at `warn`) and kept up to `commands.output_max_bytes` per
//! stream. The timeout (the `timeout` argument, else `commands.timeout_secs`,
//! never beyond the call's deadline) and the call's cancellation kill the
//! whole process group; so does dropping the call. A program that exits with
//! a non-zero code is a successful call: the code is in the result.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::io::AsyncWriteExt;
use tokio_util::task::AbortOnDropHandle;

use super::hints::ToolHints;
use super::paths::resolve;
use super::tool::{Builtin, Done, Env, Spec};
use crate::error::{HostError, HostResult};
use crate::plugin::CallContext;
use crate::proc::{self as process, Ending, RunLimits, StreamKind};

/// `run_command`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunCommandArgs {
    /// Program and arguments, e.g. ["ls", "-l"]; the program must be allowed.
    pub argv: Vec<String>,
    /// Working directory, relative to the workspace root (default: the root).
    pub cwd: Option<String>,
    /// Seconds before the process group is killed (default: host setting).
    pub timeout: Option<u64>,
    /// Text written to the program's standard input.
    pub stdin: Option<String>,
    /// Extra environment variables (name → value).
    pub env: Option<Map<String, Value>>,
}

/// `run_command`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RunCommandOutput {
    /// Exit code (null when a signal ended the program)
    pub exit_code: Option<i32>,
    /// The signal that ended the program (null when it exited)
    #[schemars(extend("x-unlisted" = true))]
    pub signal: Option<i32>,
    /// Standard output (capped)
    pub stdout: String,
    /// Standard error (capped)
    pub stderr: String,
    /// Standard output was cut at the cap
    #[schemars(extend("x-unlisted" = true))]
    pub stdout_truncated: bool,
    /// Standard error was cut at the cap
    #[schemars(extend("x-unlisted" = true))]
    pub stderr_truncated: bool,
}

/// The `run_command` tool.
pub(crate) struct RunCommand;

impl Builtin for RunCommand {
    const SPEC: Spec = Spec {
        name: "run_command",
        description: "Run an allowed program (no shell) and return its exit code, stdout and stderr; output lines stream as log events",
        tags: &["process"],
        idempotent: false,
        // What an allowed program does is up to the program.
        hints: ToolHints::new("Run command").destructive().open_world(),
    };

    type Args = RunCommandArgs;
    type Output = RunCommandOutput;

    async fn run(
        env: &Env,
        args: RunCommandArgs,
        ctx: &CallContext,
    ) -> HostResult<Done<RunCommandOutput>> {
        run_command(env, args, ctx).await
    }
}

/// Checks a parsed argv: not empty, no NUL in any argument.
fn checked_argv(argv: Vec<String>, field: &str) -> HostResult<Vec<String>> {
    if argv.is_empty() {
        return Err(HostError::schema(vec![format!(
            "{field}: expected a non-empty array of strings"
        )]));
    }
    if argv.iter().any(|a| a.contains('\0')) {
        return Err(HostError::schema(vec![format!(
            "{field}: arguments may not contain NUL"
        )]));
    }
    Ok(argv)
}

async fn run_command(
    config: &Env,
    args: RunCommandArgs,
    ctx: &CallContext,
) -> HostResult<Done<RunCommandOutput>> {
    let argv = checked_argv(args.argv, "argv")?;
    let argv0 = argv.first().cloned().unwrap_or_default();
    process::check_allowed(&config.commands.allow, &argv0)?;
    let cwd = resolve(&config.root, args.cwd.as_deref().unwrap_or(""))?;
    if !cwd.path.is_dir() {
        return Err(HostError::Tool(format!(
            "working directory `{}` is not a directory",
            cwd.relative()
        )));
    }
    let env = match &args.env {
        Some(map) => process::env_pairs(map)?,
        None => Vec::new(),
    };
    let stdin = args.stdin;
    let timeout_secs = args
        .timeout
        .filter(|t| *t > 0)
        .unwrap_or(config.commands.timeout_secs);
    let timeout_secs = timeout_secs.min(a2e_chain::MAX_TIMEOUT_SECS);
    let mut timeout = (timeout_secs > 0).then(|| Duration::from_secs(timeout_secs));
    if let Some(left) = ctx.remaining() {
        timeout = Some(timeout.map_or(left, |t| t.min(left)));
    }
    let program = process::resolve_program(&argv0)
        .ok_or_else(|| HostError::Tool(format!("command `{argv0}` not found")))?;

    let mut cmd = process::command(
        &config.launcher,
        &program,
        &argv,
        &cwd.path,
        &env,
        stdin.is_some(),
        &config.commands.inherit_env,
    );
    let mut child = process::spawn_group(&mut cmd)
        .map_err(|e| HostError::tool_failed(format!("cannot start `{argv0}`"), e))?;
    tracing::debug!(command = %argv0, pid = child.pid(), "run_command started");
    let _feeder = match (stdin, child.child.stdin.take()) {
        (Some(text), Some(mut pipe)) => Some(AbortOnDropHandle::new(tokio::spawn(async move {
            // A program that does not read its input closes the pipe: not an error.
            let _ = pipe.write_all(text.as_bytes()).await;
            let _ = pipe.shutdown().await;
        }))),
        _ => None,
    };

    let limits = RunLimits {
        timeout,
        cancel: ctx.cancel.clone(),
        output_max_bytes: Some(config.commands.output_max_bytes),
        keep_output: true,
    };
    let outcome = process::supervise(child, limits, |line| {
        let ctx = ctx.clone();
        async move {
            let level = match line.stream {
                StreamKind::Stdout => "info",
                StreamKind::Stderr => "warn",
            };
            ctx.log(level, line.text).await;
        }
    })
    .await
    .map_err(|e| HostError::tool_failed(format!("`{argv0}` failed"), e))?;

    match outcome.ending {
        Ending::Exited => {}
        Ending::TimedOut => {
            let secs = timeout.map_or(timeout_secs, |t| t.as_secs_f64().ceil() as u64);
            return Err(HostError::Timeout(secs));
        }
        Ending::Cancelled => {
            let overdue = ctx
                .deadline
                .is_some_and(|d| tokio::time::Instant::now() >= d);
            return Err(if overdue {
                HostError::Timeout(timeout_secs)
            } else {
                HostError::Cancelled
            });
        }
    }
    let truncated = outcome.stdout.truncated || outcome.stderr.truncated;
    if truncated {
        ctx.log(
            "warn",
            format!(
                "output cut at {} bytes per stream",
                config.commands.output_max_bytes
            ),
        )
        .await;
    }
    let code = outcome.exit_code();
    let signal = outcome.signal();
    let summary = match (code, signal) {
        (Some(c), _) => format!("`{argv0}` exited with code {c}"),
        (None, Some(s)) => format!("`{argv0}` was killed by signal {s}"),
        (None, None) => format!("`{argv0}` ended"),
    };
    let data = RunCommandOutput {
        exit_code: code,
        signal,
        stdout: outcome.stdout.text,
        stderr: outcome.stderr.text,
        stdout_truncated: outcome.stdout.truncated,
        stderr_truncated: outcome.stderr.truncated,
    };
    Ok(Done {
        data,
        summary: Some(summary),
        truncated,
        exit_code: code.map(i64::from),
    })
}
