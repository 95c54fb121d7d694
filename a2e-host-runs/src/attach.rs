//! `chain/attach`: an agent re-attaches to a durable run by its id (or by
//! the id of the `chain/req` that started it) and gets the events it missed,
//! each `seq` once, then the live ones, then the final answer. The request
//! is [`a2e_proto::ChainAttach`]:
//!
//! ```json
//! {"type": "chain/attach", "id": "a1", "version": "1.0", "ts": 1.0,
//!  "run_id": "5f0c…", "from_seq": 0}
//! {"type": "chain/attach", "id": "a2", "version": "1.0", "ts": 1.0,
//!  "chain_req_id": "req-7"}
//! ```
//!
//! The answer is the run's `chain/event`s and its `chain/resp`, each with
//! `req_id` set to the attach request's id (the events keep their `seq`).
//! Only the agent that started a run may attach to it: another agent's run
//! is refused with `unauthorized`, an unknown one with `unknown_run`.

use std::sync::Arc;

use a2e_journal::{Journal, RunFilter, RunId, RunItem};
use a2e_proto::{ChainAttach, ChainEvent, ChainResponse, ErrorCode};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::host::Host;

/// Runs of an agent searched for a `chain_req_id`, newest first.
const SEARCHED_RUNS: usize = 200;

/// A refused attach: its wire code and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AttachError {
    /// `schema_violation`, `unknown_run`, `unauthorized` or `unavailable`.
    pub code: ErrorCode,
    /// What is wrong.
    pub message: String,
}

impl AttachError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

fn schema(message: impl Into<String>) -> AttachError {
    AttachError::new(ErrorCode::SCHEMA_VIOLATION, message)
}

fn unknown(message: impl Into<String>) -> AttachError {
    AttachError::new(ErrorCode::new("unknown_run"), message)
}

/// What an attached agent receives, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum AttachItem {
    /// An event of the run.
    Event(ChainEvent),
    /// The final answer; nothing follows.
    Answer(ChainResponse),
    /// The journal failed; nothing follows.
    Failed(AttachError),
}

/// The run `req` names, if agent `agent` may attach to it.
async fn find(journal: &dyn Journal, agent: &str, req: &ChainAttach) -> Result<RunId, AttachError> {
    let unavailable = |e: a2e_journal::JournalError| {
        AttachError::new(ErrorCode::UNAVAILABLE, format!("run journal: {e}"))
    };
    if !req.run_id.is_empty() {
        let run = RunId::parse(&req.run_id).map_err(|e| schema(e.to_string()))?;
        let Some(state) = journal.show_run(&run).await.map_err(unavailable)? else {
            return Err(unknown(format!("no run `{run}` in this host's journal")));
        };
        if state.summary.agent != agent {
            return Err(AttachError::new(
                ErrorCode::UNAUTHORIZED,
                format!("run `{run}` belongs to another agent"),
            ));
        }
        return Ok(run);
    }
    let filter = RunFilter {
        agent: Some(agent.to_owned()),
        status: None,
        limit: SEARCHED_RUNS,
    };
    let runs = journal.list_runs(&filter).await.map_err(unavailable)?;
    for summary in runs.items {
        let Some(state) = journal
            .show_run(&summary.run_id)
            .await
            .map_err(unavailable)?
        else {
            continue;
        };
        if state.request.get("id").and_then(Value::as_str) == Some(req.chain_req_id.as_str()) {
            return Ok(summary.run_id);
        }
    }
    Err(unknown(format!(
        "no run of this agent was started by chain/req `{}`",
        req.chain_req_id
    )))
}

/// Attaches agent `agent` to the run `req` names: its events from
/// `from_seq` on, each once and in order (journaled ones, then live ones),
/// then its answer. Refused when `req` names neither or both of `run_id` and
/// `chain_req_id`, the host journals no runs, or the run is unknown or
/// another agent's.
pub async fn attach(
    host: &Arc<Host>,
    agent: &str,
    req: &ChainAttach,
) -> Result<BoxStream<'static, AttachItem>, AttachError> {
    if req.run_id.is_empty() == req.chain_req_id.is_empty() {
        return Err(schema(
            "`chain/attach` names its run by exactly one of `run_id` and `chain_req_id`",
        ));
    }
    let Some(journal) = host.journal().cloned() else {
        return Err(AttachError::new(
            ErrorCode::UNAVAILABLE,
            "this host does not journal its runs (`[journal] enabled = false`)",
        ));
    };
    let run = find(&*journal, agent, req).await?;
    let req_id = req.id.clone();
    let items = journal.subscribe(&run, req.from_seq);
    let mut over = false;
    let stream = items
        .map(move |item| match item {
            Ok(RunItem::Event(stored)) => {
                match serde_json::from_value::<ChainEvent>(stored.event) {
                    Ok(mut event) => {
                        event.req_id.clone_from(&req_id);
                        event.seq = stored.seq;
                        AttachItem::Event(event)
                    }
                    Err(e) => AttachItem::Failed(AttachError::new(
                        ErrorCode::RUNTIME_ERROR,
                        format!(
                            "run journal: event {} of run `{run}` does not load: {e}",
                            stored.seq
                        ),
                    )),
                }
            }
            Ok(RunItem::Finished { answer, .. }) => {
                match serde_json::from_value::<ChainResponse>(answer) {
                    Ok(mut resp) => {
                        resp.req_id.clone_from(&req_id);
                        resp.id = uuid::Uuid::new_v4().simple().to_string();
                        resp.ts = a2e_proto::now();
                        AttachItem::Answer(resp)
                    }
                    Err(e) => AttachItem::Failed(AttachError::new(
                        ErrorCode::RUNTIME_ERROR,
                        format!("run journal: the answer of run `{run}` does not load: {e}"),
                    )),
                }
            }
            Err(e) => AttachItem::Failed(AttachError::new(
                ErrorCode::UNAVAILABLE,
                format!("run journal: {e}"),
            )),
        })
        // Nothing follows an answer or a failure.
        .take_while(move |item| {
            let take = !over;
            over = over || !matches!(item, AttachItem::Event(_));
            futures::future::ready(take)
        });
    Ok(stream.boxed())
}
