//! The live feed of a host's durable runs: what its run journal is asked to
//! write (a run created, a node started and finished, an event, a run
//! finished), handed to whoever watches (the live view, `/ui`) as it
//! happens.
//!
//! The feed sits in front of the journal (`Tapped`): every write goes on
//! to the journal unchanged, and when somebody watches it is also sent on a
//! bounded broadcast channel. Nobody watching costs one atomic load per
//! write. A watcher that falls behind by more than [`FEED_CAPACITY`] items
//! is told it lagged (and reloads what it shows from the journal).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use a2e_journal::{
    Ack, Journal, Loaded, NewRun, NodeKey, NodeOutcome, NodeStart, PruneReport, Retention,
    RunFilter, RunId, RunItem, RunState, RunStatus, RunSummary, StoredEvent, now_ms,
};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;

/// Items a watcher may fall behind by before it is told it lagged.
pub const FEED_CAPACITY: usize = 1024;

/// Runs whose trace id the feed remembers (the newest).
const TRACED_RUNS: usize = 256;

/// One thing that happened to a durable run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LiveItem {
    /// A run was created.
    RunStarted {
        /// The run.
        run_id: String,
        /// What it runs (`chain`, …).
        run_kind: &'static str,
        /// The agent that asked for it.
        agent: String,
        /// Its chain id, when it has one.
        chain_id: String,
        /// When (ms since the Unix epoch).
        ts_ms: u64,
    },
    /// A node's attempt started.
    NodeStarted {
        /// The run.
        run_id: String,
        /// The node (a map item: `template[index]`).
        node_id: String,
        /// The attempt, from 1.
        attempt: u32,
        /// When (ms since the Unix epoch).
        ts_ms: u64,
        /// The trace the run's spans belong to, when telemetry is on.
        #[serde(skip_serializing_if = "Option::is_none")]
        trace_id: Option<String>,
        /// What it started with (its input, redacted and bounded), when
        /// journaled.
        #[serde(skip_serializing_if = "Option::is_none")]
        start: Option<NodeStart>,
    },
    /// A node's call opened its span (telemetry on).
    NodeTraced {
        /// The run.
        run_id: String,
        /// The node.
        node_id: String,
        /// The attempt.
        attempt: u32,
        /// The call span's trace.
        trace_id: String,
        /// The call span.
        span_id: String,
    },
    /// A node's attempt ended.
    NodeFinished {
        /// The run.
        run_id: String,
        /// The node.
        node_id: String,
        /// The attempt.
        attempt: u32,
        /// When (ms since the Unix epoch).
        ts_ms: u64,
        /// Its output or its error.
        outcome: NodeOutcome,
    },
    /// An event of the run (a `chain/event` message).
    Event {
        /// The run.
        run_id: String,
        /// Its `seq`.
        seq: u64,
        /// The event.
        event: Value,
    },
    /// The run ended.
    RunFinished {
        /// The run.
        run_id: String,
        /// How (`succeeded`, `failed`, `cancelled`).
        status: &'static str,
        /// When (ms since the Unix epoch).
        ts_ms: u64,
    },
}

impl LiveItem {
    /// The run the item is about.
    pub fn run_id(&self) -> &str {
        match self {
            Self::RunStarted { run_id, .. }
            | Self::NodeStarted { run_id, .. }
            | Self::NodeFinished { run_id, .. }
            | Self::NodeTraced { run_id, .. }
            | Self::Event { run_id, .. }
            | Self::RunFinished { run_id, .. } => run_id,
        }
    }
}

/// The feed: a broadcast channel and the trace ids of recent runs.
#[derive(Debug)]
pub struct LiveFeed {
    tx: broadcast::Sender<Arc<LiveItem>>,
    traces: Mutex<VecDeque<(String, String)>>,
}

impl Default for LiveFeed {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(FEED_CAPACITY).0,
            traces: Mutex::new(VecDeque::new()),
        }
    }
}

impl LiveFeed {
    /// Everything from now on (a lagging receiver gets `Lagged`).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LiveItem>> {
        self.tx.subscribe()
    }

    /// Whether anybody watches.
    fn watched(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    fn send(&self, item: LiveItem) {
        let _ = self.tx.send(Arc::new(item));
    }

    /// The trace id of run `run_id`, when it ran on this host with
    /// telemetry on (the newest 256 runs are remembered).
    pub fn trace_id(&self, run_id: &str) -> Option<String> {
        let traces = self.traces.lock().unwrap_or_else(PoisonError::into_inner);
        traces
            .iter()
            .find(|(run, _)| run == run_id)
            .map(|(_, trace)| trace.clone())
    }

    fn remember_trace(&self, run_id: &str) -> Option<String> {
        let trace = a2e_telemetry::TraceContext::current()?.trace_id();
        let mut traces = self.traces.lock().unwrap_or_else(PoisonError::into_inner);
        if !traces.iter().any(|(run, _)| run == run_id) {
            if traces.len() == TRACED_RUNS {
                traces.pop_front();
            }
            traces.push_back((run_id.to_owned(), trace.clone()));
        }
        Some(trace)
    }
}

