//! The one call pipeline of tools and skills: lookup and checks per kind
//! ([`CallKind`]), then the shared part — deadline, event sink, call context,
//! supervision (panics, timeout, cancellation), duration, collected events —
//! and the kind's result.

use std::sync::{Arc, Mutex};

use a2e_proto::{
    ErrorCode, EventKind, Message, SkillCallRequest, SkillResult, ToolCallRequest, ToolResult,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use super::Host;
use crate::error::{HostError, HostResult};
use crate::host::CallOptions;
use crate::outbound::{EventStream, Outbound};
use crate::plugin::{CallContext, EventSink};
use crate::registry::ArgsValidator;

mod kinds;
mod layers;
mod stages;
pub(crate) use kinds::{SkillCallKind, ToolCallKind};
pub use layers::{ApprovalRequired, CallHead, CallLayer, CallTarget, WaitWatch, WatchWaits};
use stages::{Clock, Observed};

/// Most events kept in a result's `events` list; later ones are still streamed.
pub const MAX_COLLECTED_EVENTS: usize = 1000;

/// A call's events: numbered, the first [`MAX_COLLECTED_EVENTS`] kept for
/// its result, forwarded to `stream` when given. One allocation per call.
struct Collected<E> {
    seq: std::sync::atomic::AtomicU64,
    list: Mutex<Vec<E>>,
    req_id: String,
    stream: Option<mpsc::Sender<Outbound>>,
}

/// An event sink over a fresh [`Collected`].
fn collecting_sink<E>(
    req_id: &str,
    stream: Option<mpsc::Sender<Outbound>>,
    make: fn(EventKind, Map<String, Value>, u64, String) -> E,
) -> (EventSink, Arc<Collected<E>>)
where
    E: Clone + Into<Message> + Send + 'static,
{
    let collected = Arc::new(Collected {
        seq: std::sync::atomic::AtomicU64::new(0),
        list: Mutex::new(Vec::new()),
        req_id: req_id.to_owned(),
        stream,
    });
    let state = collected.clone();
    let sink = EventSink::new(move |kind, data| {
        let n = state.seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let event = make(kind, data, n, state.req_id.clone());
        if let Ok(mut list) = state.list.lock()
            && list.len() < MAX_COLLECTED_EVENTS
        {
            list.push(event.clone());
        }
        let stream = state.stream.clone();
        async move {
            if let Some(tx) = stream {
                let _ = tx.send(Outbound::Message(event.into())).await;
            }
        }
        .boxed()
    });
    (sink, collected)
}

fn take<E>(collected: &Collected<E>) -> Vec<E> {
    collected
        .list
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default()
}

/// A panic's message, when it has one.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// A call's outcome with its panic caught: the panic as the call's error.
fn caught<T>(what: &str, joined: std::thread::Result<HostResult<T>>) -> HostResult<T> {
    joined.unwrap_or_else(|panic| {
        Err(HostError::Runtime(format!(
            "{what} panicked: {}",
            panic_message(panic.as_ref())
        )))
    })
}

/// How long a cancelled call may take to wind down before it is dropped.
pub const CANCEL_GRACE: Duration = Duration::from_millis(200);

/// Runs `fut` (a call already polled once, its panics caught) under
/// `deadline` and `outer` (the caller's token) on the caller's task, turning
/// timeouts and cancellation into errors. On timeout or cancellation the
/// call's token fires, the call gets [`CANCEL_GRACE`] to wind down, and is
/// then dropped (its drop guards kill what it started); dropped itself, it
/// fires the call's token too, so what the call spawned stops with it.
///
/// No task is spawned: the caller (a session's request task, a chain node)
/// already runs on its own. Plugins must not block the thread, the rule for
/// any async code.
async fn supervise<T>(
    fut: impl std::future::Future<Output = std::thread::Result<HostResult<T>>>,
    call_token: CancellationToken,
    outer: &CancellationToken,
    deadline: Instant,
    timeout_secs: u64,
    what: &str,
) -> HostResult<T> {
    let guard = call_token.clone().drop_guard();
    let mut fut = std::pin::pin!(fut);
    let outcome = tokio::select! {
        joined = fut.as_mut() => {
            guard.disarm();
            return caught(what, joined);
        }
        _ = tokio::time::sleep_until(deadline) => Err(HostError::Timeout(timeout_secs)),
        _ = outer.cancelled() => Err(HostError::Cancelled),
    };
    stop(fut, &call_token).await;
    guard.disarm();
    outcome
}

/// Fires the call's token and lets the call wind down for [`CANCEL_GRACE`];
/// the caller then drops it.
async fn stop<F: std::future::Future>(fut: std::pin::Pin<&mut F>, call_token: &CancellationToken) {
    call_token.cancel();
    let _ = tokio::time::timeout(CANCEL_GRACE, fut).await;
}

/// The longest any call may run, whatever its request asks: one day, the chain
/// engine's limit. A larger `timeout` on the wire is clamped to it
/// (docs/protocol-decisions.md).
pub const MAX_TIMEOUT_SECS: u64 = a2e_chain::MAX_TIMEOUT_SECS;

/// A call's timeout: the request's when given (non-zero), else the default;
/// never above a skill's own `timeout_seconds` when it has one, nor above
/// [`MAX_TIMEOUT_SECS`].
pub fn effective_timeout(requested: u64, default: u64, ceiling: Option<u64>) -> u64 {
    let ceiling = ceiling.filter(|c| *c > 0);
    let wanted = match (requested, ceiling) {
        (0, Some(own)) => own,
        (0, None) => default,
        (asked, Some(own)) => asked.min(own),
        (asked, None) => asked,
    };
    wanted.clamp(1, MAX_TIMEOUT_SECS)
}

/// Who makes a call, and what bounds it.
pub(crate) struct Caller<'a> {
    /// The session the call belongs to.
    pub session_id: &'a str,
    /// Who the session acts for, when the caller has it at hand (else it is
    /// looked up).
    pub identity: Option<&'a super::Identity>,
    /// Where events go when the request streams.
    pub stream: Option<mpsc::Sender<Outbound>>,
    /// Fires when the caller gives up on the call.
    pub cancel: &'a CancellationToken,
    /// Set by a caller that fires `cancel` at this deadline itself and then
    /// drops the call (a chain node under its chain's deadline): when it
    /// comes before the call's own timeout, the call takes `cancel` as its
    /// token and sets no timer of its own.
    pub deadline: Option<Instant>,
    /// Whether the result is read whole. A chain node's result is read for
    /// its data or error only: its plugin's events are dropped unseen and
    /// its duration is not measured.
    pub full_result: bool,
    /// The span the call's span hangs under (a chain's), and the chain and
    /// node the call runs for; without one, under the current span.
    pub trace: Option<NodeTrace<'a>>,
    /// A durable run's idempotency key of the node the call runs for
    /// (`run_id/node_id/attempt`), handed to the plugin in its context.
    pub idempotency_key: Option<&'a str>,
    /// What the call carries beyond its arguments, for its context.
    pub extensions: crate::plugin::Extensions,
}

