//! The event-driven loop of one run: dependency counters, one-way state machine,
//! breadth-first cancellation, failure policy, streaming edges.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::durable::{DagResume, DagRunOptions, TaskCall, TaskObserver};
use super::ends::Ends;
use super::invoke::{Invoke, poll_guarded};
use super::msg::Msg;
use super::outcome::{CancelReason, DagOutcome, DagStatus, TaskEnd, TaskError};
use super::plan::Plan;
use super::resolve::resolve;
use super::stream::OutStream;
use super::{FailurePolicy, OrchestratorConfig};
use crate::events::{Event, EventKind, EventSink, TransitionCause};
use crate::hash::IdxMap;
use crate::{
    InputChunk, InputChunks, Invocation, InvokeParams, InvokeResult, OutputSink, TaskState,
};

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
    events: Option<Arc<dyn EventSink>>,
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
        events: Option<Arc<dyn EventSink>>,
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
            if let Some(token) = slot.token.take()
                && to != TaskState::Completed
            {
                token.cancel();
            }
            if !self.out_streams.is_empty() {
                self.out_streams.remove(&idx);
            }
            if !self.in_streams.is_empty() {
                self.in_streams.remove(&idx);
            }
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

    /// Resolves the input, invokes the provider, opens the output stream. The invocation is
    /// polled once here; only if it does not answer does it join `invocations`.
    fn start(&mut self, idx: u32, cx: &mut Context<'_>) {
        let plan = Arc::clone(&self.plan);
        let (Some(task), Some(node)) = (
            plan.dag.dag().tasks.get(idx as usize),
            plan.dag.nodes.get(idx as usize),
        ) else {
            return;
        };
        let mut attempt = 1;
        if let Some(resume) = &mut self.resume
            && let Some(prior) = resume.tasks.get_mut(&*node.id)
        {
            attempt = prior.attempt;
            if let Some(result) = prior.result.take() {
                // Answered in the earlier run: not invoked again.
                self.transition(idx, TaskState::Running, None);
                self.finished(idx, result.map_err(TaskError::Provider));
                return;
            }
        }
        let Some(provider) = plan.provider(idx).cloned() else {
            let capability = task.capability.clone();
            self.fail(idx, TaskError::NoProvider { capability });
            return;
        };
        let in_stream = if self.in_streams.is_empty() {
            None
        } else {
            self.in_streams.remove(&idx)
        };
        let (input, input_chunks) = match in_stream {
            Some(rx) => (None, Some(InputChunks::from_receiver(rx))),
            None => {
                let ends = &self.ends;
                let resolved = resolve(
                    task,
                    &node.input,
                    &plan.dag.sources,
                    |src| match ends.get(src) {
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
        let streams = plan.streams(idx);
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
            attempt,
        };
        self.transition(idx, TaskState::Running, None);
        if let Some(slot) = self.slots.get_mut(idx as usize) {
            slot.token = Some(token);
        }
        if streams {
            self.open_stream(idx);
        }
        let mut future = match &self.observer {
            None => provider.invoke_owned(invocation),
            Some(observer) => observed(
                Arc::clone(observer),
                TaskCall {
                    task_id: node.id.clone(),
                    attempt,
                },
                provider,
                invocation,
            ),
        };
        match poll_guarded(&mut future, cx) {
            Poll::Ready(result) => {
                drop(future);
                self.finished(idx, result);
            }
            Poll::Pending => {
                let timeout = task
                    .timeout_ms
                    .map(Duration::from_millis)
                    .or(self.default_timeout);
                self.invocations
                    .push(Invoke::new(future, idx, timeout, &self.tx));
            }
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
        satisfy(&mut self.slots, &mut self.ready, to);
    }

    fn on_result(&mut self, idx: u32, mut result: InvokeResult) {
        let expected = self.plan.dag.nodes.get(idx as usize).map(|n| &*n.id);
        if expected != Some(result.task_id.as_str()) {
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
        let stream = if self.out_streams.is_empty() {
            None
        } else {
            self.out_streams.remove(&idx)
        };
        if let Some(mut stream) = stream {
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
        self.set_end(idx, TaskEnd::Completed(result));
        let Self {
            plan, slots, ready, ..
        } = self;
        for edge in plan.dag.outs(idx) {
            if !plan.is_streamed(idx, edge.to) {
                satisfy(slots, ready, edge.to);
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
        if let Some(observer) = &self.observer
            && self.state(idx) == Some(TaskState::Running)
            && matches!(
                error,
                TaskError::TimedOut { .. }
                    | TaskError::Protocol { .. }
                    | TaskError::Panicked { .. }
            )
        {
            let task_id = self.plan.id(idx);
            let attempt = self
                .resume
                .as_ref()
                .and_then(|r| r.tasks.get(&*task_id))
                .map_or(1, |p| p.attempt);
            observer.failed(&TaskCall { task_id, attempt }, &error);
        }
        let cause = self
            .events
            .is_some()
            .then(|| TransitionCause::Failed(error.clone()));
        if !self.transition(idx, TaskState::Failed, cause) {
            return;
        }
        self.set_end(idx, TaskEnd::Failed(error));
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
        self.set_end(idx, TaskEnd::Cancelled(reason));
        true
    }

    fn set_end(&mut self, idx: u32, end: TaskEnd) {
        self.ends.set(idx, end, &self.plan.dag.nodes);
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

/// The provider call between its observer's `started` and `finished`: the
/// provider is invoked once the start is observed, and its answer reaches
/// the run once that is.
fn observed(
    observer: Arc<dyn TaskObserver>,
    call: TaskCall,
    provider: crate::ProviderRef,
    invocation: Invocation,
) -> super::invoke::InvokeFuture {
    Box::pin(async move {
        observer.started(&call, &invocation.params).await?;
        let result = provider.invoke_owned(invocation).await;
        observer.finished(&call, &result).await?;
        result
    })
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
