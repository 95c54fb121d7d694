//! Durable chain runs: every `chain/req` a session runs is journaled in the
//! host's run journal (`[journal]`, the embedded SQLite file
//! `.a2e/runs.db` under the root by default), and a host that starts again
//! resumes the runs that had not finished.
//!
//! - A run gets a [`RunId`]; the journal holds its request, each runner
//!   call's start and result (keyed `run_id/node_id/attempt`), every event
//!   with its `seq`, and the final answer. A call's result is in the journal
//!   before anything downstream of it runs, and before any event reports it.
//! - A node's call carries its idempotency key `run_id/node_id/attempt` in
//!   its plugin's [`CallContext`](crate::plugin::CallContext).
//! - On resume ([`resume_unfinished`]), finished calls are not run again
//!   (their results come from the journal); a call that was running runs
//!   again with the same key when its tool is `idempotent`, and otherwise
//!   fails with code `interrupted` (its node's `on_error` decides what
//!   follows). Events already journaled are not emitted again.
//! - An agent re-attaches to a run with `chain/attach` ([`attach`]): the
//!   events it missed, each `seq` once, then the live ones, then the answer.
//! - A cancel asked for out of process (`a2e runs cancel`) is seen within a
//!   second by the host running the run.
//!
//! - An ACMP DAG a session sends (`dag/req`) is journaled and resumed the
//!   same way, as a run of kind `acmp_dag` ([`run_dag`]).
//! - A `skill/call` of an Ontheia skill or an LLM skill is journaled and
//!   resumed as a run of kind `ontheia` or `llm_skill` ([`skill_run`]).
//!
//! - With `[cluster]` the journal is in NATS JetStream and hosts share runs
//!   ([`cluster`]): nodes run on the hosts serving their toolkit, a dead
//!   coordinator's runs are taken over.
//!
//! See `docs/durability.md` at the workspace root.
//!
//! A chain run on a host with a journal file, and the run it left there:
//!
//! ```
//! use a2e_host_core::{CallOptions, Host, HostConfig, chains};
//! use a2e_journal::{RunFilter, RunStatus};
//! use a2e_proto::ChainRequest;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let dir = tempfile::tempdir()?;
//!     let config = HostConfig { root: dir.path().to_path_buf(), ..HostConfig::default() };
//!     let host = Host::builder(config).with_builtins().build()?;
//!     let journal = a2e_host_runs::enable(&host).await?;
//!
//!     let req: ChainRequest = serde_json::from_value(serde_json::json!({
//!         "type": "chain/req", "id": "1", "entry_node": "count",
//!         "nodes": [{"node_id": "count", "kind": "tool", "name": "text_stats",
//!                    "input": {"text": "one two three"}}]
//!     }))?;
//!     let plan = chains::plan(&host, &req)?;
//!     let resp = a2e_host_runs::run_plan(&host, &plan, CallOptions::new(), "agent").await;
//!     assert!(resp.success);
//!
//!     let runs = journal.list_runs(&RunFilter::default()).await?;
//!     assert_eq!(runs.items.len(), 1);
//!     assert_eq!(runs.items[0].status, RunStatus::Succeeded);
//!     Ok(())
//! })
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod approval_run;
mod attach;
pub mod cluster;
#[cfg(feature = "acmp")]
mod dag;
pub mod fork;
pub(crate) mod journaled;
#[cfg(feature = "llm")]
pub mod llm_run;
pub mod nested;
#[cfg(feature = "ontheia")]
pub mod ontheia_run;
pub mod skill_run;
pub mod task_run;

use std::sync::Arc;
use std::time::Duration;

use a2e_chain::{Plan, RunOptions};
use a2e_journal::{
    Durability, Journal, NewRun, Retention, RunId, RunKind, RunState, RunStatus, SqliteJournal,
    SqliteOptions,
};
use a2e_proto::{ChainRequest, ChainResponse, ErrorCode, NodeKind};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

#[cfg(feature = "acmp")]
use a2e_host_acmp as acmp;
#[cfg(feature = "llm")]
use a2e_host_core::llm_tools;
use a2e_host_core::{chains, config, error, host, plugin, redact};