/// Where a chain node's call sits in its chain's trace.
#[derive(Clone, Copy)]
pub(crate) struct NodeTrace<'a> {
    /// The chain's span, or (a cluster worker's node) the coordinator's
    /// span of the node, from the work message's headers.
    pub parent: a2e_telemetry::Parent<'a>,
    /// The chain's id.
    pub chain_id: &'a str,
    /// The node's id.
    pub node_id: &'a str,
}

impl<'a> Caller<'a> {
    /// A call of session `session_id` under its own timeout.
    pub(crate) fn session(
        session_id: &'a str,
        stream: Option<mpsc::Sender<Outbound>>,
        cancel: &'a CancellationToken,
    ) -> Self {
        Self {
            session_id,
            identity: None,
            stream,
            cancel,
            deadline: None,
            full_result: true,
            trace: None,
            idempotency_key: None,
            extensions: crate::plugin::Extensions::new(),
        }
    }
}

/// What the call pipeline needs to know of a request.
pub(crate) struct CallSpec<'a> {
    req_id: &'a str,
    correlation_id: &'a str,
    timeout_secs: u64,
    streaming: bool,
}

/// What a call that ran came to, before it takes the shape its caller reads:
/// a wire answer ([`Finished::answer`]) or a chain node's data, which needs
/// none of the rest.
pub(crate) struct Finished<K: CallKind> {
    /// The plugin's output, or the code and message of a call that ran and
    /// failed.
    pub outcome: Result<K::Output, (ErrorCode, String)>,
    /// How long it ran (0 when its caller reads no duration).
    pub duration_ms: u64,
    /// Its events, when its caller keeps them.
    pub events: Vec<K::Event>,
}

impl<K: CallKind> Finished<K> {
    /// The result that answers `req`.
    pub(crate) fn answer(self, req: &K::Req) -> K::Result {
        match self.outcome {
            Ok(out) => K::success(req, out, self.duration_ms, self.events),
            Err((code, message)) => K::failure(req, code, message, self.duration_ms, self.events),
        }
    }
}