/// A journal whose writes also go to a [`LiveFeed`].
pub(crate) struct Tapped {
    pub inner: Arc<dyn Journal>,
    pub feed: Arc<LiveFeed>,
}

impl Tapped {
    /// Tells the feed a node started.
    fn started(&self, key: &NodeKey, start: Option<&NodeStart>) {
        // Called on the run's task, under its span: the trace is the run's.
        let trace_id = self.feed.remember_trace(key.run_id().as_str());
        if self.feed.watched() {
            self.feed.send(LiveItem::NodeStarted {
                run_id: key.run_id().to_string(),
                node_id: key.node_id().to_owned(),
                attempt: key.attempt(),
                ts_ms: now_ms(),
                trace_id,
                start: start.cloned(),
            });
        }
    }
}

impl Journal for Tapped {
    fn commits_in_order(&self) -> bool {
        self.inner.commits_in_order()
    }

    fn create_run(&self, run: NewRun) -> Ack {
        if self.feed.watched() {
            let chain_id = run
                .request
                .get("chain_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            self.feed.send(LiveItem::RunStarted {
                run_id: run.run_id.to_string(),
                run_kind: run.kind.as_str(),
                agent: run.agent.clone(),
                chain_id,
                ts_ms: now_ms(),
            });
        }
        self.inner.create_run(run)
    }

    fn node_started(&self, key: &NodeKey) -> Ack {
        self.started(key, None);
        self.inner.node_started(key)
    }

    fn node_started_with(&self, key: &NodeKey, start: &NodeStart) -> Ack {
        self.started(key, Some(start));
        self.inner.node_started_with(key, start)
    }

    fn node_traced(&self, key: &NodeKey, trace_id: &str, span_id: &str) -> Ack {
        if self.feed.watched() {
            self.feed.send(LiveItem::NodeTraced {
                run_id: key.run_id().to_string(),
                node_id: key.node_id().to_owned(),
                attempt: key.attempt(),
                trace_id: trace_id.to_owned(),
                span_id: span_id.to_owned(),
            });
        }
        self.inner.node_traced(key, trace_id, span_id)
    }

    fn node_finished(&self, key: &NodeKey, outcome: &NodeOutcome) -> Ack<bool> {
        if self.feed.watched() {
            self.feed.send(LiveItem::NodeFinished {
                run_id: key.run_id().to_string(),
                node_id: key.node_id().to_owned(),
                attempt: key.attempt(),
                ts_ms: now_ms(),
                outcome: outcome.clone(),
            });
        }
        self.inner.node_finished(key, outcome)
    }

    fn append_event(&self, run_id: &RunId, seq: u64, event: &Value) -> Ack {
        if self.feed.watched() {
            self.feed.send(LiveItem::Event {
                run_id: run_id.to_string(),
                seq,
                event: event.clone(),
            });
        }
        self.inner.append_event(run_id, seq, event)
    }

    fn finish_run(&self, run_id: &RunId, status: RunStatus, answer: &Value) -> Ack {
        let ack = self.inner.finish_run(run_id, status, answer);
        if self.feed.watched() {
            let feed = self.feed.clone();
            let run_id = run_id.to_string();
            // Told once it is durable: a watcher that reloads the run then
            // finds it finished.
            return Ack::from_future(async move {
                let done = ack.await;
                feed.send(LiveItem::RunFinished {
                    run_id,
                    status: status.as_str(),
                    ts_ms: now_ms(),
                });
                done
            });
        }
        ack
    }

    fn request_cancel(&self, run_id: &RunId) -> Ack<bool> {
        self.inner.request_cancel(run_id)
    }

    fn cancel_requested(&self, run_id: &RunId) -> BoxFuture<'static, a2e_journal::Result<bool>> {
        self.inner.cancel_requested(run_id)
    }

    fn list_runs(
        &self,
        filter: &RunFilter,
    ) -> BoxFuture<'static, a2e_journal::Result<Loaded<RunSummary>>> {
        self.inner.list_runs(filter)
    }

    fn show_run(
        &self,
        run_id: &RunId,
    ) -> BoxFuture<'static, a2e_journal::Result<Option<RunState>>> {
        self.inner.show_run(run_id)
    }

    fn load_unfinished(&self) -> BoxFuture<'static, a2e_journal::Result<Loaded<RunState>>> {
        self.inner.load_unfinished()
    }

    fn events(
        &self,
        run_id: &RunId,
        from_seq: u64,
        limit: usize,
    ) -> BoxFuture<'static, a2e_journal::Result<Vec<StoredEvent>>> {
        self.inner.events(run_id, from_seq, limit)
    }

    fn subscribe(
        &self,
        run_id: &RunId,
        from_seq: u64,
    ) -> BoxStream<'static, a2e_journal::Result<RunItem>> {
        self.inner.subscribe(run_id, from_seq)
    }

    fn prune(&self, retention: &Retention) -> Ack<PruneReport> {
        self.inner.prune(retention)
    }

    fn flush(&self) -> Ack {
        self.inner.flush()
    }
}
