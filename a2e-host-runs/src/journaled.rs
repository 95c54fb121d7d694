//! A chain run as the journal sees it: each call's start and result through
//! a [`CallObserver`], each event through an [`ChainEventSink`], and the
//! [`Resume`] a resumed run starts from.

use std::collections::BTreeMap;
use std::sync::Arc;

use a2e_chain::{
    CallKey, CallObserver, ChainEventSink, Event, NodeCall, NodeError, NodeResult, ObserveFuture,
    Resume,
};
use a2e_journal::{
    Journal, JournalError, NodeKey, NodeOutcome, NodeRecord, NodeStart, RunId, RunState,
};
use a2e_proto::{ChainPhase, ErrorCode};
use serde_json::Value;

fn journal_failed(e: JournalError) -> NodeError {
    NodeError::new(ErrorCode::RUNTIME_ERROR, format!("run journal: {e}"))
}

/// Journals each runner call of one run: its start (awaited before the
/// runner is called, so that a call that may have run is known after a
/// crash) and its result (durable before anything downstream sees it).
///
/// A result is awaited before the engine goes on, unless `defer_results`:
/// when the journal commits in order ([`Journal::commits_in_order`]) and
/// nobody sees the run's events as they happen (it does not stream to its
/// agent), a result is only queued, and committed with the next call's
/// start — which is awaited before that call, the first thing downstream
/// of it, runs — or by the journal's writer a moment later, or with the
/// run's end: one commit per call instead of two.
pub(super) struct JournalObserver {
    pub journal: Arc<dyn Journal>,
    pub run: RunId,
    pub defer_results: bool,
    /// Results queued and not yet seen committed.
    pub pending: std::sync::Mutex<Vec<a2e_journal::Ack<bool>>>,
    /// Put before every node id: a chain skill's chain journaled inside the
    /// run that calls it (`NODE/`, see [`crate::nested`]); empty otherwise.
    pub prefix: String,
}

impl JournalObserver {
    /// An observer of run `run`; see the type's docs for `defer_results`.
    pub fn new(journal: &Arc<dyn Journal>, run: &RunId, defer_results: bool) -> Self {
        Self {
            journal: journal.clone(),
            run: run.clone(),
            defer_results: defer_results && journal.commits_in_order(),
            pending: std::sync::Mutex::default(),
            prefix: String::new(),
        }
    }

    fn take_pending(&self) -> Vec<a2e_journal::Ack<bool>> {
        std::mem::take(
            &mut *self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn key(&self, wire_id: &str, attempt: u32) -> Result<NodeKey, NodeError> {
        if self.prefix.is_empty() {
            return NodeKey::new(self.run.clone(), wire_id, attempt).map_err(journal_failed);
        }
        let id = format!("{}{wire_id}", self.prefix);
        NodeKey::new(self.run.clone(), &id, attempt).map_err(journal_failed)
    }
}

impl CallObserver for JournalObserver {
    fn started(&self, call: &NodeCall) -> ObserveFuture {
        let ack = self.key(&call.wire_id(), call.attempt).map(|key| {
            // Redacted as it is copied.
            let input = call
                .input
                .iter()
                .map(|(k, v)| (k.to_owned(), crate::redact::redact_entry(k, v)))
                .collect();
            self.journal
                .node_started_with(&key, &node_start(Value::Object(input)))
        });
        // Results queued before this start commit no later than it does.
        let pending = self.take_pending();
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
        if self.defer_results {
            return match ack {
                Ok(ack) => {
                    self.pending
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(ack);
                    Box::pin(std::future::ready(Ok(())))
                }
                Err(e) => Box::pin(std::future::ready(Err(e))),
            };
        }
        Box::pin(async move { ack?.await.map(drop).map_err(journal_failed) })
    }
}

/// What a node starts with, as journaled: `input` (the arguments after
/// `input_map` resolution, its credentials redacted already: see
/// [`crate::redact`]), cut to the journal's bound, and the trace the run's
/// span belongs to, when telemetry is on (the node call's own span joins it
/// once it opens: see [`Journal::node_traced`]).
pub(crate) fn node_start(input: Value) -> NodeStart {
    let mut start = NodeStart::with_input(input);
    if let Some(cx) = a2e_telemetry::TraceContext::current() {
        start.trace_id = Some(cx.trace_id());
    }
    start
}

/// Journals each event of one run as its `chain/event` message (the first
/// naming the run, as its agent got it). The writes
/// are queued in `seq` order and not awaited (an event need not hold up the
/// run; a result it reports is journaled before it).
pub(super) struct JournalSink {
    pub journal: Arc<dyn Journal>,
    pub run: RunId,
    pub req_id: String,
}

impl ChainEventSink for JournalSink {
    fn event(&mut self, event: &Event<'_>) {
        let mut wire = event.to_wire(&self.req_id);
        // As the agent saw it: the run's first event names the run.
        if event.seq == 0 {
            wire.run_id = self.run.to_string();
        }
        match serde_json::to_value(&wire) {
            Ok(v) => drop(self.journal.append_event(&self.run, event.seq, &v)),
            Err(e) => tracing::warn!(run = %self.run, "event not journaled: {e}"),
        }
    }
}

/// The template node of a call's wire id (`fetch[3]` is an item of `fetch`).
pub(super) fn node_of(wire_id: &str) -> &str {
    match wire_id.strip_suffix(']').and_then(|s| s.rsplit_once('[')) {
        Some((node, index)) if index.bytes().all(|b| b.is_ascii_digit()) => node,
        _ => wire_id,
    }
}

/// Which of a run's records are a chain's calls: those of its declared
/// nodes (and their map items), under `prefix` (a chain skill's chain
/// inside the run that calls it, [`crate::nested`]; empty for the run's own
/// chain). Every other record — an approval's, a nested chain's — is not.
pub(crate) struct Scope<'a> {
    /// Put before each node id in the records.
    pub prefix: &'a str,
    /// The chain's node ids.
    pub nodes: std::collections::HashSet<&'a str>,
}

impl<'a> Scope<'a> {
    /// The records of `req`'s own nodes.
    pub fn of(req: &'a a2e_proto::ChainRequest) -> Self {
        Self {
            prefix: "",
            nodes: req.nodes.iter().map(|n| n.node_id.as_str()).collect(),
        }
    }

