//! The event-driven loop of one run: dependency counters, one-way state machine,
//! breadth-first cancellation, failure policy, streaming edges.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::invoke::Invoke;
use super::msg::Msg;
use super::outcome::{CancelReason, DagOutcome, DagStatus, TaskEnd, TaskError, TaskOutcome};
use super::plan::Plan;
use super::resolve::resolve;
use super::stream::OutStream;
use super::{FailurePolicy, OrchestratorConfig};
use crate::events::{Event, EventKind, EventSink, TransitionCause};
use crate::{
    InputChunk, InputChunks, Invocation, InvokeParams, InvokeResult, OutputSink, TaskState,
};

/// Messages handled per wake-up.
const BATCH: usize = 256;

struct Slot {
    state: TaskState,
    /// Incoming edges not yet satisfied.
    remaining: u32,
    token: Option<CancellationToken>,
    end: Option<TaskEnd>,
}

/// What woke the loop. Transient, moved once per wake: boxing the result would cost an
/// allocation per task.
#[allow(clippy::large_enum_variant)]
enum Wake {
    Done(u32, Result<InvokeResult, TaskError>),
    Messages,
    Closed,
}

pub(crate) struct RunLoop {
    plan: Arc<Plan>,
    policy: FailurePolicy,
    default_timeout: Option<Duration>,
    cancel_grace: Duration,
    events: Option<Arc<dyn EventSink>>,
    seq: u64,
    tx: mpsc::UnboundedSender<Msg>,
    rx: mpsc::UnboundedReceiver<Msg>,
    slots: Vec<Slot>,
    ready: VecDeque<u32>,
    /// Tasks not yet terminal.
    open: usize,
    /// Invocations whose provider has not returned yet, polled by this loop.
    invocations: FuturesUnordered<Invoke>,
    out_streams: HashMap<u32, OutStream>,
    in_streams: HashMap<u32, mpsc::UnboundedReceiver<InputChunk>>,
}

