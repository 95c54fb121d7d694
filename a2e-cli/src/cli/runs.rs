//! `a2e runs list | show ID | cancel ID | attach ID | replay ID | fork ID`
//! (and `waiting`, `approve`, `deny`: `approvals.rs`), `a2e run --detach`,
//! and durable runs for `a2e serve`.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use a2e_host::Host;
use a2e_host::config::HostConfig;
use a2e_journal::nats::{NatsJournal, NatsOptions};
use a2e_journal::{Journal, NewRun, RunFilter, RunId, RunItem, RunKind, RunStatus};
use futures::StreamExt;

use super::RunsCommand;
use super::run::print_out;
use super::runs_view::{Opened, Row};

/// Exit code of a run that is not there, or a journal that does not open.
const FAILED: u8 = 1;
/// Exit code of invalid input.
const INVALID: u8 = 2;

fn fail(code: u8, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("a2e: {message}");
    ExitCode::from(code)
}

/// Runs `a2e runs …` on the journal of `config` (the cluster's when one is
/// configured).
pub async fn runs(config: &HostConfig, command: &RunsCommand) -> ExitCode {
    let opened = match super::runs_view::open(config).await {
        Ok(opened) => opened,
        Err(e) => return fail(FAILED, e),
    };
    on_journal(&opened, command).await
}

/// Runs `a2e runs …` on an opened journal.
async fn on_journal(opened: &Opened, command: &RunsCommand) -> ExitCode {
    let journal = &*opened.journal;
    let place = &opened.place;
    match command {
        RunsCommand::List {
            status,
            agent,
            limit,
            json,
        } => {
            // `waiting` is a running run whose calls wait for a decision.
            let only_waiting = status.as_deref() == Some("waiting");
            let status = match status.as_deref().map(|s| (s, RunStatus::parse(s))) {
                None => None,
                Some(_) if only_waiting => Some(RunStatus::Running),
                Some((_, Some(s))) => Some(s),
                Some((s, None)) => {
                    return fail(
                        INVALID,
                        format!(
                            "unknown status `{s}` (running, waiting, succeeded, failed, cancelled)"
                        ),
                    );
                }
            };
            let filter = RunFilter {
                agent: agent.clone(),
                status,
                limit: (*limit).max(1),
            };
            let loaded = match journal.list_runs(&filter).await {
                Ok(l) => l,
                Err(e) => return fail(FAILED, e),
            };
            let mut rows = Vec::with_capacity(loaded.items.len());
            for summary in loaded.items {
                let row = Row::load(opened, summary).await;
                if !only_waiting || row.waits() {
                    rows.push(row);
                }
            }
            if *json {
                for row in &rows {
                    print_out(&row.json().to_string());
                }
            } else {
                for line in super::runs_view::table(&rows) {
                    print_out(&line);
                }
            }
            for bad in loaded.corrupt {
                eprintln!("a2e: run {} does not load: {}", bad.run_id, bad.message);
            }
            ExitCode::SUCCESS
        }
        RunsCommand::Show { id } => {
            let run = match RunId::parse(id) {
                Ok(r) => r,
                Err(e) => return fail(INVALID, e),
            };
            match journal.show_run(&run).await {
                Ok(Some(state)) => {
                    let shown = super::runs_view::show_json(opened, state).await;
                    print_out(&serde_json::to_string_pretty(&shown).unwrap_or_default());
                    ExitCode::SUCCESS
                }
                Ok(None) => fail(FAILED, format!("no run `{run}` in {place}")),
                Err(e) => fail(FAILED, e),
            }
        }
        RunsCommand::Cancel { id } => {
            let run = match RunId::parse(id) {
                Ok(r) => r,
                Err(e) => return fail(INVALID, e),
            };
            match journal.request_cancel(&run).await {
                Ok(true) => {
                    print_out(&format!("cancel of run {run} asked for"));
                    ExitCode::SUCCESS
                }
                Ok(false) => fail(FAILED, format!("run `{run}` is unknown or has finished")),
                Err(e) => fail(FAILED, e),
            }
        }
        RunsCommand::Waiting { json } => super::approvals::waiting(journal, *json).await,
        RunsCommand::Approve { id, node, args } => {
            super::approvals::approve(journal, id, node.as_deref(), args.as_deref()).await
        }
        RunsCommand::Deny { id, node, reason } => {
            super::approvals::deny(journal, id, node.as_deref(), reason).await
        }
        RunsCommand::Replay { id } => {
            let run = match RunId::parse(id) {
                Ok(r) => r,
                Err(e) => return fail(INVALID, e),
            };
            replay(journal, &run).await
        }
        RunsCommand::Fork { .. } => fail(INVALID, "a fork runs on a host (a2e runs fork)"),
        RunsCommand::Attach { id, from_seq } => {
            let run = match RunId::parse(id) {
                Ok(r) => r,
                Err(e) => return fail(INVALID, e),
            };
            follow(journal, &run, *from_seq).await
        }
    }
}

