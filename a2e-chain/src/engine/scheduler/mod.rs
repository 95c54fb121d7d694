//! The scheduler: dependency counters, a ready queue, runner calls polled
//! once inline and then continued on tokio tasks, and results fed back as
//! they arrive. No polling loop: the only waits are on task completion, the
//! chain deadline and external cancellation.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use a2e_proto::{ChainPhase, ErrorCode};
use futures::FutureExt;
use jmespath::Rcvar;
use serde_json::{Map, Value};
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::resolve::Env;
use super::state::{Emitter, MapRun, Out, Slot, Status};
use crate::config::{ChainConfig, MAX_TIMEOUT_SECS, deadline_after};
use crate::context::{Expr, Root};
use crate::error::NodeError;
use crate::events::{ChainEventSink, Progress};
use crate::graph::{BranchSpec, Plan, Spec};
use crate::input::node_timeout;
use crate::prefetch::prefetch;
use crate::resume::{CallObserver, RunOptions};
use crate::runner::{BoxNodeFuture, DynNodeRunner, NodeCall, NodeResult};

mod map;
mod ready;
mod settle;

use self::ready::{Ready, Work};

/// Which call a result belongs to.
#[derive(Debug, Clone, Copy)]
enum Tag {
    Node(u32),
    Item(u32, usize),
}

/// Why the chain stopped early.
enum Stop {
    Timeout,
    Cancelled,
    Stuck,
}

