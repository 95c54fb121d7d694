//! A chain run journaled the way a host does it: a `CallObserver` that
//! journals each call's start and result (awaited), an `ChainEventSink` that
//! journals each event (queued), and the `Resume` built from a journaled run:
//! what a2e-journal's tests and its cluster benchmark run chains through.

use std::sync::Arc;
use std::time::Duration;

use a2e_chain::{
    CallKey, CallObserver, ChainEventSink, Event, NodeCall, NodeError, NodeResult, ObserveFuture,
    Resume,
};
use a2e_journal::{Journal, JournalError, NodeKey, NodeOutcome, RunId, RunState, RunStatus};
use a2e_proto::{ChainPhase, ErrorCode};
use futures::StreamExt;
use serde_json::Value;

/// Journals each call of run `run`.
pub struct JournalObserver {
    /// Where the calls are journaled.
    pub journal: Arc<dyn Journal>,
    /// The run they belong to.
    pub run: RunId,
    /// Whether a call waits for its start to be durable before it runs.
    /// A host waits for calls of tools that are not idempotent (so that a
    /// call that may have run is known after a crash); for idempotent ones
    /// the start is only queued: it is durable with the result, which is
    /// written after it, and a call whose start was lost runs again with
    /// the same key.
    pub await_start: bool,
    /// Whether a result is only queued (committed with the next start, which
    /// is awaited): what a host does for a run whose events do not stream to
    /// its agent, on a journal that commits in order.
    pub defer_results: bool,
    /// Results queued and not yet seen committed.
    pub pending: std::sync::Mutex<Vec<a2e_journal::Ack<bool>>>,
}

fn journal_failed(e: JournalError) -> NodeError {
    NodeError::new(ErrorCode::RUNTIME_ERROR, format!("journal: {e}"))
}

impl JournalObserver {
    fn key(&self, wire_id: &str, attempt: u32) -> Result<NodeKey, NodeError> {
        NodeKey::new(self.run.clone(), wire_id, attempt).map_err(journal_failed)
    }
}

impl CallObserver for JournalObserver {
    fn started(&self, call: &NodeCall) -> ObserveFuture {
        let ack = self
            .key(&call.wire_id(), call.attempt)
            .map(|key| self.journal.node_started(&key));
        if !self.await_start {
            return Box::pin(async move { ack.map(drop) });
        }
        let pending = std::mem::take(&mut *self.pending.lock().unwrap());
        Box::pin(async move {
            ack?.await.map_err(journal_failed)?;
            for result in pending {
                result.await.map_err(journal_failed)?;
            }
            Ok(())
        })
    }

    fn finished(&self, call: &CallKey, result: &NodeResult) -> ObserveFuture {
        let outcome = match result {
            Ok(v) => NodeOutcome::output(v.clone()),
            Err(e) => NodeOutcome::error(e.code.as_str(), e.message.clone()),
        };
        let ack = self
            .key(&call.wire_id(), call.attempt)
            .map(|key| self.journal.node_finished(&key, &outcome));
        match ack {
            Ok(ack) if self.defer_results => {
                self.pending.lock().unwrap().push(ack);
                Box::pin(async { Ok(()) })
            }
            ack => Box::pin(async move { ack?.await.map(|_| ()).map_err(journal_failed) }),
        }
    }
}

/// Journals each event as its `chain/event` message; the writes are queued
/// in `seq` order and not awaited.
pub struct JournalSink {
    /// Where the events are journaled.
    pub journal: Arc<dyn Journal>,
    /// The run they belong to.
    pub run: RunId,
    /// The id of the run's request, which each `chain/event` answers.
    pub req_id: String,
}

impl ChainEventSink for JournalSink {
    fn event(&mut self, event: &Event<'_>) {
        let wire = event.to_wire(&self.req_id);
        if let Ok(v) = serde_json::to_value(&wire) {
            drop(self.journal.append_event(&self.run, event.seq, &v));
        }
    }
}

/// What a resumed run starts from: the latest attempt of every call, its
/// result if it has one (else it runs again with the same attempt, or fails
/// with `interrupted` when `rerun` says it must not be repeated), and the
/// events already journaled.
pub async fn resume_of(
    journal: &dyn Journal,
    state: &RunState,
    rerun: impl Fn(&str) -> bool,
) -> Resume {
    let mut resume = Resume::new();
    let mut latest: std::collections::BTreeMap<&str, &a2e_journal::NodeRecord> = Default::default();
    for rec in &state.nodes {
        let e = latest.entry(rec.node_id.as_str()).or_insert(rec);
        if rec.attempt > e.attempt {
            *e = rec;
        }
    }
    for (id, rec) in latest {
        match &rec.outcome {
            Some(NodeOutcome::Output { output }) => {
                resume.finished(id, rec.attempt, Ok(output.clone()));
            }
            Some(NodeOutcome::Error { code, message }) => {
                resume.finished(
                    id,
                    rec.attempt,
                    Err(NodeError::new(
                        ErrorCode::from(code.as_str()),
                        message.clone(),
                    )),
                );
            }
            None if rerun(id) => {
                resume.interrupted(id, rec.attempt);
            }
            None => {
                resume.finished(
                    id,
                    rec.attempt,
                    Err(NodeError::new(
                        ErrorCode::from(a2e_journal::INTERRUPTED),
                        format!("`{id}` may have run when its host stopped, and its tool is not idempotent"),
                    )),
                );
            }
        }
    }
    let events = journal
        .events(&state.summary.run_id, 0, usize::MAX)
        .await
        .unwrap_or_default();
    for e in &events {
        if let (Some(node), Some(phase)) = (e.event["node_id"].as_str(), e.event["phase"].as_str())
        {
            resume.reported(node, &ChainPhase::from(phase));
        }
    }
    resume.next_seq(state.summary.next_seq);
    resume
}

/// The run's events (as `node:phase`, checking each seq comes once and in
/// order) and its end, once it finished (within 20 s, else it panics).
pub async fn outcome(journal: &dyn Journal, run: &RunId) -> (Vec<String>, RunStatus, Value) {
    let items = tokio::time::timeout(
        Duration::from_secs(20),
        journal.subscribe(run, 0).collect::<Vec<_>>(),
    )
    .await
    .expect("the run finishes");
    let mut phases = Vec::new();
    let mut end = None;
    for (i, item) in items.into_iter().enumerate() {
        match item.unwrap() {
            a2e_journal::RunItem::Event(e) => {
                assert_eq!(e.seq, i as u64);
                phases.push(format!(
                    "{}:{}",
                    e.event["node_id"].as_str().unwrap(),
                    e.event["phase"].as_str().unwrap()
                ));
            }
            a2e_journal::RunItem::Finished { status, answer } => end = Some((status, answer)),
        }
    }
    let (status, answer) = end.expect("an answer");
    (phases, status, answer)
}
