//! The event-driven loop of one run: dependency counters, one-way state machine,
//! breadth-first cancellation, failure policy, streaming edges.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::durable::{DagResume, DagRunOptions, TaskObserver};
use super::ends::Ends;
use super::invoke::Invoke;
use super::msg::Msg;
use super::outcome::{CancelReason, DagOutcome, DagStatus, TaskEnd, TaskError};
use super::plan::Plan;
use super::stream::OutStream;
use super::{FailurePolicy, OrchestratorConfig};
use crate::events::{DagEventSink, Event, EventKind};
use crate::hash::IdxMap;
use crate::{InputChunk, InvokeResult, TaskState};

mod settle;
mod start;

/// Messages handled per wake-up.
const BATCH: usize = 256;

/// Tasks started or finished per poll of the run before it yields to the runtime.
const BUDGET: u32 = 512;

/// The hot, small per-task state.
struct Slot {
    state: TaskState,
    /// Incoming edges not yet satisfied.
    remaining: u32,
    /// The token of a running task.
    token: Option<CancellationToken>,
}

pub(crate) struct RunLoop {
    plan: Arc<Plan>,
    policy: FailurePolicy,
    default_timeout: Option<Duration>,
    cancel_grace: Duration,
    events: Option<Arc<dyn DagEventSink>>,
    seq: u64,
    tx: mpsc::UnboundedSender<Msg>,
    rx: mpsc::UnboundedReceiver<Msg>,
    slots: Vec<Slot>,
    /// The ends so far, which become the outcome.
    ends: Ends,
    /// Tasks whose inputs are all there, started lowest index first: a DAG declared in
    /// dependency order runs in declaration order, walking memory in order.
    ready: BinaryHeap<Reverse<u32>>,
    /// Tasks not yet terminal.
    open: usize,
    /// Invocations that did not answer when first polled; polled by this loop.
    invocations: FuturesUnordered<Invoke>,
    out_streams: IdxMap<u32, OutStream>,
    in_streams: IdxMap<u32, mpsc::UnboundedReceiver<InputChunk>>,
    batch: Vec<Msg>,
    /// A resumed run: what the earlier run finished and reported.
    resume: Option<Box<DagResume>>,
    /// Told of each provider call's start and answer.
    observer: Option<Arc<dyn TaskObserver>>,
}

impl RunLoop {
    pub(crate) fn new(
        plan: Arc<Plan>,
        config: &OrchestratorConfig,
        events: Option<Arc<dyn DagEventSink>>,
        tx: mpsc::UnboundedSender<Msg>,
        rx: mpsc::UnboundedReceiver<Msg>,
        options: DagRunOptions,
    ) -> Self {
        let slots: Vec<Slot> = plan
            .dag
            .nodes
            .iter()
            .map(|n| Slot {
                state: TaskState::Pending,
                remaining: n.in_degree,
                token: None,
            })
            .collect();
        let ends = Ends::new(slots.len());
        Self {
            open: slots.len(),
            plan,
            policy: config.failure_policy,
            default_timeout: config.default_timeout,
            cancel_grace: config.cancel_grace,
            events,
            seq: options.resume.as_ref().map_or(0, |r| r.next_seq),
            tx,
            rx,
            slots,
            ends,
            ready: BinaryHeap::new(),
            invocations: FuturesUnordered::new(),
            out_streams: IdxMap::default(),
            in_streams: IdxMap::default(),
            batch: Vec::new(),
            resume: options.resume.map(Box::new),
            observer: options.observer,
        }
    }