/// The next notice of a runner call, when the run takes them (never
/// otherwise).
async fn next_notice(
    notices: &mut Option<(
        tokio::sync::mpsc::UnboundedSender<crate::notice::Notice>,
        tokio::sync::mpsc::UnboundedReceiver<crate::notice::Notice>,
    )>,
) -> Option<crate::notice::Notice> {
    match notices {
        Some((_, rx)) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// How many launches between checks of the deadline and cancellation while
/// runners keep finishing inline.
const CHECK_EVERY: u32 = 1024;

/// One run of a plan.
pub(crate) struct Run<'p, 'r, S> {
    plan: &'p Plan<'r>,
    cfg: &'p ChainConfig,
    runner: Arc<dyn DynNodeRunner>,
    pub(crate) ev: Emitter<S>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) outs: Vec<Out>,
    maps: BTreeMap<u32, MapRun>,
    ready: Ready,
    tasks: JoinSet<(Tag, NodeResult)>,
    pub(crate) nodes_run: u64,
    cancel: CancellationToken,
    /// `cancel`, shared by the runner calls.
    call_cancel: Arc<CancellationToken>,
    deadline: Option<Instant>,
    timeout_secs: u64,
    input: Value,
    input_var: Option<Rcvar>,
    pub(crate) failure: Option<Map<String, Value>>,
    settle_stack: Vec<u32>,
    /// Told of each runner call's start and result.
    observer: Option<Arc<dyn CallObserver>>,
    /// The runner calls' notices (with `ChainConfig::notices`).
    notices: Option<(
        tokio::sync::mpsc::UnboundedSender<crate::notice::Notice>,
        tokio::sync::mpsc::UnboundedReceiver<crate::notice::Notice>,
    )>,
}

impl<'p, 'r, S: ChainEventSink> Run<'p, 'r, S> {
    pub(crate) fn new(
        plan: &'p Plan<'r>,
        cfg: &'p ChainConfig,
        runner: Arc<dyn DynNodeRunner>,
        sink: S,
        cancel: CancellationToken,
        options: RunOptions,
    ) -> Self {
        // Clamped to the maximum, and checked: a timeout from the wire
        // never overflows the clock.
        let asked = match plan.req.timeout {
            0 => cfg.default_timeout_secs,
            t => t,
        };
        let timeout_secs = asked.min(MAX_TIMEOUT_SECS);
        let deadline = (timeout_secs > 0)
            .then(|| deadline_after(Instant::now(), Duration::from_secs(timeout_secs)))
            .flatten();
        Self {
            plan,
            cfg,
            runner,
            ev: Emitter {
                sink,
                seq: options.resume.as_ref().map_or(0, |r| r.next_seq),
                progress: Progress {
                    settled: 0,
                    total: plan.total,
                },
                resume: options.resume.map(Box::new),
            },
            slots: plan.nodes.iter().map(Slot::new).collect(),
            outs: std::iter::repeat_with(Out::default)
                .take(plan.nodes.len())
                .collect(),
            maps: BTreeMap::new(),
            ready: Ready::new(plan.nodes.len(), &plan.roots),
            tasks: JoinSet::new(),
            nodes_run: 0,
            call_cancel: Arc::new(cancel.clone()),
            cancel,
            deadline,
            timeout_secs,
            input: Value::Object(plan.req.initial_input.clone()),
            input_var: None,
            failure: None,
            settle_stack: Vec::new(),
            observer: options.observer,
            notices: cfg.notices.then(tokio::sync::mpsc::unbounded_channel),
        }
    }

    /// Runs until every node settled, the chain failed, timed out or was
    /// cancelled.
    pub(crate) async fn drive(&mut self, external: &CancellationToken) {
        let deadline = self.deadline;
        let timer = async move {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        let mut timer = std::pin::pin!(timer);
        let mut cancelled = std::pin::pin!(external.cancelled());
        let max = self.cfg.max_concurrency.max(1);
        let mut launches = 0u32;
        loop {
            while self.failure.is_none() && self.tasks.len() < max {
                let Some(work) = self.ready.pop() else {
                    break;
                };
                // What the next node will read is scattered: ask for it
                // while this one runs.
                if let Some(Work::Node(next)) = self.ready.peek() {
                    self.prefetch_inputs(next);
                }
                // The engine's own work for a node (resolving its input,
                // a condition, a map's items) is inside the panic net too:
                // a panic there is that node's failure, not the chain's end.
                match work {
                    Work::Node(i) => {
                        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.start(i))) {
                            self.node_panicked(i, panic);
                        }
                    }
                    Work::Items(m) => {
                        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.start_items(m))) {
                            self.chain_panicked(Some(m), panic);
                        }
                    }
                }
                launches += 1;
                // Events handed to another task: let it run (a writer woken
                // here waits on this thread until this task yields).
                if self.ev.sink.handed_on() {
                    tokio::task::yield_now().await;
                }
                if launches >= CHECK_EVERY {
                    launches = 0;
                    if external.is_cancelled() {
                        self.stop(Stop::Cancelled);
                    } else if deadline.is_some_and(|d| Instant::now() >= d) {
                        self.stop(Stop::Timeout);
                    } else {
                        self.ev.sink.flush();
                        tokio::task::yield_now().await;
                    }
                }
            }
            if self.failure.is_some() || self.ev.progress.settled >= self.plan.total {
                break;
            }
            if self.tasks.is_empty() {
                self.stop(Stop::Stuck);
                break;
            }
            // Whatever the sink holds goes out before the wait.
            self.ev.sink.flush();
            tokio::select! {
                biased;
                () = &mut cancelled => {
                    self.stop(Stop::Cancelled);
                    break;
                }
                () = &mut timer => {
                    self.stop(Stop::Timeout);
                    break;
                }
                Some(notice) = next_notice(&mut self.notices) => self.notice(notice),
                Some(joined) = self.tasks.join_next() => {
                    self.joined(joined);
                    while let Some(joined) = self.tasks.try_join_next() {
                        self.joined(joined);
                    }
                }
            }
        }
    }

    /// Emits a runner call's notice as an event of its node.
    fn notice(&mut self, notice: crate::notice::Notice) {
        self.ev.emit(
            &notice.node_id,
            notice.item,
            notice.phase,
            Some(&notice.data),
            None,
        );
    }

    /// Emits the notices already sent.
    fn drain_notices(&mut self) {
        while let Some(notice) = self.notices.as_mut().and_then(|(_, rx)| rx.try_recv().ok()) {
            self.notice(notice);
        }
    }

    /// Hands runner calls still in flight to a reaper task: their tokens
    /// have fired; they get `grace` to finish, then are aborted.
    pub(crate) fn release_leftovers(&mut self, grace: Duration) {
        if self.tasks.is_empty() {
            return;
        }
        let mut tasks = std::mem::take(&mut self.tasks);
        tokio::spawn(async move {
            let drain = async { while tasks.join_next().await.is_some() {} };
            let _ = tokio::time::timeout(grace, drain).await;
            tasks.abort_all();
        });
    }

    /// The engine's work for node `i` panicked: the node fails with a
    /// `runtime_error` naming the panic (its `on_error` applies).
    fn node_panicked(&mut self, i: u32, panic: Box<dyn std::any::Any + Send>) {
        let error = panic_error("node", panic);
        let Some(slot) = self.slots.get_mut(i as usize) else {
            return;
        };
        if slot.status == Status::Waiting {
            slot.status = Status::Running;
        }
        if slot.status == Status::Running {
            self.finish_node(i, Err(error));
        } else if self.failure.is_none() {
            let node = self.plan.nodes.get(i as usize).map(|n| n.id.clone());
            self.panicked_detail(node.as_deref(), &error.message);
        }
    }

    /// The engine's work panicked where no single node can carry the
    /// failure (a map's items, the scheduler itself): the chain fails with a
    /// `runtime_error`, once.
    pub(crate) fn chain_panicked(
        &mut self,
        node: Option<u32>,
        panic: Box<dyn std::any::Any + Send>,
    ) {
        let error = panic_error("chain", panic);
        let id = node
            .and_then(|n| self.plan.nodes.get(n as usize))
            .map(|n| n.id.clone());
        self.panicked_detail(id.as_deref(), &error.message);
    }

    fn panicked_detail(&mut self, node_id: Option<&str>, message: &str) {
        let mut detail = Map::new();
        detail.insert(
            "code".into(),
            Value::from(ErrorCode::RUNTIME_ERROR.as_str()),
        );
        detail.insert("message".into(), Value::from(message));
        detail.insert("node_id".into(), Value::from(node_id.unwrap_or("")));
        self.fail(detail, message);
    }

    fn joined(&mut self, joined: Result<(Tag, NodeResult), JoinError>) {
        // Tasks catch their own panics and are never aborted one by one, so
        // a join error carries no result to deliver.
        if let Ok((tag, result)) = joined {
            self.result(tag, result);
        }
    }

    fn result(&mut self, tag: Tag, result: NodeResult) {
        // A call's notices come before its result.
        if self.notices.is_some() {
            self.drain_notices();
        }
        match tag {
            Tag::Node(i) => self.finish_node(i, result),
            Tag::Item(m, k) => self.finish_item(m, k, result),
        }
    }

    /// Prefetches node `n`'s record and the upstream outputs its
    /// `input_map` reads.
    fn prefetch_inputs(&self, n: u32) {
        let plan = self.plan;
        let Some(node) = plan.nodes.get(n as usize) else {
            return;
        };
        for (_, expr) in plan.input_map(node) {
            if let Expr::Path {
                root: Root::Node(j),
                ..
            } = expr
            {
                prefetch(self.outs.get(*j as usize));
            }
        }
    }

    fn start(&mut self, i: u32) {
        let plan = self.plan;
        // The dependents' slots, updated when this node settles.
        for e in plan.out_edges(i) {
            prefetch(self.slots.get(e.to as usize));
        }
        let Some(node) = plan.nodes.get(i as usize) else {
            return;
        };
        match self.slots.get_mut(i as usize) {
            Some(slot) if slot.status == Status::Waiting => slot.status = Status::Running,
            _ => return,
        }
        self.nodes_run += 1;
        self.ev.emit(&node.id, None, ChainPhase::START, None, None);
        let mut env = Env::new(
            &self.slots,
            &mut self.outs,
            &self.input,
            &mut self.input_var,
        );
        match &node.spec {
            Spec::Run => match env
                .input_of(node, plan.input_map(node), plan.shape(node))
                .and_then(|input| Ok((timeout_of(node, &input)?, input)))
            {
                Ok((timeout, input)) => {
                    let call = NodeCall {
                        node_id: node.id.clone(),
                        item: None,
                        kind: node.kind().clone(),
                        name: node.name.clone(),
                        input,
                        cancel: self.call_cancel.clone(),
                        deadline: None,
                        attempt: 1,
                        notices: None,
                    };
                    self.launch(Tag::Node(i), call, timeout);
                }
                Err(e) => self.finish_node(i, Err(e)),
            },
            Spec::Branch(branch) => {
                let BranchSpec {
                    cond,
                    on_true,
                    on_false,
                    upstream,
                } = &**branch;
                env.upstream = *upstream;
                let result = env
                    .truth(cond)
                    .map(|holds| {
                        let taken = if holds { on_true } else { on_false };
                        let taken = taken
                            .and_then(|t| plan.nodes.get(t as usize))
                            .map_or(Value::Null, |t| Value::from(&*t.id));
                        let mut out = Map::new();
                        out.insert("condition".into(), Value::Bool(holds));
                        out.insert("taken".into(), taken);
                        Value::Object(out)
                    })
                    .map_err(|e| NodeError::runtime(format!("condition: {e}")));
                self.finish_node(i, result);
            }
            Spec::Map(map) => self.start_map(i, &map.items),
        }
    }

    /// Calls the runner: polls the future once here, and hands it to a task
    /// if it is not finished. A call whose result a resumed run was given
    /// ends at once with it.
    fn launch(&mut self, tag: Tag, mut call: NodeCall, timeout: Option<Duration>) {
        if let Some(resume) = &mut self.ev.resume
            && let Some(prior) = resume.calls.get_mut(call.wire_id().as_str())
        {
            call.attempt = prior.attempt;
            if let Some(result) = prior.result.take() {
                return self.result(tag, result);
            }
        }
        if let Some((tx, _)) = &self.notices {
            call.notices = Some(crate::Notices {
                tx: tx.clone(),
                node_id: call.node_id.clone(),
                item: call.item,
            });
        }
        let node_deadline = timeout.and_then(|t| deadline_after(Instant::now(), t));
        call.deadline = match (self.deadline, node_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // A node with its own timeout gets a child token it can fire alone;
        // otherwise the call shares the token it came with (token clones and
        // drops take a lock, so none are made needlessly).
        let own_token = timeout.map(|_| {
            let child = Arc::new(call.cancel.child_token());
            call.cancel = child.clone();
            child
        });
        let timed = Timed {
            runner: self.runner.clone(),
            node_deadline,
            timeout,
            own_token,
            grace: self.cfg.cancel_grace,
        };
        let mut fut: BoxNodeFuture = match &self.observer {
            None => match timed.call(call) {
                Ok(fut) => fut,
                Err(e) => return self.result(tag, Err(e)),
            },
            Some(observer) => observed(observer.clone(), timed, call),
        };
        if self.cfg.inline_first_poll {
            let mut cx = Context::from_waker(Waker::noop());
            match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))) {
                Ok(Poll::Ready(result)) => return self.result(tag, result),
                Ok(Poll::Pending) => {}
                Err(panic) => return self.result(tag, Err(panic_error("runner", panic))),
            }
        }
        self.tasks.spawn(async move {
            let result = AssertUnwindSafe(fut)
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| Err(panic_error("runner", panic)));
            (tag, result)
        });
    }
}