use crate::chains::Durable;
use crate::host::{CallOptions, Host};
use cluster::Coordination;
use journaled::{JournalObserver, JournalSink, Scope, node_of, resume_of};

pub use attach::{AttachError, AttachItem, attach};
#[cfg(feature = "acmp")]
pub use dag::run_dag;

/// How often a running run looks for a cancel asked for by another process.
const CANCEL_POLL: Duration = Duration::from_secs(1);

/// Why the run journal could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot open the run journal {path}: {message}")]
pub struct JournalOpenError {
    /// The journal file.
    pub path: String,
    /// Why.
    pub message: String,
}

/// The journal options of `host`'s `[journal]` section.
pub fn journal_options(config: &crate::config::JournalConfig) -> SqliteOptions {
    let days = Duration::from_secs(config.keep_days.saturating_mul(24 * 3600));
    SqliteOptions {
        durability: if config.sync == "full" {
            Durability::PowerLoss
        } else {
            Durability::ProcessCrash
        },
        retention: Some(Retention {
            max_age: (config.keep_days > 0).then_some(days),
            max_runs: (config.keep_runs > 0).then_some(config.keep_runs),
        }),
        ..SqliteOptions::default()
    }
}

/// Opens the journal of `host`'s configuration (`[journal] path`, by
/// default `runs.db` in the data directory), makes the host journal its
/// chain runs in it, and prunes finished runs past the retention. Call
/// [`resume_unfinished`] next.
pub async fn enable(host: &Arc<Host>) -> Result<Arc<dyn Journal>, JournalOpenError> {
    let config = host.config();
    if config.cluster.enabled() {
        return cluster::connect(host)
            .await
            .map_err(|message| JournalOpenError {
                path: config.cluster.nats_url.clone(),
                message,
            });
    }
    let path = config.journal_path();
    let failed = |message: String| JournalOpenError {
        path: path.display().to_string(),
        message,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
    }
    let options = journal_options(&config.journal);
    let retention = options.retention;
    let journal: Arc<dyn Journal> = Arc::new(
        SqliteJournal::open(&path, options)
            .await
            .map_err(|e| failed(e.to_string()))?,
    );
    if let Some(retention) = retention
        && let Err(e) = journal.prune(&retention).await
    {
        tracing::warn!("run journal: pruning failed: {e}");
    }
    if !host.set_journal(journal.clone()) {
        return Err(failed("the host has a run journal already".into()));
    }
    Ok(journal)
}

/// Makes a host whose durable journal is off keep its runs in memory, for
/// its live view (`/ui`): a [`MemoryJournal`](a2e_journal::MemoryJournal)
/// with its default bounds (finished runs: the newest 100 of the last hour;
/// 10,000 events per run), never resumed from. Only with the `ui` feature
/// (`false` without it, or when the host has a journal already).
pub fn keep_in_memory(host: &Arc<Host>) -> bool {
    #[cfg(feature = "ui")]
    {
        host.set_journal(Arc::new(a2e_journal::MemoryJournal::default()))
    }
    #[cfg(not(feature = "ui"))]
    {
        let _ = host;
        false
    }
}

/// The session a resumed run's calls belong to (its agent's session is gone).
fn resumed_session(run: &RunId) -> String {
    format!("run-{run}")
}

/// How a run ended, from its answer.
fn status_of(resp: &ChainResponse) -> RunStatus {
    if resp.success {
        return RunStatus::Succeeded;
    }
    let code = resp
        .error
        .as_ref()
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str);
    if code == Some(ErrorCode::CANCELLED.as_str()) {
        RunStatus::Cancelled
    } else {
        RunStatus::Failed
    }
}

/// Fires `token` once a cancel of `run` is journaled (by `a2e runs cancel`
/// or another process); ends when `done` fires.
fn watch_cancel(
    journal: Arc<dyn Journal>,
    run: RunId,
    token: CancellationToken,
    done: CancellationToken,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = done.cancelled() => return,
                () = tokio::time::sleep(CANCEL_POLL) => {}
            }
            if matches!(journal.cancel_requested(&run).await, Ok(true)) {
                token.cancel();
                return;
            }
        }
    });
}

