//! `a2e run` and `a2e validate`: chain files on the embedded host.
//!
//! A chain file is a `chain/req` message, or a bare object with `nodes` and
//! `entry_node` (and optionally `initial_input`, `timeout`, `chain_id`). A
//! document with `tasks` (and no `nodes`) is an ACMP DAG, run by the ACMP
//! orchestrator over the host's tools and skills.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use a2e_proto::{ChainRequest, Message};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::host::Host;

/// Exit code: the chain failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: invalid input (unreadable file, bad JSON, invalid chain).
pub const EXIT_INVALID: u8 = 2;

/// Reads a chain file into a request, merging `input` (a JSON object) over its
/// `initial_input`.
pub fn load_chain(file: &Path, input: Option<&str>) -> Result<ChainRequest, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    parse_chain(&text, input).map_err(|e| format!("{}: {e}", file.display()))
}

/// Parses chain text (see [`load_chain`]).
pub fn parse_chain(text: &str, input: Option<&str>) -> Result<ChainRequest, String> {
    let mut value: Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Some(obj) = value.as_object_mut() else {
        return Err("a chain file must hold a JSON object".into());
    };
    obj.entry("type")
        .or_insert_with(|| Value::from("chain/req"));
    let bytes = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
    let mut req = match a2e_proto::decode(&bytes) {
        Ok(Message::ChainRequest(req)) => req,
        Ok(other) => {
            return Err(format!(
                "expected a chain/req, found `{}`",
                other.type_str()
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    if let Some(input) = input {
        let extra: Map<String, Value> = match serde_json::from_str(input) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err("--input must be a JSON object".into()),
            Err(e) => return Err(format!("--input is not valid JSON: {e}")),
        };
        req.initial_input.extend(extra);
    }
    Ok(req)
}

/// What a file to run holds.
enum Document {
    Chain(Box<ChainRequest>),
    Dag(acmp_dag::Dag),
}

fn load_document(file: &Path, input: Option<&str>) -> Result<Document, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not valid JSON: {e}", file.display()))?;
    if crate::acmp::is_dag_document(&value) {
        if input.is_some() {
            return Err("--input applies to chains; a DAG's inputs are in its tasks".into());
        }
        let dag: acmp_dag::Dag = serde_json::from_value(value)
            .map_err(|e| format!("{}: not an ACMP DAG: {e}", file.display()))?;
        return Ok(Document::Dag(dag));
    }
    parse_chain(&text, input)
        .map(|r| Document::Chain(Box::new(r)))
        .map_err(|e| format!("{}: {e}", file.display()))
}

/// Runs an ACMP DAG document: progress on stderr, the outcome on stdout.
async fn run_dag_file(
    host: &Arc<Host>,
    dag: acmp_dag::Dag,
    cancel: &CancellationToken,
) -> ExitCode {
    let outcome = crate::acmp::run_dag(
        host,
        dag,
        |event| {
            if let Some(line) = crate::acmp::describe(event) {
                eprintln!("{line}");
            }
        },
        cancel,
    )
    .await;
    match outcome {
        Ok(outcome) => {
            let json = crate::acmp::outcome_json(&outcome);
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
pub async fn run_file(
    host: &Arc<Host>,
    file: &Path,
    input: Option<&str>,
    events: bool,
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
        Document::Dag(dag) => return run_dag_file(host, dag, &cancel).await,
    };
    let result = if events {
        let (tx, mut rx) = mpsc::channel::<Message>(256);
        let printer = tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                eprintln!("{}", String::from_utf8_lossy(&msg.to_json()));
            }
        });
        let r = crate::chains::run_request(host, "", &req, Some(tx), &cancel).await;
        let _ = printer.await;
        r
    } else {
        let total = req.nodes.len() as u64;
        let progress = Progress::new(total);
        let bar = progress.clone();
        let r = crate::chains::run_chain(
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
pub fn validate_file(host: &Arc<Host>, file: &Path) -> ExitCode {
    let req = match load_document(file, None) {
        Ok(Document::Chain(r)) => *r,
        Ok(Document::Dag(dag)) => {
            let n = dag.tasks.len();
            return match acmp_dag::ValidatedDag::new(dag, &acmp_dag::ValidationLimits::default()) {
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
        Err(e) => {
            eprintln!("a2e: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    match crate::chains::validate(host, &req) {
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

/// Writes a line to stdout; a closed stdout (e.g. `| head`) is not an error.
pub fn print_out(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}