/// A runner call under the node's own timeout.
struct Timed {
    runner: Arc<dyn DynNodeRunner>,
    node_deadline: Option<Instant>,
    timeout: Option<Duration>,
    own_token: Option<Arc<CancellationToken>>,
    grace: Duration,
}

impl Timed {
    /// The runner's future for `call`, bounded by the node's timeout. A
    /// panic while the runner makes its future is an `Err`.
    fn call(self, call: NodeCall) -> Result<BoxNodeFuture, NodeError> {
        let runner = self.runner;
        let fut = catch_unwind(AssertUnwindSafe(|| runner.run_boxed(call)))
            .map_err(|panic| panic_error("runner", panic))?;
        let grace = self.grace;
        Ok(match (self.node_deadline, self.timeout, self.own_token) {
            (Some(at), Some(t), Some(token)) => Box::pin(async move {
                let mut fut = fut;
                match tokio::time::timeout_at(at, &mut fut).await {
                    Ok(result) => result,
                    Err(_) => {
                        // Tell the runner, let it wind down on its own for
                        // the grace period, and report the timeout now.
                        token.cancel();
                        tokio::spawn(async move {
                            let _ = tokio::time::timeout(grace, fut).await;
                        });
                        Err(NodeError::timeout(format!(
                            "node timed out after {} s",
                            t.as_secs_f64()
                        )))
                    }
                }
            }),
            _ => fut,
        })
    }
}

/// The call between its observer's `started` and `finished`: the runner is
/// called once the start is observed, and the result reaches the engine
/// once it is (a panic of the runner included).
fn observed(observer: Arc<dyn CallObserver>, timed: Timed, call: NodeCall) -> BoxNodeFuture {
    Box::pin(async move {
        observer.started(&call).await?;
        let key = call.key();
        let result = match timed.call(call) {
            Ok(fut) => AssertUnwindSafe(fut)
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| Err(panic_error("runner", panic))),
            Err(e) => Err(e),
        };
        observer.finished(&key, &result).await?;
        result
    })
}

/// The node's own timeout, read only when its input can have one.
fn timeout_of(
    node: &crate::graph::Node<'_>,
    input: &crate::input::NodeInput,
) -> Result<Option<Duration>, NodeError> {
    if node.may_time_out {
        node_timeout(input)
    } else {
        Ok(None)
    }
}

/// A panic as a `runtime_error`; `whose` is `runner`, `node` or `chain`.
fn panic_error(whose: &str, panic: Box<dyn std::any::Any + Send>) -> NodeError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned());
    NodeError::runtime(format!("{whose} panicked: {message}"))
}