/// Runs a chain validated by [`chains::plan`] durably for agent `agent`
/// when the host has a run journal, as [`chains::run_plan`] does otherwise.
/// A run the journal refuses to create runs without it (logged).
pub async fn run_plan(
    host: &Arc<Host>,
    plan: &Plan<'_>,
    options: CallOptions<'_>,
    agent: &str,
) -> ChainResponse {
    let Some(journal) = host.journal().cloned() else {
        return chains::run_plan(host, plan, options).await;
    };
    let req = plan.request();
    let run = RunId::generate();
    // In a cluster the lease is taken before the run exists, so that no
    // other host sees it unleased.
    let mut coordination = match host.cluster() {
        Some(c) => match Coordination::acquire(&c, &run).await {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(run = %run, "chain not journaled: {e}");
                return chains::run_plan(host, plan, options).await;
            }
        },
        None => None,
    };
    let request = match serde_json::to_value(req) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!("chain not journaled: {e}");
            return chains::run_plan(host, plan, options).await;
        }
    };
    let created = journal
        .create_run(NewRun {
            run_id: run.clone(),
            kind: RunKind::Chain,
            agent: agent.to_owned(),
            request,
        })
        .await;
    if let Err(e) = created {
        tracing::warn!(run = %run, "chain not journaled: {e}");
        return chains::run_plan(host, plan, options).await;
    }
    tracing::debug!(run = %run, chain = %req.chain_id, "durable run started");
    let (session, stream, cancel) = options.into_parts();
    let token = cancel.map_or_else(CancellationToken::new, CancellationToken::child_token);
    let done = CancellationToken::new();
    watch_cancel(journal.clone(), run.clone(), token.clone(), done.clone());
    let live = stream.is_some() && req.streaming;
    let mut options = CallOptions::new().session(session).cancel(&token);
    if let Some(stream) = stream {
        options = options.events(stream);
    }
    let durable = durable(host, &journal, &run, req, None, live);
    let running = chains::run_plan_durable(host, plan, options, durable);
    let resp = match coordination.as_mut() {
        Some(c) => c.guard(running).await,
        None => Some(running.await),
    };
    done.cancel();
    // Named in the answer the journal keeps too (`chain/attach` replays it).
    let resp = resp.map(|mut r| {
        r.run_id = run.to_string();
        r
    });
    let mut resp = conclude(&*journal, &run, resp, coordination)
        .await
        .unwrap_or_else(|| {
            failed_answer(
                &req.id,
                &req.chain_id,
                ErrorCode::UNAVAILABLE,
                "the run was taken over by another host and its answer could not be read",
            )
        });
    resp.run_id = run.to_string();
    resp
}

/// Journals a run's end (`resp`) and gives its lease up; a run whose lease
/// was lost (`resp` is `None`) ends elsewhere: its answer is read from the
/// journal once there.
async fn conclude(
    journal: &dyn Journal,
    run: &RunId,
    resp: Option<ChainResponse>,
    coordination: Option<Coordination>,
) -> Option<ChainResponse> {
    match (resp, coordination) {
        (Some(resp), coordination) => {
            finish(journal, run, &resp).await;
            if let Some(c) = coordination {
                c.release().await;
            }
            Some(resp)
        }
        (None, Some(c)) => c.answer_elsewhere(journal).await,
        (None, None) => None,
    }
}

/// The durable parts of a run of `req`: `live` when its events go to its
/// agent as they happen (then each result is awaited before its event). In
/// a cluster, its tool and skill nodes go to the workers.
fn durable(
    host: &Host,
    journal: &Arc<dyn Journal>,
    run: &RunId,
    req: &ChainRequest,
    resume: Option<a2e_chain::Resume>,
    live: bool,
) -> Durable<JournalSink> {
    Durable {
        run_id: run.to_string(),
        options: RunOptions {
            resume,
            observer: Some(Arc::new(JournalObserver::new(journal, run, !live))),
        },
        sink: JournalSink {
            journal: journal.clone(),
            run: run.clone(),
            req_id: req.id.clone(),
        },
        decorate: host.cluster().map(|cluster| {
            let run_id = run.to_string();
            let decorate: chains::Decorate = Box::new(move |runner| {
                Arc::new(cluster::ClusterRunner::new(runner, cluster, &run_id))
            });
            decorate
        }),
        extensions: crate::plugin::Extensions::new(),
    }
}