/// What differs between a tool call and a skill call.
pub(crate) trait CallKind {
    /// The request.
    type Req: Sync;
    /// The registry entry the request names.
    type Entry: Send + Sync;
    /// What the plugin returns.
    type Output: Send + 'static;
    /// The event type.
    type Event: Clone + Into<Message> + Send + 'static;
    /// The result answered.
    type Result;
    /// `tool` or `skill`, for messages.
    const WHAT: &'static str;
    /// What the call targets, for the pipeline's layers.
    const TARGET: CallTarget;
    /// The kind, for metrics.
    const METRIC: a2e_telemetry::CallKind;

    /// The call's span (`execute_tool {name}`, `invoke_agent {name}`).
    fn span<'t>(
        telemetry: &'t a2e_telemetry::Telemetry,
        entry: &'t Self::Entry,
    ) -> a2e_telemetry::SpanBuilder<'t>;
    /// The entry's name.
    fn name(entry: &Self::Entry) -> &str;
    /// What the call returned, for a span that records content.
    fn data(out: &Self::Output) -> &Value;

    /// Finds the entry and checks the request against it (refusals are `Err`).
    fn find(host: &Host, req: &Self::Req) -> HostResult<Self::Entry>;
    /// The entry's compiled argument schema.
    fn validator(entry: &Self::Entry) -> &ArgsValidator;
    /// The request's id, correlation id, streaming flag and timeout.
    fn spec<'a>(host: &Host, req: &'a Self::Req, entry: &Self::Entry) -> CallSpec<'a>;
    /// The plugin call.
    ///
    /// The future borrows the entry (its name is the registry's key), which
    /// the pipeline keeps: one allocation per call, the plugin's own.
    fn invoke<'a>(
        host: &Arc<Host>,
        req: &Self::Req,
        args: Map<String, Value>,
        entry: &'a Self::Entry,
        ctx: CallContext,
    ) -> BoxFuture<'a, HostResult<Self::Output>>;
    /// An event of this kind.
    fn event(kind: EventKind, data: Map<String, Value>, seq: u64, req_id: String) -> Self::Event;
    /// The code of a call that ran and failed inside the host or its plugin.
    const FAILED: ErrorCode;
    /// What a chain node reads of the output: its data.
    fn into_data(out: Self::Output) -> Value;
    /// The result of a call that ran and succeeded.
    fn success(
        req: &Self::Req,
        out: Self::Output,
        duration_ms: u64,
        events: Vec<Self::Event>,
    ) -> Self::Result;
    /// The result of a call that ran and failed.
    fn failure(
        req: &Self::Req,
        code: ErrorCode,
        message: String,
        duration_ms: u64,
        events: Vec<Self::Event>,
    ) -> Self::Result;
}

/// The span of a call: under its chain's span when it runs for a node,
/// else under the current span (the request's); its arguments when the
/// span records content.
fn call_span<K: CallKind>(
    telemetry: &a2e_telemetry::Telemetry,
    entry: &K::Entry,
    session_id: &str,
    trace: Option<NodeTrace<'_>>,
    args: &Map<String, Value>,
) -> a2e_telemetry::OpSpan {
    if !telemetry.traces_enabled() {
        return a2e_telemetry::OpSpan::default();
    }
    let mut builder = K::span(telemetry, entry).session(session_id);
    if let Some(trace) = &trace {
        builder = builder.parent(trace.parent).node(trace.node_id);
        if !trace.chain_id.is_empty() {
            builder = builder.chain(trace.chain_id);
        }
    }
    let op = builder.start();
    if op.captures_content() {
        op.arguments(&Value::Object(args.clone()));
    }
    op
}

impl Host {
    /// A durable run's node call opened its span: the span's trace and
    /// span id join the node's journaled start (`key` is its idempotency
    /// key, `run_id/node_id/attempt`). Not awaited: it only informs.
    #[cfg(feature = "journal")]
    fn journal_span(&self, key: &str, op: &a2e_telemetry::OpSpan) {
        let (Some(journal), Some(cx)) = (self.journal(), op.trace_context()) else {
            return;
        };
        if let Ok(key) = a2e_journal::NodeKey::parse(key) {
            drop(journal.node_traced(&key, &cx.trace_id(), &cx.span_id()));
        }
    }

