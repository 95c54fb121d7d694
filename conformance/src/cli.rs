//! The `a2e-conformance` command line.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::check::CheckResult;
use crate::host::{Options, Target};
use crate::link::stdio::Stderr;
use crate::report;
use crate::runner::{self, Selection};
use crate::scenario::{Area, Transport};

/// Checks an A2E host or client against every testable rule of the A2E
/// specs (core, tools, skills, chains, proc), over stdio, WebSocket and
/// HTTP+SSE, and a plugin process against the plugin protocol.
#[derive(Debug, Parser)]
#[command(name = "a2e-conformance", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a host: `host -- CMD…` (stdio, a new process per session) or `host --url ws://…|http://…`.
    Host(HostArgs),
    /// Check a client: `client -- CMD…`; the client gets the scenario in
    /// A2E_CONFORMANCE_SCENARIO and the host as its last argument.
    Client(ClientArgs),
    /// Check a plugin process (what a `[[plugins]]` entry starts, in any
    /// language): `plugin -- CMD…`.
    Plugin(PluginArgs),
    /// List every check (`--markdown` for the README's table).
    List {
        /// Markdown tables per area.
        #[arg(long)]
        markdown: bool,
    },
    /// Serve the fixture profile's tools over stdio (an A2E plugin a host mounts).
    FixturePlugin,
    /// Drive a2e-client through the client scenario named in
    /// A2E_CONFORMANCE_SCENARIO against TARGET (a URL, or a host program for stdio).
    ClientDriver {
        /// The host: `ws://…`, `http://…`, or a program to start.
        target: String,
    },
    /// The scripted host of a client scenario, on stdin and stdout.
    #[command(hide = true)]
    ScriptedHost {
        /// The client scenario.
        #[arg(long)]
        scenario: String,
        /// Where the checks' results go.
        #[arg(long)]
        report: PathBuf,
        /// The token the client is given.
        #[arg(long)]
        auth_token: Option<String>,
    },
    /// A host that breaks one rule: a proxy in front of a host command.
    #[command(hide = true)]
    Mutant {
        /// The rule to break.
        #[arg(long = "break")]
        rule: String,
        /// The host command.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

/// Options of a run.
#[derive(Debug, Args)]
pub struct Common {
    /// Run only this scenario (repeatable).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Run only this area: core, tools, skills, chains, proc, transport (repeatable).
    #[arg(long = "suite", value_name = "AREA")]
    pub suites: Vec<String>,
    /// Check ids expected to fail, one a line (`#` comments); the run fails
    /// only on other failures, and on listed checks that pass.
    #[arg(long, value_name = "FILE")]
    pub expected_failures: Option<PathBuf>,
    /// Write `DIR/<scenario>/checks.json` for every scenario.
    #[arg(long, value_name = "DIR")]
    pub json: Option<PathBuf>,
    /// The peer's shared secret (handshake `auth_token`, bearer token).
    #[arg(long, value_name = "TOKEN")]
    pub auth_token: Option<String>,
    /// Seconds one answer may take.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub answer_timeout: u64,
    /// Seconds one scenario may take.
    #[arg(long, default_value_t = 90, value_name = "SECS")]
    pub scenario_timeout: u64,
    /// Seconds the whole run may take.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub max_time: u64,
    /// Show the peer's stderr (discarded by default).
    #[arg(long)]
    pub peer_stderr: bool,
}

/// `host`.
#[derive(Debug, Args)]
pub struct HostArgs {
    /// The run's options.
    #[command(flatten)]
    pub common: Common,
    /// A running host: `ws://host:port/` or `http://host:port/`.
    #[arg(long, conflicts_with = "command")]
    pub url: Option<String>,
    /// The host command (after `--`), spoken to over stdio.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `plugin`.
#[derive(Debug, Args)]
pub struct PluginArgs {
    /// The tool to call (default: the first one the plugin lists).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The arguments of that call, a JSON object (default: a value for each
    /// required parameter).
    #[arg(long, value_name = "JSON")]
    pub arguments: Option<String>,
    /// Seconds one answer may take.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub answer_timeout: u64,
    /// Write `DIR/plugin/<scenario>/checks.json` for every scenario.
    #[arg(long, value_name = "DIR")]
    pub json: Option<PathBuf>,
    /// Show the plugin's stderr (discarded by default).
    #[arg(long)]
    pub peer_stderr: bool,
    /// The plugin command (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `client`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// The run's options.
    #[command(flatten)]
    pub common: Common,
    /// Transports to run the scenarios on: stdio, ws, http (repeatable; default stdio).
    #[arg(long = "transport", value_name = "NAME")]
    pub transports: Vec<String>,
    /// The client command (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// Runs the command line `args` (the program name first); the exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Command::FixturePlugin => match a2e_plugin::serve(crate::profile::fixture_plugin()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&format!("the fixture plugin stopped: {e}")),
        },
        Command::List { markdown } => {
            let entries = crate::catalog_entries();
            let text = if markdown {
                report::markdown(&entries)
            } else {
                report::plain(&entries)
            };
            // A reader that stops early (`| head`) is no error of ours.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
            ExitCode::SUCCESS
        }
        other => match runtime() {
            Ok(rt) => {
                let code = rt.block_on(run(other));
                // A read of stdin blocks a runtime thread until the peer closes
                // it; the run is over, so that thread is not waited for.
                rt.shutdown_background();
                code
            }
            Err(e) => fail(&format!("cannot start the runtime: {e}")),
        },
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

fn fail(message: &str) -> ExitCode {
    eprintln!("a2e-conformance: {message}");
    ExitCode::from(2)
}

async fn run(command: Command) -> ExitCode {
    match command {
        Command::Host(args) => host(args).await,
        Command::Client(args) => client(args).await,
        Command::Plugin(args) => plugin(args).await,
        Command::ClientDriver { target } => crate::client::driver::main(&target).await,
        Command::ScriptedHost {
            scenario,
            report,
            auth_token,
        } => crate::client::serve_stdio(&scenario, &report, auth_token).await,
        Command::Mutant { rule, command } => crate::mutant::main(&rule, &command).await,
        Command::FixturePlugin | Command::List { .. } => ExitCode::SUCCESS,
    }
}

/// The selection and expected failures of `common`, checked against the catalog.
pub fn selection(common: &Common) -> Result<(Selection, BTreeSet<String>), String> {
    let mut suites = Vec::new();
    for name in &common.suites {
        suites.push(Area::parse(name).ok_or_else(|| {
            format!("unknown suite `{name}` (core, tools, skills, chains, proc, transport, client, plugin)")
        })?);
    }
    let entries = crate::catalog_entries();
    for name in &common.scenarios {
        if !entries.iter().any(|e| e.name == name) {
            return Err(format!(
                "unknown scenario `{name}` (see `a2e-conformance list`)"
            ));
        }
    }
    let expected = match &common.expected_failures {
        None => BTreeSet::new(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            crate::expected::read_expected(&text)
        }
    };
    for id in &expected {
        if !entries.iter().flat_map(|e| e.checks).any(|c| c.id == id) {
            return Err(format!("the expected failures name no check `{id}`"));
        }
    }
    Ok((
        Selection {
            scenarios: common.scenarios.clone(),
            suites,
        },
        expected,
    ))
}

/// Marks, prints the closing lines, writes JSON; the exit code.
pub fn finish(
    results: &mut [CheckResult],
    expected: &BTreeSet<String>,
    json: Option<(&std::path::Path, Option<&str>)>,
) -> ExitCode {
    let t = crate::expected::tally(results, expected);
    println!("{}", report::closing(&t));
    if let Some((dir, prefix)) = json
        && let Err(e) = report::write_json(dir, prefix, results)
    {
        return fail(&e);
    }
    if t.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn host(args: HostArgs) -> ExitCode {
    let target = match (args.url, args.command.is_empty()) {
        (Some(url), _) => Target::Url(url),
        (None, false) => Target::Command(args.command),
        (None, true) => return fail("give the host as `-- CMD…` or `--url URL`"),
    };
    let (selection, expected) = match selection(&args.common) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let opts = options(&args.common);
    println!("host: {}", target.describe());
    let max_time = Duration::from_secs(args.common.max_time);
    let run = runner::run_host(target, opts, &selection, max_time, |r| {
        let mut shown = r.clone();
        shown.expected_failure = expected.contains(r.def.id);
        println!("{}", report::line(&shown));
    })
    .await;
    let mut report = match run {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    println!("{}", report.fixtures.describe());
    finish(
        &mut report.results,
        &expected,
        args.common.json.as_deref().map(|d| (d, None)),
    )
}

/// `a2e-conformance client`.
async fn client(args: ClientArgs) -> ExitCode {
    let (selection, expected) = match selection(&args.common) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let transports = match transports(&args.transports) {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    let me = match crate::client::this_program() {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let opts = crate::client::ClientOptions {
        token: args
            .common
            .auth_token
            .clone()
            .unwrap_or_else(|| "conformance-client-token".into()),
        answer_timeout: Duration::from_secs(args.common.answer_timeout.max(1)),
        scenario_timeout: Duration::from_secs(args.common.scenario_timeout.clamp(5, 300)),
        stderr: args.common.peer_stderr,
        me,
    };
    println!("client: {}", args.command.join(" "));
    let expected_ref: &BTreeSet<String> = &expected;
    let runs = crate::client::run_all(
        &args.command,
        &transports,
        &selection,
        &opts,
        Duration::from_secs(args.common.max_time),
        |t, r| {
            let mut shown = r.clone();
            shown.expected_failure = expected_ref.contains(r.def.id);
            println!("[{t}] {}", report::line(&shown));
        },
    )
    .await;
    if let Some(dir) = &args.common.json {
        for (t, results) in &runs {
            if let Err(e) = report::write_json(dir, Some(t.name()), results) {
                return fail(&e);
            }
        }
    }
    let mut all_results: Vec<CheckResult> = runs.into_iter().flat_map(|(_, r)| r).collect();
    finish(&mut all_results, &expected, None)
}

/// `a2e-conformance plugin`.
async fn plugin(args: PluginArgs) -> ExitCode {
    let arguments = match args.arguments.as_deref().map(serde_json::from_str) {
        None => None,
        Some(Ok(value @ serde_json::Value::Object(_))) => Some(value),
        Some(Ok(_)) => return fail("--arguments is not a JSON object"),
        Some(Err(e)) => return fail(&format!("--arguments is not JSON: {e}")),
    };
    let opts = crate::plugin::PluginOptions {
        tool: args.tool,
        arguments,
        answer_timeout: Duration::from_secs(args.answer_timeout.max(1)),
        stderr: if args.peer_stderr {
            Stderr::Inherit
        } else {
            Stderr::Discard
        },
    };
    println!("plugin: {}", args.command.join(" "));
    let run = crate::plugin::run(&args.command, opts, |r| println!("{}", report::line(r))).await;
    let mut results = match run {
        Ok(results) => results,
        Err(e) => return fail(&e),
    };
    finish(
        &mut results,
        &BTreeSet::new(),
        args.json.as_deref().map(|d| (d, None)),
    )
}

/// The host-run options of `common`.
pub fn options(common: &Common) -> Options {
    Options {
        auth_token: common.auth_token.clone(),
        answer_timeout: Duration::from_secs(common.answer_timeout.max(1)),
        scenario_timeout: Duration::from_secs(common.scenario_timeout.max(1)),
        stderr: if common.peer_stderr {
            Stderr::Inherit
        } else {
            Stderr::Discard
        },
    }
}

/// The transports named in `names` (default stdio; `all` for every one).
pub fn transports(names: &[String]) -> Result<Vec<Transport>, String> {
    if names.is_empty() {
        return Ok(vec![Transport::Stdio]);
    }
    let mut out = Vec::new();
    for name in names {
        if name == "all" {
            return Ok(Transport::ALL.to_vec());
        }
        out.push(
            Transport::parse(name)
                .ok_or_else(|| format!("unknown transport `{name}` (stdio, ws, http, all)"))?,
        );
    }
    Ok(out)
}