/// Prints what run `run` journaled: its events, then its answer.
async fn replay(journal: &dyn Journal, run: &RunId) -> ExitCode {
    let state = match journal.show_run(run).await {
        Ok(Some(state)) => state,
        Ok(None) => return fail(FAILED, format!("no run `{run}`")),
        Err(e) => return fail(FAILED, e),
    };
    let mut from = 0;
    loop {
        let events = match journal.events(run, from, 1000).await {
            Ok(events) => events,
            Err(e) => return fail(FAILED, e),
        };
        let Some(last) = events.last().map(|e| e.seq) else {
            break;
        };
        for e in &events {
            print_out(&e.event.to_string());
        }
        from = last + 1;
    }
    match state.answer {
        Some(answer) if state.summary.status.is_finished() => {
            print_out(&answer.to_string());
            if state.summary.status == RunStatus::Succeeded {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(FAILED)
            }
        }
        _ => fail(
            FAILED,
            format!("run `{run}` has not finished: its events so far are above"),
        ),
    }
}

/// `a2e runs fork ID --from NODE [--input JSON]` on `host`: the forked run,
/// run here; its answer printed.
pub async fn fork(host: &Arc<Host>, id: &str, from: &str, input: Option<&str>) -> ExitCode {
    use a2e_host::runs::fork::{Fork, ForkError, prepare, run_fork};
    let parent = match RunId::parse(id) {
        Ok(r) => r,
        Err(e) => return fail(INVALID, e),
    };
    let input = match input.map(serde_json::from_str::<serde_json::Value>) {
        None => None,
        Some(Ok(serde_json::Value::Object(map))) => Some(map),
        Some(Ok(_)) => return fail(INVALID, ForkError::InputNotObject),
        Some(Err(e)) => return fail(INVALID, format!("--input is not JSON: {e}")),
    };
    if let Err(e) = a2e_host::runs::enable(host).await {
        return fail(FAILED, e);
    }
    let fork = Fork {
        parent: parent.clone(),
        from: from.to_owned(),
        input,
        req_id: format!("fork-{}", uuid::Uuid::new_v4().simple()),
        streaming: false,
        agent: None,
    };
    let prepared = match prepare(host, fork).await {
        Ok(p) => p,
        Err(e) => return fail(FAILED, e),
    };
    eprintln!(
        "a2e: run {} forked from run {parent} at `{from}` ({} journaled results taken)",
        prepared.run_id,
        prepared.copied.len()
    );
    let resp = run_fork(host, prepared, a2e_host::CallOptions::new()).await;
    print_out(&serde_json::to_string(&resp).unwrap_or_default());
    if resp.success {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FAILED)
    }
}

/// Prints run `run`'s events from `from_seq` on, then its answer.
async fn follow(journal: &dyn Journal, run: &RunId, from_seq: u64) -> ExitCode {
    let mut items = journal.subscribe(run, from_seq);
    while let Some(item) = items.next().await {
        match item {
            Ok(RunItem::Event(e)) => print_out(&e.event.to_string()),
            Ok(RunItem::Finished { status, answer }) => {
                print_out(&answer.to_string());
                return if status == RunStatus::Succeeded {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(FAILED)
                };
            }
            Err(e) => return fail(FAILED, e),
        }
    }
    fail(
        FAILED,
        format!("run `{run}`: the journal ended before its answer"),
    )
}

/// The agent a run handed over with `a2e run --detach` belongs to.
pub const DETACHED_AGENT: &str = "a2e";

/// `a2e run FILE --detach`: journals the chain in the cluster's journal,
/// unleased, so that a host of the cluster takes it over and runs it;
/// prints the run id.
pub async fn detach(host: &Arc<Host>, file: &Path, input: Option<&str>) -> ExitCode {
    let config = host.config();
    if !config.cluster.enabled() {
        return fail(
            INVALID,
            "--detach hands the run to a cluster's hosts: it needs `[cluster] nats_url` \
             (or run the chain on `a2e serve` and attach to it)",
        );
    }
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => return fail(INVALID, format!("{}: {e}", file.display())),
    };
    let req = match a2e_document::parse_document(&text, input) {
        Ok(a2e_document::Document::Chain(req)) => *req,
        Ok(other) => {
            return fail(
                INVALID,
                format!("--detach runs A2E chains, not a {} document", other.kind()),
            );
        }
        Err(e) => return fail(INVALID, format!("{}: {e}", file.display())),
    };
    if let Err(e) = a2e_host::chains::validate(host, &req) {
        return fail(INVALID, format!("{}: {e} ({})", file.display(), e.code()));
    }
    let request = match serde_json::to_value(&req) {
        Ok(v) => v,
        Err(e) => return fail(INVALID, e),
    };
    let options = NatsOptions {
        prefix: config.cluster.prefix.clone(),
        ..NatsOptions::default()
    };
    let journal = match NatsJournal::connect(&config.cluster.nats_url, options).await {
        Ok(j) => j,
        Err(e) => return fail(FAILED, format!("cannot open the cluster's journal: {e}")),
    };
    let run = RunId::generate();
    let created = journal
        .create_run(NewRun {
            run_id: run.clone(),
            kind: RunKind::Chain,
            agent: DETACHED_AGENT.into(),
            request,
        })
        .await;
    match created {
        Ok(()) => {
            print_out(run.as_str());
            ExitCode::SUCCESS
        }
        Err(e) => fail(FAILED, e),
    }
}