    /// `tool/call`: validates, runs under the timeout, and returns the result.
    /// `Err` is a refusal (unknown tool, invalid arguments, denied) to answer
    /// with an `error` message; a call that ran and failed is `Ok` with
    /// `success: false`. The arguments go to the plugin without a copy.
    pub async fn call_tool(
        self: &Arc<Self>,
        mut req: ToolCallRequest,
        options: CallOptions<'_>,
    ) -> HostResult<ToolResult> {
        let args = std::mem::take(&mut req.arguments);
        let key = options.key();
        let mut options = options;
        let extensions = options.take_extensions();
        let (session, events, cancel) = options.into_parts();
        let fresh;
        let cancel = match cancel {
            Some(token) => token,
            None => {
                fresh = CancellationToken::new();
                &fresh
            }
        };
        let mut caller = Caller::session(session, events.map(EventStream::into_sender), cancel);
        caller.idempotency_key = key;
        caller.extensions = extensions;
        let finished = self.call::<ToolCallKind>(caller, &req, args).await?;
        Ok(finished.answer(&req))
    }

    /// `skill/call`: checks status and arguments, runs under the timeout.
    /// `Err` is a refusal; a skill that ran and failed is `Ok` with `success: false`.
    pub async fn call_skill(
        self: &Arc<Self>,
        mut req: SkillCallRequest,
        options: CallOptions<'_>,
    ) -> HostResult<SkillResult> {
        let args = std::mem::take(&mut req.arguments);
        let key = options.key();
        let mut options = options;
        let extensions = options.take_extensions();
        let (session, events, cancel) = options.into_parts();
        let fresh;
        let cancel = match cancel {
            Some(token) => token,
            None => {
                fresh = CancellationToken::new();
                &fresh
            }
        };
        let mut caller = Caller::session(session, events.map(EventStream::into_sender), cancel);
        caller.idempotency_key = key;
        caller.extensions = extensions;
        let finished = self.call::<SkillCallKind>(caller, &req, args).await?;
        Ok(finished.answer(&req))
    }

    /// Runs a call of kind `K` with `args` (the request's arguments, taken
    /// out of it by an owner, or a copy) through the pipeline's stages:
    /// lookup, validation, events, admission (the added layers), clock,
    /// context, observation, the work (the plugin), supervision and the
    /// result. `Err` is a
    /// refusal; a call that ran and failed is `Ok`, its outcome the code
    /// and message (which [`Finished::answer`] turns into `success: false`).
    pub(crate) async fn call<K: CallKind>(
        self: &Arc<Self>,
        mut caller: Caller<'_>,
        req: &K::Req,
        args: Map<String, Value>,
    ) -> HostResult<Finished<K>> {
        let entry = self.lookup::<K>(req).await?;
        let mut args = K::validator(&entry).check_owned(args)?;
        let spec = K::spec(self, req, &entry);
        let (sink, collected) = stages::events::<K>(&mut caller, &spec);
        match self
            .admit::<K>(&caller, &spec, &entry, &mut args, &sink)
            .await
        {
            Ok(_) => {}
            Err(e) if e.is_refusal() => return Err(e),
            Err(e) => {
                return Ok(Finished {
                    duration_ms: 0,
                    events: stages::collected(collected.as_ref()),
                    outcome: Err((e.code(), e.to_string())),
                });
            }
        }
        let clock = Clock::start(&caller, spec.timeout_secs);
        let (ctx, own_token) = self.context(&mut caller, &spec, &clock, sink);
        let observed = Observed::start::<K>(self, &entry, &caller, &args);
        let work = self.work::<K>(req, args, &entry, ctx, &observed.op);
        let outcome = stages::supervised(
            work,
            own_token,
            caller.cancel,
            &clock,
            spec.timeout_secs,
            K::WHAT,
        )
        .await;
        Ok(Finished {
            duration_ms: clock.duration_ms(caller.full_result),
            events: stages::collected(collected.as_ref()),
            outcome: observed.finish::<K>(&entry, outcome)?,
        })
    }

    /// The entry `req` names. A tool that loads on first use (a mounted MCP
    /// server not started yet), or a skill blocked only for want of one:
    /// load, then look again (also when this load added nothing: a
    /// concurrent call's load may have added the tool meanwhile).
    async fn lookup<K: CallKind>(&self, req: &K::Req) -> HostResult<K::Entry> {
        match K::find(self, req) {
            Err(HostError::UnknownTool(_)) => {
                self.registry.load_tools(true).await;
                K::find(self, req)
            }
            Err(HostError::SkillUnavailable(_)) => {
                self.load_tools_for_skills().await;
                K::find(self, req)
            }
            found => found,
        }
    }
}
