//! `a2e run` and `a2e validate`: document files on the embedded host.
//!
//! Which documents are recognised, and how, is [`a2e_document`]'s business;
//! this module runs them with progress on stderr and the outcome on stdout.

use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use a2e_document::{Document, parse_document};
use a2e_host::Host;
use a2e_host::{CallOptions, EventReceiver, EventStream};
use a2e_proto::Message;
use tokio_util::sync::CancellationToken;

use super::progress::{Phase, Progress};

/// Exit code: the chain failed.
pub(crate) const EXIT_FAILED: u8 = 1;
/// Exit code: invalid input (unreadable file, bad JSON, invalid chain).
pub(crate) const EXIT_INVALID: u8 = 2;

fn load_document(file: &Path, input: Option<&str>) -> Result<Document, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    parse_document(&text, input).map_err(|e| format!("{}: {e}", file.display()))
}

/// Runs an ACMP DAG document: progress on stderr (with `events`, each
/// task's transitions as the `chain/event`s a `dag/req` streams), the
/// outcome on stdout.
async fn run_dag_file(
    host: &Arc<Host>,
    dag: acmp_dag::Dag,
    events: bool,
    cancel: &CancellationToken,
) -> ExitCode {
    let progress = Arc::new(Mutex::new(Progress::new(format!("DAG `{}`", dag.dag_id))));
    let shown = progress.clone();
    let outcome = a2e_host::acmp::run_dag(
        host,
        dag,
        move |event| {
            let Some(ev) = a2e_host::acmp::event_of(event, "", event.seq) else {
                return;
            };
            if events {
                eprintln!("{}", String::from_utf8_lossy(&Message::from(ev).to_json()));
            } else if let Some(phase) = Phase::parse(ev.phase.as_str()) {
                let mut progress = shown.lock().unwrap_or_else(PoisonError::into_inner);
                progress.event(&ev.node_id, phase, &ev.error);
            }
        },
        cancel,
    )
    .await;
    let summary = |outcome: &str| {
        if !events {
            let progress = progress.lock().unwrap_or_else(PoisonError::into_inner);
            progress.finish(outcome);
        }
    };
    match outcome {
        Ok(outcome) => {
            summary(&format!("{:?}", outcome.status).to_lowercase());
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
        Document::Dag(dag) => return run_dag_file(host, *dag, events, &cancel).await,
        Document::Ontheia(doc) => {
            return run_ontheia_file(host, &doc, input.unwrap_or_default(), events, vars, cancel)
                .await;
        }
        other => {
            eprintln!("a2e: cannot run a {} document yet", other.kind());
            return ExitCode::from(EXIT_INVALID);
        }
    };
    // The events are what progress is made of: asked for whatever the file says.
    let mut req = req;
    req.streaming = true;
    let (tx, rx) = EventStream::channel(256);
    let printer = if events {
        tokio::spawn(async move {
            print_events(rx).await;
            None
        })
    } else {
        let progress = Progress::new(format!("chain `{}`", req.chain_id));
        tokio::spawn(async move { Some(show_progress(rx, progress).await) })
    };
    let options = CallOptions::new().events(tx).cancel(&cancel);
    let result = a2e_host::chains::run_request(host, &req, options).await;
    let progress = printer.await.ok().flatten();
    match result {
        Ok(resp) => {
            let ok = resp.success;
            if let Some(progress) = progress {
                progress.finish(if ok { "succeeded" } else { "failed" });
            }
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
    let mut progress = Progress::new("Ontheia chain");
    let result = {
        let progress = &mut progress;
        let on_event = move |event: serde_json::Value| {
            if events {
                eprintln!("{event}");
                return;
            }
            let Some(phase) = event["event"].as_str().and_then(Phase::parse) else {
                return;
            };
            // A step inside a loop or a retry is known by its place.
            let step = event["key"]
                .as_str()
                .or(event["step_id"].as_str())
                .unwrap_or_default();
            let error = event["error"].as_str().unwrap_or_default();
            progress.event(step, phase, error);
        };
        a2e_host::ontheia_host::run(host, "", doc, &globals, on_event, cancel).await
    };
    match result {
        Ok(outcome) => {
            if !events {
                progress.finish(if outcome.any_failed() {
                    "failed"
                } else {
                    "succeeded"
                });
            }
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

/// Prints a line of `progress` for each `chain/event` of `rx`; the progress
/// when the run's events end.
async fn show_progress(mut rx: EventReceiver, mut progress: Progress) -> Progress {
    while let Some(out) = rx.recv().await {
        for message in out.into_messages() {
            if let Message::ChainEvent(ev) = message
                && let Some(phase) = Phase::parse(ev.phase.as_str())
            {
                progress.event(&ev.node_id, phase, &ev.error);
            }
        }
    }
    progress
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
