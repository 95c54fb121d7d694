//! Running client scenarios: the scripted host (in this process for
//! WebSocket and HTTP+SSE, a child of the client for stdio), the client
//! under test in a process group of its own, their results put together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use super::{ClientCx, ClientRun, ClientScenario, FRAMING, Peer, WIRE, WIRE_RULES, all};
use conformance_harness::check::{CheckResult, Recorder, Status};
use conformance_harness::link::serve::{self, Facts};
use conformance_harness::link::stdio;
use conformance_harness::scenario::Selection;
use conformance_harness::scenario::Transport;
use conformance_harness::wire::{Rule, WireLog, report_rules};

/// Largest report read from a client's stdout.
const MAX_STDOUT: u64 = 64 * 1024 * 1024;

/// How a client run behaves.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The token scenarios with authentication give the client.
    pub token: String,
    /// How long the client may take to send one message.
    pub answer_timeout: Duration,
    /// How long one scenario may take.
    pub scenario_timeout: Duration,
    /// Show the client's stderr.
    pub stderr: bool,
    /// This program, to start as the scripted host on stdio.
    pub me: PathBuf,
}

/// What the scripted host found, handed from a stdio scripted host to the runner.
#[derive(Debug, Default, Serialize, Deserialize)]
struct ScriptReport {
    statuses: BTreeMap<String, Status>,
    wire: WireLog,
    abort: Option<String>,
}

/// The script's part of a scenario over `peer`.
async fn script(cs: &'static ClientScenario, peer: Peer, token: Option<String>) -> ScriptReport {
    let mut cx = ClientCx {
        peer,
        rec: Recorder::new(cs.scenario.name, cs.scenario.checks),
        token,
    };
    let outcome = (cs.scenario.run)(&mut cx).await;
    cx.peer.close();
    ScriptReport {
        statuses: cx.rec.statuses().into_iter().collect(),
        wire: cx.peer.wire.clone(),
        abort: outcome.err().map(|a| a.0),
    }
}

/// Runs `command TARGET` with the scenario's environment; how it ended.
async fn start_client(
    cs: &ClientScenario,
    command: &[String],
    target: &str,
    transport: Transport,
    token: Option<&str>,
    opts: &ClientOptions,
) -> Result<ClientProcess, String> {
    let (program, args) = command.split_first().ok_or("an empty client command")?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .arg(target)
        .env("A2E_CONFORMANCE_SCENARIO", cs.short())
        .env("A2E_CONFORMANCE_TRANSPORT", transport.name())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if opts.stderr {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .process_group(0)
        .kill_on_drop(true);
    match token {
        Some(t) => cmd.env("A2E_CONFORMANCE_AUTH_TOKEN", t),
        None => cmd.env_remove("A2E_CONFORMANCE_AUTH_TOKEN"),
    };
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the client `{program}`: {e}"))?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let stdout = child
        .stdout
        .take()
        .ok_or("the client's stdout is not piped")?;
    let reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = stdout.take(MAX_STDOUT).read_to_end(&mut buf).await;
        buf
    });
    Ok(ClientProcess {
        child,
        pgid,
        reader: Some(reader),
        started: Instant::now(),
    })
}

struct ClientProcess {
    child: tokio::process::Child,
    pgid: Option<i32>,
    reader: Option<tokio::task::JoinHandle<Vec<u8>>>,
    started: Instant,
}