impl RunLoop {
    pub(crate) fn new(
        plan: Arc<Plan>,
        config: &OrchestratorConfig,
        events: Option<Arc<dyn EventSink>>,
        tx: mpsc::UnboundedSender<Msg>,
        rx: mpsc::UnboundedReceiver<Msg>,
    ) -> Self {
        let slots: Vec<Slot> = plan
            .dag
            .nodes
            .iter()
            .map(|n| Slot {
                state: TaskState::Pending,
                remaining: n.in_degree,
                token: None,
                end: None,
            })
            .collect();
        Self {
            open: slots.len(),
            plan,
            policy: config.failure_policy,
            default_timeout: config.default_timeout,
            cancel_grace: config.cancel_grace,
            events,
            seq: 0,
            tx,
            rx,
            slots,
            ready: VecDeque::new(),
            invocations: FuturesUnordered::new(),
            out_streams: HashMap::new(),
            in_streams: HashMap::new(),
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
                self.ready.push_back(i as u32);
            }
        }
        self.start_ready();
        let mut batch = Vec::with_capacity(BATCH);
        while self.open > 0 {
            match self.wake(&mut batch).await {
                Wake::Done(idx, result) => {
                    // What the provider sent before returning (chunks, heartbeats) comes first.
                    while let Ok(msg) = self.rx.try_recv() {
                        self.handle(msg);
                    }
                    self.on_done(idx, result);
                }
                Wake::Messages => {
                    for msg in std::mem::take(&mut batch) {
                        self.handle(msg);
                    }
                }
                Wake::Closed => break,
            }
            self.start_ready();
        }
        self.drain().await;
        self.finish()
    }

    /// Waits for an invocation to finish or for messages (taken into `batch`).
    async fn wake(&mut self, batch: &mut Vec<Msg>) -> Wake {
        let (invocations, rx) = (&mut self.invocations, &mut self.rx);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(Some((idx, result))) = invocations.poll_next_unpin(cx) {
                return Poll::Ready(Wake::Done(idx, result));
            }
            match rx.poll_recv_many(cx, batch, BATCH) {
                Poll::Ready(0) => Poll::Ready(Wake::Closed),
                Poll::Ready(_) => Poll::Ready(Wake::Messages),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }

    fn emit(&mut self, kind: impl FnOnce() -> EventKind) {
        if let Some(sink) = &self.events {
            let event = Event {
                seq: self.seq,
                dag_id: self.plan.dag_id.clone(),
                kind: kind(),
            };
            self.seq += 1;
            sink.emit(&event);
        }
    }

    fn state(&self, idx: u32) -> Option<TaskState> {
        self.slots.get(idx as usize).map(|s| s.state)
    }

    /// Moves a task to `to`; refuses transitions the state machine does not allow.
    fn transition(&mut self, idx: u32, to: TaskState, cause: Option<TransitionCause>) -> bool {
        let Some(slot) = self.slots.get_mut(idx as usize) else {
            return false;
        };
        let from = slot.state;
        if !from.can_transition_to(to) {
            return false;
        }
        slot.state = to;
        tracing::trace!(dag = %self.plan.dag_id, task = idx, %from, %to, "task transition");
        if to.is_terminal() {
            self.open -= 1;
            if let Some(token) = slot.token.take() {
                if to != TaskState::Completed {
                    token.cancel();
                }
            }
            self.out_streams.remove(&idx);
            self.in_streams.remove(&idx);
        }
        if self.events.is_some() {
            let task_id = self.plan.id(idx);
            self.emit(|| EventKind::Transition {
                task_id,
                from,
                to,
                cause,
            });
        }
        true
    }

    fn on_done(&mut self, idx: u32, result: Result<InvokeResult, TaskError>) {
        if self.state(idx) != Some(TaskState::Running) {
            return; // cancelled or timed out meanwhile: the answer is moot
        }
        match result {
            Ok(result) => self.on_result(idx, result),
            Err(error) => self.fail(idx, error),
        }
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::TimedOut { idx, timeout_ms } => {
                if self.state(idx) == Some(TaskState::Running) {
                    self.fail(idx, TaskError::TimedOut { timeout_ms });
                }
            }
            Msg::Chunk { idx, chunk, last } => {
                if self.state(idx) == Some(TaskState::Running) {
                    if let Some(stream) = self.out_streams.get_mut(&idx) {
                        stream.push(chunk, last);
                    }
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

    fn start_ready(&mut self) {
        while let Some(idx) = self.ready.pop_front() {
            if self.state(idx) == Some(TaskState::Pending) {
                self.start(idx);
            }
        }
    }

    /// Resolves the input, invokes the provider, opens the output stream.
    fn start(&mut self, idx: u32) {
        let plan = Arc::clone(&self.plan);
        let (Some(task), Some(node)) = (
            plan.dag.dag().tasks.get(idx as usize),
            plan.dag.nodes.get(idx as usize),
        ) else {
            return;
        };
        let Some(provider) = plan.routes.get(idx as usize).cloned().flatten() else {
            let capability = task.capability.clone();
            self.fail(idx, TaskError::NoProvider { capability });
            return;
        };
        let (input, input_chunks) = match self.in_streams.remove(&idx) {
            Some(rx) => (None, Some(InputChunks::from_receiver(rx))),
            None => {
                let slots = &self.slots;
                let resolved = resolve(
                    task,
                    &node.input,
                    |src| match slots.get(src as usize).and_then(|s| s.end.as_ref()) {
                        Some(TaskEnd::Completed(r)) => r.output.as_ref(),
                        _ => None,
                    },
                    |src| plan.id(src).to_string(),
                );
                match resolved {
                    Ok(input) => (Some(input), None),
                    Err(error) => {
                        self.fail(idx, TaskError::Input(error));
                        return;
                    }
                }
            }
        };
        let streams = plan.streams.get(idx as usize).copied().unwrap_or(false);
        let mut params = InvokeParams::for_task(task, input);
        if streams {
            params.stream = Some(true);
        }
        let token = CancellationToken::new();
        let invocation = Invocation {
            params,
            cancel: token.clone(),
            input: input_chunks,
            output: OutputSink::orchestrator(self.tx.clone(), idx, node.id.clone(), streams),
        };
        self.transition(idx, TaskState::Running, None);
        if streams {
            self.open_stream(idx);
        }
        let timeout = task
            .timeout_ms
            .map(Duration::from_millis)
            .or(self.default_timeout);
        self.invocations
            .push(Invoke::new(provider, invocation, idx, timeout, &self.tx));
        if let Some(slot) = self.slots.get_mut(idx as usize) {
            slot.token = Some(token);
        }
    }

    /// Connects a task invoked with `stream: true` to its streaming dependents, which may
    /// start now.
    fn open_stream(&mut self, idx: u32) {
        let plan = Arc::clone(&self.plan);
        let Some(tos) = plan.stream_out.get(&idx) else {
            return;
        };
        let mut targets = Vec::with_capacity(tos.len());
        for &to in tos {
            let (tx, rx) = mpsc::unbounded_channel();
            targets.push((tx, plan.id(to)));
            self.in_streams.insert(to, rx);
            self.satisfy(to);
        }
        self.out_streams.insert(idx, OutStream::new(targets));
    }

    /// One incoming edge of `to` is satisfied.
    fn satisfy(&mut self, to: u32) {
        if let Some(slot) = self.slots.get_mut(to as usize) {
            slot.remaining = slot.remaining.saturating_sub(1);
            if slot.remaining == 0 && slot.state == TaskState::Pending {
                self.ready.push_back(to);
            }
        }
    }

    fn on_result(&mut self, idx: u32, mut result: InvokeResult) {
        let id = self.plan.id(idx);
        if result.task_id != *id {
            let message = format!("result for task \"{}\"", result.task_id);
            self.fail(idx, TaskError::Protocol { message });
            return;
        }
        let max_price = plan_max_price(&self.plan, idx);
        if let Some(max) = max_price.filter(|&max| result.cost_cu > max) {
            let message = format!("cost_cu {} exceeds max_price_cu {max}", result.cost_cu);
            self.fail(idx, TaskError::Protocol { message });
            return;
        }
        if let Some(mut stream) = self.out_streams.remove(&idx) {
            match stream.finish(&result) {
                Ok(assembled) => {
                    if result.output.is_none() {
                        result.output = assembled;
                    }
                }
                Err(message) => {
                    self.fail(idx, TaskError::Protocol { message });
                    return;
                }
            }
        }
        if result.output.is_none() {
            let message = "result without output".to_owned();
            self.fail(idx, TaskError::Protocol { message });
            return;
        }
        if !self.transition(idx, TaskState::Completed, None) {
            return;
        }
        if let Some(slot) = self.slots.get_mut(idx as usize) {
            slot.end = Some(TaskEnd::Completed(result));
        }
        let plan = Arc::clone(&self.plan);
        for edge in plan.dag.outs(idx) {
            if !plan.is_streamed(idx, edge.to) {
                self.satisfy(edge.to);
            }
        }
    }

    fn fail(&mut self, idx: u32, error: TaskError) {
        if matches!(
            error,
            TaskError::Panicked { .. } | TaskError::Protocol { .. }
        ) {
            tracing::warn!(dag = %self.plan.dag_id, task = %self.plan.id(idx), %error, "task failed");
        }
        let cause = self
            .events
            .is_some()
            .then(|| TransitionCause::Failed(error.clone()));
        if !self.transition(idx, TaskState::Failed, cause) {
            return;
        }
        if let Some(slot) = self.slots.get_mut(idx as usize) {
            slot.end = Some(TaskEnd::Failed(error));
        }
        let task_id = self.plan.id(idx);
        self.cancel_downstream(
            idx,
            &CancelReason::UpstreamFailed {
                task_id: task_id.clone(),
            },
        );
        if self.policy == FailurePolicy::FailFast {
            self.cancel_all(&CancelReason::FailFast { failed: task_id });
        }
    }

    /// Cancels one task that is not terminal; fires its token if it runs.
    fn cancel_one(&mut self, idx: u32, reason: CancelReason) -> bool {
        let cause = self
            .events
            .is_some()
            .then(|| TransitionCause::Cancelled(reason.clone()));
        if !self.transition(idx, TaskState::Cancelled, cause) {
            return false;
        }
        if let Some(slot) = self.slots.get_mut(idx as usize) {
            slot.end = Some(TaskEnd::Cancelled(reason));
        }
        true
    }

    /// Cancels every task reachable from `origin`, breadth first. Terminal tasks keep their
    /// end and are not walked through.
    fn cancel_downstream(&mut self, origin: u32, reason: &CancelReason) {
        let plan = Arc::clone(&self.plan);
        let outs = |v: u32| plan.dag.outs(v);
        let mut queue: VecDeque<u32> = outs(origin).iter().map(|e| e.to).collect();
        while let Some(v) = queue.pop_front() {
            if self.cancel_one(v, reason.clone()) {
                queue.extend(outs(v).iter().map(|e| e.to));
            }
        }
    }

    fn cancel_all(&mut self, reason: &CancelReason) {
        for idx in 0..self.slots.len() as u32 {
            self.cancel_one(idx, reason.clone());
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
        let slots = std::mem::take(&mut self.slots);
        let mut failed = false;
        let mut cancelled = false;
        let tasks = slots
            .into_iter()
            .zip(&self.plan.dag.nodes)
            .map(|(slot, node)| {
                let end = slot.end.unwrap_or_else(|| {
                    // Unreachable: the loop ends when every task is terminal.
                    TaskEnd::Failed(TaskError::Protocol {
                        message: "the run ended before the task did".to_owned(),
                    })
                });
                failed |= matches!(end, TaskEnd::Failed(_));
                cancelled |= matches!(end, TaskEnd::Cancelled(_));
                TaskOutcome {
                    task_id: node.id.clone(),
                    end,
                }
            })
            .collect();
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

/// The task's `max_price_cu`, which a result's `cost_cu` must not exceed.
fn plan_max_price(plan: &Plan, idx: u32) -> Option<f64> {
    plan.dag
        .dag()
        .tasks
        .get(idx as usize)
        .and_then(|t| t.max_price_cu)
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
