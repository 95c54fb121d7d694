//! `a2e run` and `a2e validate`: document files on the embedded host.
//!
//! Which documents are recognised, and how, is [`a2e_document`]'s business;
//! this module runs them with progress on stderr and the outcome on stdout.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use a2e_document::{Document, parse_document};
use a2e_host::Host;
use a2e_host::{CallOptions, EventReceiver, EventStream};
use a2e_proto::Message;
use tokio_util::sync::CancellationToken;

/// Exit code: the chain failed.
pub(crate) const EXIT_FAILED: u8 = 1;
/// Exit code: invalid input (unreadable file, bad JSON, invalid chain).
pub(crate) const EXIT_INVALID: u8 = 2;

fn load_document(file: &Path, input: Option<&str>) -> Result<Document, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    parse_document(&text, input).map_err(|e| format!("{}: {e}", file.display()))
}

/// Runs an ACMP DAG document: progress on stderr, the outcome on stdout.
async fn run_dag_file(
    host: &Arc<Host>,
    dag: acmp_dag::Dag,
    cancel: &CancellationToken,
) -> ExitCode {
    let outcome = a2e_host::acmp::run_dag(
        host,
        dag,
        |event| {
            if let Some(line) = a2e_host::acmp::describe(event) {
                eprintln!("{line}");
            }
        },
        cancel,
    )
    .await;
    match outcome {
        Ok(outcome) => {
            let json = a2e_host::acmp::outcome_json(&outcome);
            print_out(&serde_json::to_string_pretty(&json).unwrap_or_default());
            if outcome.status == acmp_dag::DagStatus::Completed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_FAILED)
            }
        }
        Err(e) => {
            eprintln!("a2e: {e}");
            ExitCode::from(EXIT_INVALID)
        }
    }
}

/// Runs a chain file (or an ACMP DAG document); the final `chain/resp` (or
/// the DAG outcome) goes to stdout, progress to stderr.
pub(crate) async fn run_file(
    host: &Arc<Host>,
    file: &Path,
    input: Option<&str>,
    events: bool,
    vars: &[String],
) -> ExitCode {
    let doc = match load_document(file, input) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("a2e: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let cancel = CancellationToken::new();
    let interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            interrupt.cancel();
        }
    });
    let req = match doc {
        Document::Chain(req) => *req,
        Document::Dag(dag) => return run_dag_file(host, *dag, &cancel).await,
        Document::Ontheia(doc) => {
            return run_ontheia_file(host, &doc, input.unwrap_or_default(), events, vars, cancel)
                .await;
        }
        other => {
            eprintln!("a2e: cannot run a {} document yet", other.kind());
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let result = if events {
        let (tx, rx) = EventStream::channel(256);
        let printer = tokio::spawn(print_events(rx));
        let options = CallOptions::new().events(tx).cancel(&cancel);
        let r = a2e_host::chains::run_request(host, &req, options).await;
        let _ = printer.await;
        r
    } else {
        let total = req.nodes.len() as u64;
        let progress = Progress::new(total);
        let bar = progress.clone();
        let r = a2e_host::chains::run_chain(
            host,
            "",
            &req,
            Box::new(move |done, total, node| bar.update(done, total, node)),
            &cancel,
        )
        .await;
        progress.finish();
        r
    };
    match result {
        Ok(resp) => {
            let ok = resp.success;
            let json = serde_json::to_string_pretty(&Message::from(resp)).unwrap_or_default();
            print_out(&json);
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_FAILED)
            }
        }
        Err(e) => {
            eprintln!("a2e: invalid chain: {e} ({})", e.code());
            ExitCode::from(EXIT_INVALID)
        }
    }
}