/// Journals the run's end with its answer (awaited: an attached agent gets
/// it as soon as it is durable).
async fn finish(journal: &dyn Journal, run: &RunId, resp: &ChainResponse) {
    let answer = serde_json::to_value(resp).unwrap_or_else(|e| {
        serde_json::json!({"success": false, "error": {"code": "runtime_error", "message": e.to_string()}})
    });
    if let Err(e) = journal.flush().await {
        tracing::warn!(run = %run, "run journal: {e}");
    }
    if let Err(e) = journal.finish_run(run, status_of(resp), &answer).await {
        tracing::warn!(run = %run, "run journal: the end of the run was not journaled: {e}");
    }
}

/// A failed answer to `req` with `code` and `message` (a run that cannot
/// be resumed).
fn failed_answer(req_id: &str, chain_id: &str, code: ErrorCode, message: &str) -> ChainResponse {
    let mut error = Map::new();
    error.insert("code".into(), Value::from(code.as_str()));
    error.insert("message".into(), Value::from(message));
    ChainResponse {
        req_id: req_id.to_owned(),
        chain_id: chain_id.to_owned(),
        success: false,
        error: Some(error),
        ..ChainResponse::default()
    }
}

/// Whether an interrupted call of `req` may run again: its node calls a
/// tool whose definition says `idempotent`. Skills and processes are not
/// repeated.
/// In a cluster, a node that went to the work queue is run again with the
/// same key: its delivery is still queued (a publish with the same key is
/// dropped as a duplicate) or its result is journaled.
fn may_repeat(host: &Host, req: &ChainRequest, wire_id: &str) -> bool {
    let node_id = node_of(wire_id);
    let Some(node) = req.nodes.iter().find(|n| n.node_id == node_id) else {
        return false;
    };
    if host.cluster().is_some() && cluster::toolkit_of(host, &node.kind, &node.name).is_some() {
        return true;
    }
    node.kind == NodeKind::TOOL
        && host
            .registry()
            .tool(&node.name)
            .is_some_and(|entry| entry.def.idempotent)
}

/// Resumes every run the journal holds unfinished (a host that stopped
/// while they ran), each on its own task; returns how many were started.
/// Only the first host process on a journal resumes its runs (it holds the
/// lock `runs.db.lock` until it exits); another one returns 0.
/// A run whose records do not load is logged with its id and left alone;
/// the others still resume. A run whose cancel was asked for ends as
/// cancelled without running.
pub async fn resume_unfinished(host: &Arc<Host>, cancel: &CancellationToken) -> usize {
    let Some(journal) = host.journal().cloned() else {
        return 0;
    };
    if host.cluster().is_some() {
        // Every host resumes whichever unfinished run has no coordinator.
        cluster::start_takeover(host);
        return 0;
    }
    if !owns_journal(host) {
        tracing::info!("run journal: another host process resumes this journal's runs");
        return 0;
    }
    let loaded = match journal.load_unfinished().await {
        Ok(loaded) => loaded,
        Err(e) => {
            tracing::error!("run journal: cannot load the unfinished runs: {e}");
            return 0;
        }
    };
    for bad in &loaded.corrupt {
        tracing::error!(run = %bad.run_id, "run journal: not resumed: {}", bad.message);
    }
    if !loaded.items.is_empty() {
        // Tools that load on first use are known before their nodes are.
        host.registry().load_tools(false).await;
    }
    let mut started = 0;
    for state in loaded.items {
        let host = host.clone();
        let journal = journal.clone();
        let token = cancel.child_token();
        match state.summary.kind {
            RunKind::Chain => {
                tokio::spawn(async move { resume_run(&host, journal, state, token, None).await });
            }
            #[cfg(feature = "acmp")]
            RunKind::AcmpDag => {
                tokio::spawn(
                    async move { dag::resume_run(&host, journal, state, token, None).await },
                );
            }
            RunKind::McpTask | RunKind::A2aTask => {
                tokio::spawn(
                    async move { task_run::end_orphan(journal, state, None, token).await },
                );
            }
            RunKind::Approval => {
                tokio::spawn(async move { approval_run::end_orphan(journal, state, None).await });
            }
            kind if skill_run::resumes(kind) => {
                tokio::spawn(async move {
                    skill_run::resume_run(&host, journal, state, token, None).await
                });
            }
            kind => {
                tracing::warn!(run = %state.summary.run_id, kind = kind.as_str(),
                    "run journal: runs of this kind are not resumed by this host");
                continue;
            }
        }
        started += 1;
    }
    started
}