impl ClientProcess {
    /// Waits until `deadline` for the client to end, then kills its group.
    async fn finish(mut self, deadline: Instant) -> ClientRun {
        let status = tokio::time::timeout_at(deadline, self.child.wait()).await;
        let elapsed = self.started.elapsed();
        let (exit, finished) = match status {
            Ok(Ok(s)) => (s.code(), true),
            _ => (None, false),
        };
        self.kill();
        let out = match self.reader.take() {
            Some(r) => tokio::time::timeout(Duration::from_secs(5), r)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let text = String::from_utf8_lossy(&out);
        let report = text
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
            .find(Value::is_object);
        ClientRun {
            exit,
            finished,
            elapsed,
            report,
        }
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for ClientProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs one scenario on `transport`; its results and what the client's messages broke.
pub async fn run_client(
    cs: &'static ClientScenario,
    transport: Transport,
    command: &[String],
    opts: &ClientOptions,
) -> (Vec<CheckResult>, WireLog) {
    let deadline = Instant::now() + opts.scenario_timeout;
    let token = cs.auth.then(|| opts.token.clone());
    let mut rec = Recorder::new(cs.scenario.name, cs.scenario.checks);
    let outcome = match transport {
        Transport::Stdio => on_stdio(cs, command, token, opts, deadline).await,
        other => on_network(cs, other, command, token, opts, deadline).await,
    };
    let (script, run) = match outcome {
        Ok(both) => both,
        Err(e) => return (rec.finish(Some(&e)), WireLog::default()),
    };
    for (id, status) in script.statuses {
        rec.record(&id, status);
    }
    (cs.judge)(&run, &mut rec);
    let why = script.abort.or_else(|| {
        (!run.finished).then(|| "the client did not end within the scenario's time".to_owned())
    });
    (rec.finish(why.as_deref()), script.wire)
}

async fn on_network(
    cs: &'static ClientScenario,
    transport: Transport,
    command: &[String],
    token: Option<String>,
    opts: &ClientOptions,
    deadline: Instant,
) -> Result<(ScriptReport, ClientRun), String> {
    let mut server = serve::listen(transport).await?;
    let url = server.url().to_owned();
    let client = start_client(cs, command, &url, transport, token.as_deref(), opts).await?;
    let wait = opts.answer_timeout;
    let script_part = async {
        let left = deadline.saturating_duration_since(Instant::now());
        match server.accept(left).await {
            Some((link, facts)) => match Peer::new(link, transport, facts, wait, deadline) {
                Ok(peer) => script(cs, peer, token.clone()).await,
                Err(e) => ScriptReport {
                    abort: Some(e),
                    ..ScriptReport::default()
                },
            },
            None => ScriptReport {
                abort: Some("the client did not connect".into()),
                ..ScriptReport::default()
            },
        }
    };
    let (report, run) = tokio::join!(script_part, client.finish(deadline));
    Ok((report, run))
}

async fn on_stdio(
    cs: &'static ClientScenario,
    command: &[String],
    token: Option<String>,
    opts: &ClientOptions,
    deadline: Instant,
) -> Result<(ScriptReport, ClientRun), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary folder: {e}"))?;
    let report_path = dir.path().join("report.json");
    let host = dir.path().join("host");
    let mut line = format!(
        "exec {} scripted-host --scenario {} --report {}",
        quote(&opts.me.display().to_string()),
        quote(cs.scenario.name),
        quote(&report_path.display().to_string()),
    );
    if let Some(t) = &token {
        line.push_str(&format!(" --auth-token {}", quote(t)));
    }
    std::fs::write(&host, format!("#!/bin/sh\n{line}\n"))
        .map_err(|e| format!("cannot write {}: {e}", host.display()))?;
    set_executable(&host)?;
    let client = start_client(
        cs,
        command,
        &host.display().to_string(),
        Transport::Stdio,
        token.as_deref(),
        opts,
    )
    .await?;
    let run = client.finish(deadline).await;
    // The scripted host may still be writing its report.
    let mut report = None;
    let until = Instant::now() + Duration::from_secs(3);
    while report.is_none() && Instant::now() < until {
        report = std::fs::read_to_string(&report_path)
            .ok()
            .and_then(|t| serde_json::from_str::<ScriptReport>(&t).ok());
        if report.is_none() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let report = report.unwrap_or_else(|| ScriptReport {
        abort: Some(
            "the scripted host wrote no report: the client did not start it, or killed it".into(),
        ),
        ..ScriptReport::default()
    });
    Ok((report, run))
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn set_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", path.display()))
}

/// The scripted host of `name` on this process's stdin and stdout; its
/// report goes to `report` (also when it is told to stop by SIGTERM).
pub async fn serve_stdio(name: &str, report: &Path, token: Option<String>) -> ExitCode {
    let Some(cs) = all().into_iter().find(|c| c.scenario.name == name) else {
        eprintln!("a2e-conformance: unknown client scenario `{name}`");
        return ExitCode::from(2);
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let peer = match Peer::new(
        stdio::own(),
        Transport::Stdio,
        Facts::default(),
        Duration::from_secs(10),
        deadline,
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("a2e-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("a2e-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let found = tokio::select! {
        found = script(cs, peer, token) => found,
        _ = term.recv() => ScriptReport {
            abort: Some("the scripted host was stopped (SIGTERM) before its script ended".into()),
            ..ScriptReport::default()
        },
    };
    let text = serde_json::to_string(&found).unwrap_or_default();
    let tmp = report.with_extension("tmp");
    if std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, report))
        .is_err()
    {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// The `client/wire` results of one transport from the merged `log`.
fn wire_results(log: &WireLog, transport: Transport) -> Vec<CheckResult> {
    let mut rec = Recorder::new("client/wire", WIRE);
    report_rules(&mut rec, log, WIRE_RULES);
    let mut out = rec.finish(None);
    if transport == Transport::Stdio {
        let mut rec = Recorder::new("client/wire-framing", FRAMING);
        report_rules(&mut rec, log, &[("client.wire.compact", Rule::Compact)]);
        out.extend(rec.finish(None));
    }
    out
}

/// Runs every selected scenario on each transport, printing as it goes.
pub async fn run_all(
    command: &[String],
    transports: &[Transport],
    selection: &Selection,
    opts: &ClientOptions,
    max_time: Duration,
    mut seen: impl FnMut(Transport, &CheckResult),
) -> Vec<(Transport, Vec<CheckResult>)> {
    let end = Instant::now() + max_time;
    let mut out = Vec::new();
    for &t in transports {
        let mut results = Vec::new();
        let mut log = WireLog::default();
        for cs in all() {
            if !cs.scenario.on.includes(t)
                || !selection.includes(cs.scenario.name, cs.scenario.area)
            {
                continue;
            }
            let left = end.saturating_duration_since(Instant::now());
            let got = if left.is_zero() {
                let mut rec = Recorder::new(cs.scenario.name, cs.scenario.checks);
                rec.skip_all("the run's time limit was reached");
                rec.finish(None)
            } else {
                let opts = ClientOptions {
                    scenario_timeout: opts.scenario_timeout.min(left),
                    ..opts.clone()
                };
                let (got, wire) = run_client(cs, t, command, &opts).await;
                log.merge(&wire);
                got
            };
            for r in got {
                seen(t, &r);
                results.push(r);
            }
        }
        if selection.includes("client/wire", conformance_harness::scenario::Area::Client) {
            for r in wire_results(&log, t) {
                seen(t, &r);
                results.push(r);
            }
        }
        out.push((t, results));
    }
    out
}

/// The `a2e-conformance` binary, to start as the scripted host: this
/// program, or one of that name beside it (when a front such as `cargo
/// xtask` runs the suite in its own process).
pub fn this_program() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    if me.file_stem().is_some_and(|n| n == "a2e-conformance") {
        return Ok(me);
    }
    let beside = me.with_file_name("a2e-conformance");
    if beside.exists() {
        return Ok(beside);
    }
    Err(format!(
        "`{}` is not a2e-conformance and none is beside it",
        me.display()
    ))
}