/// Validates a chain file or an ACMP DAG document: exit 0 and a summary, or
/// exit 2 and the error.
pub(crate) fn validate_file(host: &Arc<Host>, file: &Path) -> ExitCode {
    let req = match load_document(file, None) {
        Ok(Document::Chain(r)) => *r,
        Ok(Document::Dag(dag)) => {
            let n = dag.tasks.len();
            return match acmp_dag::ValidatedDag::new(*dag, &acmp_dag::ValidationLimits::default()) {
                Ok(_) => {
                    print_out(&format!("{}: valid DAG of {n} tasks", file.display()));
                    ExitCode::SUCCESS
                }
                Err(report) => {
                    eprintln!("a2e: {}: {report}", file.display());
                    ExitCode::from(EXIT_INVALID)
                }
            };
        }
        Ok(Document::Ontheia(doc)) => {
            print_out(&format!(
                "{}: valid Ontheia chain of {} steps",
                file.display(),
                doc.steps.len()
            ));
            return ExitCode::SUCCESS;
        }
        Ok(other) => {
            eprintln!("a2e: cannot validate a {} document yet", other.kind());
            return ExitCode::from(EXIT_INVALID);
        }
        Err(e) => {
            eprintln!("a2e: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    match a2e_host::chains::validate(host, &req) {
        Ok(n) => {
            print_out(&format!("{}: valid chain of {n} nodes", file.display()));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("a2e: {}: {e} ({})", file.display(), e.code());
            ExitCode::from(EXIT_INVALID)
        }
    }
}

/// Runs an Ontheia chain: its events (JSON lines with `--events`, else one line
/// per step) on stderr, every stored step result as JSON on stdout. Exit 1 when
/// a step failed.
async fn run_ontheia_file(
    host: &Arc<Host>,
    doc: &ontheia::Document,
    input: &str,
    events: bool,
    flags: &[String],
    cancel: CancellationToken,
) -> ExitCode {
    // A person's own run: `user_id` "local" and `agent_id` "a2e" unless the
    // configuration's `[ontheia.globals]` say otherwise.
    let mut vars = host.config().ontheia.globals.clone();
    vars.entry("user_id".into())
        .or_insert_with(|| "local".into());
    vars.entry("agent_id".into())
        .or_insert_with(|| "a2e".into());
    for flag in flags {
        match flag.split_once('=') {
            Some((name, value)) if !name.is_empty() => {
                vars.insert(name.to_owned(), value.to_owned());
            }
            _ => {
                eprintln!("a2e: --var takes NAME=VALUE, got `{flag}`");
                return ExitCode::from(EXIT_INVALID);
            }
        }
    }
    let globals =
        a2e_host::ontheia_host::globals(input, vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let on_event = move |event: serde_json::Value| {
        if events {
            eprintln!("{event}");
        } else if event["event"] != "message" {
            let step = event["step_id"].as_str().unwrap_or_default();
            let what = event["event"].as_str().unwrap_or_default();
            match event["error"].as_str() {
                Some(error) => eprintln!("[{step}] {what}: {error}"),
                None => eprintln!("[{step}] {what}"),
            }
        }
    };
    match a2e_host::ontheia_host::run(host, "", doc, &globals, on_event, cancel).await {
        Ok(outcome) => {
            print_out(&serde_json::to_string_pretty(&outcome.to_value()).unwrap_or_default());
            if outcome.any_failed() {
                ExitCode::from(EXIT_FAILED)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("a2e: {e}");
            ExitCode::from(EXIT_INVALID)
        }
    }
}

/// Progress on stderr: a bar on a terminal, plain lines otherwise.
#[derive(Clone)]
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{bar:30}] {pos}/{len} nodes {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        Self { bar }
    }

    fn update(&self, done: usize, total: usize, node: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(node.to_owned());
            }
            None => eprintln!("[{done}/{total}] {node}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Prints each event (a message, or each line of a run) to stderr as a JSON line.
pub(crate) async fn print_events(mut rx: EventReceiver) {
    while let Some(out) = rx.recv().await {
        for json in out.json_texts() {
            eprintln!("{}", String::from_utf8_lossy(&json));
        }
    }
}

/// Writes a line to stdout; a closed stdout (e.g. `| head`) is not an error.
pub(crate) fn print_out(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}