/// Takes the journal's resume lock (`runs.db.lock` beside it) for the rest
/// of the process: only one host process resumes a journal's runs, so that
/// a second `a2e serve` on the same root does not run them again. `false`
/// when another process holds it.
fn owns_journal(host: &Host) -> bool {
    let mut path = host.config().journal_path().into_os_string();
    path.push(".lock");
    let file = match std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!("run journal: cannot open its resume lock: {e}");
            return false;
        }
    };
    match file.try_lock() {
        Ok(()) => {
            // Held until the process exits (the lock goes with the file).
            std::mem::forget(file);
            true
        }
        Err(_) => false,
    }
}

/// Resumes one journaled chain run.
async fn resume_run(
    host: &Arc<Host>,
    journal: Arc<dyn Journal>,
    state: RunState,
    token: CancellationToken,
    mut coordination: Option<Coordination>,
) {
    let run = state.summary.run_id.clone();
    let req: ChainRequest = match serde_json::from_value(state.request.clone()) {
        Ok(req) => req,
        Err(e) => {
            let message = format!("the journaled request does not load: {e}");
            tracing::error!(run = %run, "run journal: {message}");
            let resp = failed_answer("", "", ErrorCode::RUNTIME_ERROR, &message);
            finish(&*journal, &run, &resp).await;
            return;
        }
    };
    if state.summary.cancel_requested {
        let resp = failed_answer(
            &req.id,
            &req.chain_id,
            ErrorCode::CANCELLED,
            "run cancelled",
        );
        finish(&*journal, &run, &resp).await;
        return;
    }
    let plan = match chains::plan(host, &req) {
        Ok(plan) => plan,
        Err(e) => {
            let resp = failed_answer(&req.id, &req.chain_id, e.code(), &e.to_string());
            finish(&*journal, &run, &resp).await;
            return;
        }
    };
    let scope = Scope::of(&req);
    let rerun = |id: &str| may_repeat(host, &req, id) || nested::journaled_inside(&state, id);
    let resume = match resume_of(&*journal, &state, &scope, rerun).await {
        Ok(resume) => resume,
        Err(e) => {
            tracing::error!(run = %run, "run journal: not resumed: {e}");
            return;
        }
    };
    tracing::info!(run = %run, chain = %req.chain_id, "resuming an unfinished run");
    let session = resumed_session(&run);
    host.register_session(&session, &state.summary.agent);
    let done = CancellationToken::new();
    watch_cancel(journal.clone(), run.clone(), token.clone(), done.clone());
    let options = CallOptions::new().session(&session).cancel(&token);
    let durable = durable(host, &journal, &run, &req, Some(resume), false);
    let running = chains::run_plan_durable(host, &plan, options, durable);
    let resp = match coordination.as_mut() {
        Some(c) => c.guard(running).await,
        None => Some(running.await),
    };
    done.cancel();
    host.end_session(&session);
    let success = resp.as_ref().map(|r| r.success);
    if let Some(resp) = resp {
        conclude(&*journal, &run, Some(resp), coordination).await;
    }
    tracing::info!(run = %run, success = ?success, "resumed run finished (or was taken over)");
}

#[cfg(test)]
mod tests;