    /// The call id of record `id` when it is one of the chain's calls.
    pub fn call_of<'r>(&self, id: &'r str) -> Option<&'r str> {
        let call = id.strip_prefix(self.prefix)?;
        self.nodes.contains(node_of(call)).then_some(call)
    }
}

/// What a resumed run starts from: the latest attempt of every call with its
/// result; a call that started and left none runs again with the same
/// attempt (the same idempotency key) when `rerun` says its node may be
/// repeated or it was held back waiting for approval, and fails with
/// `interrupted` otherwise (journaled as its result); the events journaled
/// (none for a nested chain, whose events are not journaled).
pub(super) async fn resume_of(
    journal: &dyn Journal,
    state: &RunState,
    scope: &Scope<'_>,
    rerun: impl Fn(&str) -> bool,
) -> Result<Resume, JournalError> {
    let mut resume = Resume::new();
    let mut latest: BTreeMap<&str, &NodeRecord> = BTreeMap::new();
    for rec in &state.nodes {
        let Some(call) = scope.call_of(&rec.node_id) else {
            continue;
        };
        let e = latest.entry(call).or_insert(rec);
        if rec.attempt > e.attempt {
            *e = rec;
        }
    }
    for (id, rec) in latest {
        let full = format!("{}{id}", scope.prefix);
        match &rec.outcome {
            Some(NodeOutcome::Output { output }) => {
                resume.finished(id, rec.attempt, Ok(output.clone()));
            }
            Some(NodeOutcome::Error { code, message }) => {
                let code = ErrorCode::new(code.as_str());
                resume.finished(id, rec.attempt, Err(NodeError::new(code, message.clone())));
            }
            // Still held back for a decision when its host stopped: it has
            // not run, so it runs (and waits) again.
            None if rerun(&full) || a2e_journal::approval::held(state, &full, rec.attempt) => {
                resume.interrupted(id, rec.attempt);
            }
            None => {
                let error = NodeError::new(
                    ErrorCode::new(a2e_journal::INTERRUPTED),
                    format!(
                        "`{id}` may have run when its host stopped, and it is not idempotent: \
                         it is not run again"
                    ),
                );
                // Journaled, so that the run's record says why, and a
                // second crash finds the call settled.
                let key = NodeKey::new(state.summary.run_id.clone(), &full, rec.attempt)?;
                let outcome = NodeOutcome::error(a2e_journal::INTERRUPTED, error.message.clone());
                journal.node_finished(&key, &outcome).await?;
                resume.finished(id, rec.attempt, Err(error));
            }
        }
    }
    if !scope.prefix.is_empty() {
        return Ok(resume);
    }
    let events = journal.events(&state.summary.run_id, 0, usize::MAX).await?;
    for e in &events {
        let text = |key: &str| e.event.get(key).and_then(Value::as_str);
        if let (Some(node), Some(phase)) = (text("node_id"), text("phase")) {
            resume.reported(node, &ChainPhase::new(phase));
        }
    }
    resume.next_seq(state.summary.next_seq);
    Ok(resume)
}

#[cfg(test)]
mod tests {
    use super::node_of;

    #[test]
    fn map_items_name_their_template() {
        assert_eq!(node_of("fetch[3]"), "fetch");
        assert_eq!(node_of("fetch"), "fetch");
        assert_eq!(node_of("a[b]"), "a[b]");
        assert_eq!(node_of("x[12]"), "x");
    }
}