    pub(crate) async fn run(mut self) -> DagOutcome {
        let tasks = self.slots.len();
        self.emit(|| EventKind::DagStarted { tasks });
        let plan = Arc::clone(&self.plan);
        for &(from, to, reason) in &plan.fallbacks {
            self.emit(|| EventKind::StreamFallback {
                from: plan.id(from),
                to: plan.id(to),
                reason,
            });
        }
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.remaining == 0 {
                self.ready.push(Reverse(i as u32));
            }
        }
        std::future::poll_fn(|cx| self.poll_run(cx)).await;
        self.drain().await;
        self.finish()
    }

    /// Drives the run until every task is terminal: starts ready tasks (each invocation is
    /// polled once at once, so a provider that answers right away costs no wake-up), takes
    /// the invocations that finish later and the messages. Yields to the runtime every
    /// [`BUDGET`] steps.
    fn poll_run(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut budget = BUDGET;
        loop {
            while self.open > 0 {
                if budget == 0 {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                let Some(Reverse(idx)) = self.ready.pop() else {
                    break;
                };
                if self.state(idx) == Some(TaskState::Pending) {
                    budget -= 1;
                    self.start(idx, cx);
                }
            }
            if self.open == 0 {
                return Poll::Ready(());
            }
            let mut progress = false;
            if let Poll::Ready(Some((idx, result))) = self.invocations.poll_next_unpin(cx) {
                budget = budget.saturating_sub(1);
                self.finished(idx, result);
                progress = true;
            }
            if self.batch.capacity() == 0 {
                self.batch.reserve(BATCH);
            }
            match self.rx.poll_recv_many(cx, &mut self.batch, BATCH) {
                // Unreachable while the loop holds a sender.
                Poll::Ready(0) => return Poll::Ready(()),
                Poll::Ready(_) => {
                    let mut batch = std::mem::take(&mut self.batch);
                    for msg in batch.drain(..) {
                        self.handle(msg);
                    }
                    self.batch = batch;
                    progress = true;
                }
                Poll::Pending => {}
            }
            if !progress && self.ready.is_empty() {
                return Poll::Pending;
            }
        }
    }

    /// An invocation finished: what its provider sent before returning (chunks,
    /// heartbeats) comes first.
    fn finished(&mut self, idx: u32, result: Result<InvokeResult, TaskError>) {
        while let Ok(msg) = self.rx.try_recv() {
            self.handle(msg);
        }
        self.on_done(idx, result);
    }

    fn emit(&mut self, kind: impl FnOnce() -> EventKind) {
        if let Some(sink) = &self.events {
            let kind = kind();
            if let Some(resume) = &self.resume
                && resume.was_reported(&kind)
            {
                return;
            }
            let event = Event {
                seq: self.seq,
                dag_id: self.plan.dag_id.clone(),
                kind,
            };
            self.seq += 1;
            sink.emit(&event);
        }
    }

    fn state(&self, idx: u32) -> Option<TaskState> {
        self.slots.get(idx as usize).map(|s| s.state)
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::TimedOut { idx, timeout_ms } => {
                if self.state(idx) == Some(TaskState::Running) {
                    self.fail(idx, TaskError::TimedOut { timeout_ms });
                }
            }
            Msg::Chunk { idx, chunk, last } => {
                if self.state(idx) == Some(TaskState::Running)
                    && let Some(stream) = self.out_streams.get_mut(&idx)
                {
                    stream.push(chunk, last);
                }
            }
            Msg::Heartbeat {
                idx,
                progress,
                detail,
            } => {
                if self.state(idx) == Some(TaskState::Running) {
                    let task_id = self.plan.id(idx);
                    self.emit(|| EventKind::Heartbeat {
                        task_id,
                        progress,
                        detail,
                    });
                }
            }
            Msg::Cancel { idx } => {
                if self.cancel_one(idx, CancelReason::Requested) {
                    let task_id = self.plan.id(idx);
                    self.cancel_downstream(idx, &CancelReason::UpstreamCancelled { task_id });
                }
            }
            Msg::CancelAll => self.cancel_all(&CancelReason::RunCancelled),
        }
    }

    /// Waits, up to the grace period, for the providers of cancelled or timed-out tasks to
    /// return (their tokens have fired); drops the rest.
    async fn drain(&mut self) {
        if self.invocations.is_empty() {
            return;
        }
        let invocations = &mut self.invocations;
        let settle = async { while invocations.next().await.is_some() {} };
        let _ = tokio::time::timeout(self.cancel_grace, settle).await;
        self.invocations.clear();
    }

    fn finish(mut self) -> DagOutcome {
        let ends = std::mem::replace(&mut self.ends, Ends::new(0));
        // Every task is terminal here, so every task has its end.
        let tasks = ends.into_outcomes(&self.plan.dag.nodes);
        let mut failed = false;
        let mut cancelled = false;
        for outcome in &tasks {
            failed |= matches!(outcome.end, TaskEnd::Failed(_));
            cancelled |= matches!(outcome.end, TaskEnd::Cancelled(_));
        }
        let status = if failed {
            DagStatus::Failed
        } else if cancelled {
            DagStatus::Cancelled
        } else {
            DagStatus::Completed
        };
        self.emit(|| EventKind::DagFinished { status });
        DagOutcome {
            status,
            tasks,
            plan: Arc::clone(&self.plan),
        }
    }
}

/// One incoming edge of `to` is satisfied: it is ready once none is left.
fn satisfy(slots: &mut [Slot], ready: &mut BinaryHeap<Reverse<u32>>, to: u32) {
    if let Some(slot) = slots.get_mut(to as usize) {
        slot.remaining = slot.remaining.saturating_sub(1);
        if slot.remaining == 0 && slot.state == TaskState::Pending {
            ready.push(Reverse(to));
        }
    }
}

impl Drop for RunLoop {
    /// A run dropped before its end (its future dropped, its task aborted) cancels what it
    /// started: tokens fire, then the in-flight invocations are dropped with the loop.
    fn drop(&mut self) {
        for slot in &mut self.slots {
            if let Some(token) = slot.token.take() {
                token.cancel();
            }
        }
    }
}
