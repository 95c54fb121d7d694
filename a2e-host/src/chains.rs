//! The chain plugin (priority 10): runs `chain/req` on the a2e-chain engine
//! with the host's tools, skills and processes as node runners.
//!
//! - `tool` nodes call the tool with the node's resolved input as arguments
//!   (validated like any call); the node's output is the tool result's `data`.
//! - `skill` nodes call the skill; the output is the skill result's `data`.
//! - `proc` nodes run `input.cmd` (argv, no shell; `cwd`, `env` optional)
//!   through the proc capability and wait for exit; the output is
//!   `{exit_code, stdout, stderr}`, and a non-zero exit fails the node.
//!
//! A node failure carries the callee's error code (`tool_error`, `timeout`,
//! `tool_denied`, …). Every node call gets the chain's cancellation token, so
//! a chain timeout or a cancelled session stops the tools and kills processes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_chain::{
    ChainConfig, Engine, Event, EventSink, NodeCall, NodeError, NodeResult, NodeRunner, Plan,
};
use a2e_proto::{
    ChainEventWriter, ChainRequest, ChainResponse, ErrorCode, NodeKind, SkillCallRequest,
    ToolCallRequest,
};
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{HostError, HostResult};
use crate::host::{Caller, Host, Identity, SkillKind, ToolKind};
use crate::session::Outbound;

/// Priority of the chain plugin (a2e-core.md §6).
pub const CHAIN_PLUGIN_PRIORITY: i32 = 10;

/// Runs chain nodes on a host, within one session.
pub struct HostRunner {
    host: Arc<Host>,
    session_id: String,
    /// The tool calls this runner made, one per tool name and timeout:
    /// nodes' calls are not wire messages (no id, version or session id of
    /// their own), so every node calling the same tool under the same
    /// deadline makes the same request.
    tool_requests: Mutex<Vec<Arc<ToolCallRequest>>>,
    /// Who the session acts for, looked up once per chain.
    identity: Identity,
}

impl HostRunner {
    /// A runner for `session_id` on `host`.
    pub fn new(host: Arc<Host>, session_id: &str) -> Self {
        Self {
            identity: host.identity(session_id),
            host,
            session_id: session_id.to_owned(),
            tool_requests: Mutex::new(Vec::new()),
        }
    }

    /// The request calling tool `name` with `timeout`: made once, then
    /// shared by every node that calls it.
    fn tool_request(&self, name: &str, timeout: u64) -> Arc<ToolCallRequest> {
        let Ok(mut made) = self.tool_requests.lock() else {
            return Arc::new(tool_request(name, timeout));
        };
        if let Some(req) = made
            .iter()
            .find(|r| r.timeout == timeout && r.tool_name == name)
        {
            return req.clone();
        }
        let req = Arc::new(tool_request(name, timeout));
        // A chain calls a handful of tools; past that, no more are kept.
        if made.len() < MAX_KEPT_REQUESTS {
            made.push(req.clone());
        }
        req
    }

    /// A node's call: the chain fires the node's token at the chain's
    /// deadline and drops the call after its grace, so the call keeps no
    /// timer of its own under that deadline.
    fn caller<'a>(
        &'a self,
        cancel: &'a CancellationToken,
        deadline: Option<tokio::time::Instant>,
    ) -> Caller<'a> {
        Caller {
            session_id: &self.session_id,
            identity: Some(&self.identity),
            stream: None,
            cancel,
            deadline,
            full_result: false,
        }
    }
}

/// Most distinct tool requests a runner keeps.
const MAX_KEPT_REQUESTS: usize = 32;

/// A node's call of tool `name`: no id, version or session of its own.
fn tool_request(name: &str, timeout: u64) -> ToolCallRequest {
    ToolCallRequest {
        id: String::new(),
        version: String::new(),
        tool_name: name.to_owned(),
        timeout,
        ..ToolCallRequest::default()
    }
}

/// Whole seconds left before `deadline` (at least 1), or 0 for "no limit".
fn secs_left(call: &NodeCall) -> u64 {
    call.deadline
        .map(|d| {
            let left = d.saturating_duration_since(tokio::time::Instant::now());
            left.as_secs() + u64::from(left.subsec_nanos() > 0)
        })
        .map_or(0, |s| s.max(1))
}

fn node_error(e: HostError) -> NodeError {
    NodeError::new(e.code(), e.to_string())
}

/// A tool or skill result as the node's: its data, or its error.
fn outcome(success: bool, data: Value, code: ErrorCode, error: Option<String>) -> NodeResult {
    if success {
        Ok(data)
    } else {
        Err(NodeError::new(code, error.unwrap_or_default()))
    }
}

impl NodeRunner for HostRunner {
    async fn run(&self, call: NodeCall) -> NodeResult {
        // The tool path inline, the others boxed: a runner's future is
        // allocated and moved per node, and the largest path sets its size
        // (the proc path would more than double it).
        if call.kind == NodeKind::TOOL {
            self.run_tool(call).await
        } else if call.kind == NodeKind::SKILL {
            Box::pin(self.run_skill(call)).await
        } else if call.kind == NodeKind::PROC {
            Box::pin(run_proc(&self.host, &self.session_id, call)).await
        } else {
            Err(NodeError::runtime(format!(
                "node kind `{}` cannot be run by the host",
                call.kind
            )))
        }
    }
}

impl HostRunner {
    async fn run_tool(&self, call: NodeCall) -> NodeResult {
        // Under the chain's deadline a tool has no timeout of its own.
        let timeout = if call.deadline.is_some() {
            crate::host::MAX_TIMEOUT_SECS
        } else {
            0
        };
        let req = self.tool_request(&call.name, timeout);
        let result = self
            .host
            .call::<ToolKind>(
                self.caller(&call.cancel, call.deadline),
                &req,
                call.input.into_map(),
            )
            .await
            .map_err(node_error)?;
        outcome(
            result.success,
            result.data,
            result.error_code.unwrap_or(ErrorCode::TOOL_ERROR),
            result.error,
        )
    }

    async fn run_skill(&self, call: NodeCall) -> NodeResult {
        // A skill's own `timeout_seconds` still applies when shorter.
        let timeout = secs_left(&call);
        let mut req = SkillCallRequest::new(&call.name, Value::Null);
        req.timeout = timeout;
        req.streaming = false;
        let result = self
            .host
            .call::<SkillKind>(
                self.caller(&call.cancel, call.deadline),
                &req,
                call.input.into_map(),
            )
            .await
            .map_err(node_error)?;
        outcome(
            result.success,
            result.data,
            result.error_code.unwrap_or(ErrorCode::SKILL_ERROR),
            result.error,
        )
    }
}

async fn run_proc(host: &Arc<Host>, session_id: &str, call: NodeCall) -> NodeResult {
    let input = call.input.into_map();
    let cmd: Vec<String> = match input.get("cmd") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(NodeError::new(
                    ErrorCode::SCHEMA_VIOLATION,
                    format!("input.cmd: expected strings, got {other}"),
                )),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(NodeError::new(
                ErrorCode::SCHEMA_VIOLATION,
                "input.cmd: a proc node needs `cmd`, an array of strings",
            ));
        }
    };
    let cwd = input.get("cwd").and_then(Value::as_str).unwrap_or("");
    let env = input
        .get("env")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let timeout = call
        .deadline
        .map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
    let out = host
        .procs()
        .run_to_exit(session_id, cmd, cwd, env, timeout, (*call.cancel).clone())
        .await
        .map_err(node_error)?;
    match out.get("exit_code").and_then(Value::as_i64) {
        Some(0) => Ok(out),
        code => {
            let stderr = out.get("stderr").and_then(Value::as_str).unwrap_or("");
            let tail: String = stderr
                .chars()
                .rev()
                .take(500)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            Err(NodeError::runtime(format!(
                "process exited with {}: {tail}",
                code.map_or("a signal".to_owned(), |c| format!("code {c}"))
            )))
        }
    }
}

/// The engine for a session's chains: a request without a timeout gets the
/// host's default chain timeout.
fn engine(host: &Arc<Host>, session_id: &str) -> Engine {
    Engine::new(HostRunner::new(host.clone(), session_id)).with_config(config(host))
}

/// The chain configuration of `host`'s sessions.
fn config(host: &Host) -> ChainConfig {
    ChainConfig {
        default_timeout_secs: host.config().timeouts.chain_secs,
        ..ChainConfig::default()
    }
}

fn refusal(e: a2e_chain::ValidationError) -> HostError {
    HostError::InvalidChain {
        code: e.code(),
        message: e.to_string(),
        detail: e.detail(),
    }
}

/// Validates a chain without running it.
pub fn validate(host: &Arc<Host>, req: &ChainRequest) -> HostResult<usize> {
    plan(host, req).map(|_| req.nodes.len())
}

/// Bytes of encoded events a streaming chain gathers at most before it
/// hands them on although the engine is not about to wait.
const EVENT_CHUNK: usize = 512 * 1024;

/// A run is gathered in segments of this size (one allocation each, none
/// grown and copied as the run gets longer); each goes to the writer as it
/// is (the stdio writer writes runs this long without copying them).
const EVENT_SEGMENT: usize = 64 * 1024;

/// Room past a segment's size for the line that fills it.
const EVENT_SLACK: usize = 4 * 1024;

/// How long an event may wait in a streaming chain's buffer while the
/// engine keeps working (a stretch of nodes that finish inline) before the
/// run is handed on.
const EVENT_AGE: Duration = Duration::from_millis(5);

/// Runs a `chain/req` for a session. Events go to `stream` as `chain/event`s
/// when the request asks for streaming. `Err` is a refusal (invalid chain).
pub async fn run_request(
    host: &Arc<Host>,
    session_id: &str,
    req: &ChainRequest,
    stream: Option<mpsc::Sender<Outbound>>,
    cancel: &CancellationToken,
) -> HostResult<ChainResponse> {
    let plan = plan(host, req)?;
    Ok(run_plan(host, session_id, &plan, stream, cancel).await)
}

/// Validates a `chain/req` for [`run_plan`]; `Err` is a refusal (invalid
/// chain). A caller that answers the request over a transport keeps the
/// plan until the answer is out: freeing a large chain's compiled nodes
/// takes a while and need not delay it.
pub fn plan<'r>(host: &Arc<Host>, req: &'r ChainRequest) -> HostResult<Plan<'r>> {
    a2e_chain::validate(req, &config(host)).map_err(refusal)
}

/// Runs a chain validated by [`plan`] for a session, as [`run_request`]
/// does (its `duration_ms` counts from here).
pub async fn run_plan(
    host: &Arc<Host>,
    session_id: &str,
    plan: &Plan<'_>,
    stream: Option<mpsc::Sender<Outbound>>,
    cancel: &CancellationToken,
) -> ChainResponse {
    let engine = engine(host, session_id);
    let req = plan.request();
    let Some(stream) = stream.filter(|_| req.streaming) else {
        // Not streaming: the events are not even built.
        return engine.run_plan(plan, (), cancel.clone()).await;
    };
    let (queue, mut queued_rx) = mpsc::unbounded_channel::<(Outbound, usize)>();
    let queued = Arc::new(AtomicUsize::new(0));
    // The sink cancels the run (not the caller's token) when the agent
    // leaves too much unread.
    let run_cancel = cancel.child_token();
    let limit = host.config().max_queued_event_bytes;
    let sink = LineSink {
        lines: ChainEventWriter::new(&req.id),
        buf: Vec::with_capacity(EVENT_SEGMENT + EVENT_SLACK),
        direct: stream.clone(),
        queue,
        queued: queued.clone(),
        limit,
        cancel: run_cancel.clone(),
        overflowed: false,
        handed_on: false,
        run_started: Duration::ZERO,
        segments: Vec::new(),
        held: 0,
    };
    // Runs the sink could not hand on at once, in order, as the channel
    // takes them.
    let forward = async move {
        while let Some((lines, len)) = queued_rx.recv().await {
            // A session that is gone takes nothing more; the rest is dropped.
            let _ = stream.send(lines).await;
            queued.fetch_sub(len, Ordering::AcqRel);
        }
    };
    let own = run_cancel.clone();
    let run = async move { engine.run_plan(plan, sink, run_cancel).await };
    let (mut resp, ()) = tokio::join!(run, forward);
    // Only the sink fires the run's own token without the caller's.
    if own.is_cancelled() && !cancel.is_cancelled() {
        explain_overflow(&mut resp, limit);
    }
    resp
}

/// A run cancelled by its own sink: the response's error says that the
/// agent did not read the events.
fn explain_overflow(resp: &mut ChainResponse, limit: usize) {
    let Some(error) = resp.error.as_mut() else {
        return;
    };
    if error.get("code").and_then(Value::as_str) == Some(ErrorCode::CANCELLED.as_str()) {
        error.insert(
            "message".into(),
            Value::from(format!(
                "chain cancelled: the agent left more than {limit} bytes of its events \
                 unread (max_queued_event_bytes)"
            )),
        );
    }
}

/// A streaming chain's events, encoded as NDJSON lines on the chain's own
/// task (no `Message` per event) and handed to the session's channel in
/// runs: whenever the engine is about to wait, and, while it keeps
/// working, once the run's first event is [`EVENT_AGE`] old or
/// [`EVENT_CHUNK`] bytes are ready. Each run handed on costs a switch to
/// the writer and a wake-up of the agent: a stretch of inline nodes shorter
/// than the age goes out in one write when it ends (in
/// `cargo xtask bench transport`, the 1000-node chain with events over
/// stdio took 2.62–3.10 ms, median 2.95, handed on every 32 KiB, and
/// 2.54–2.96 ms, median 2.79, so; five alternated runs of 200). A run goes straight into the channel when it has room
/// and nothing is queued before it; otherwise it queues (the engine's sink
/// must not block) and the request's forwarder sends it in order. One
/// wake-up of the writer per run instead of one per event; the engine
/// flushes at the end of the run, so every event precedes the response.
/// After handing a run on, the sink has the engine yield
/// ([`EventSink::handed_on`]): the writer, woken on the chain's thread,
/// writes the run while the chain goes on, instead of all runs at its end.
/// A run is gathered in segments of [`EVENT_SEGMENT`] bytes, handed on one
/// item each. More than `limit` bytes queued (an agent that does not read)
/// cancels the run; the events after that point are dropped.
struct LineSink {
    lines: ChainEventWriter,
    buf: Vec<u8>,
    direct: mpsc::Sender<Outbound>,
    /// Runs behind the channel, with their length in bytes.
    queue: mpsc::UnboundedSender<(Outbound, usize)>,
    /// Bytes queued behind the channel.
    queued: Arc<AtomicUsize>,
    limit: usize,
    cancel: CancellationToken,
    overflowed: bool,
    /// A run went to the channel since the engine last asked.
    handed_on: bool,
    /// When the first event of the run was made (since the Unix epoch).
    run_started: Duration,
    /// Full segments of the run, set aside before `buf`.
    segments: Vec<Bytes>,
    /// Bytes in `segments`.
    held: usize,
}

impl LineSink {
    /// Bytes of the run not handed on yet.
    fn held(&self) -> usize {
        self.held + self.buf.len()
    }

    /// Hands one segment of the run on: into the channel when it has room
    /// and nothing of this chain is queued before it, else behind it.
    fn hand_on(&mut self, bytes: Bytes) {
        let len = bytes.len();
        let lines = Outbound::Lines(bytes);
        let lines = if self.queued.load(Ordering::Acquire) == 0 {
            match self.direct.try_send(lines) {
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => return,
                Err(mpsc::error::TrySendError::Full(lines)) => lines,
            }
        } else {
            lines
        };
        let before = self.queued.fetch_add(len, Ordering::AcqRel);
        let _ = self.queue.send((lines, len));
        if before.saturating_add(len) > self.limit {
            self.overflowed = true;
            self.buf = Vec::new();
            self.segments.clear();
            self.cancel.cancel();
        }
    }
}

impl EventSink for LineSink {
    fn event(&mut self, event: &Event<'_>) {
        if self.overflowed {
            return;
        }
        let first = self.held() == 0;
        let made = event.write_line(&self.lines, &mut self.buf);
        if first {
            self.run_started = made;
        }
        // A full segment is set aside, not grown (growing copies it).
        if self.buf.len() >= EVENT_SEGMENT {
            let next = Vec::with_capacity(EVENT_SEGMENT + EVENT_SLACK);
            let full = std::mem::replace(&mut self.buf, next);
            self.held += full.len();
            self.segments.push(Bytes::from(full));
        }
        if self.held() >= EVENT_CHUNK || made.saturating_sub(self.run_started) >= EVENT_AGE {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.held() == 0 || self.overflowed {
            return;
        }
        self.handed_on = true;
        for segment in std::mem::take(&mut self.segments) {
            if self.overflowed {
                return;
            }
            self.hand_on(segment);
        }
        self.held = 0;
        if !self.buf.is_empty() && !self.overflowed {
            let next = Vec::with_capacity(self.buf.len().clamp(1024, EVENT_SEGMENT + EVENT_SLACK));
            let rest = std::mem::replace(&mut self.buf, next);
            self.hand_on(Bytes::from(rest));
        }
    }

    fn handed_on(&mut self) -> bool {
        std::mem::take(&mut self.handed_on)
    }
}

/// Progress callback: (nodes settled, total, node id).
pub type ProgressFn = Box<dyn FnMut(usize, usize, &str) + Send>;

/// Runs a chain for host-internal callers (chain skills, the CLI), reporting
/// progress; `Err` is a refusal (invalid chain).
pub async fn run_chain(
    host: &Arc<Host>,
    session_id: &str,
    req: &ChainRequest,
    mut progress: ProgressFn,
    cancel: &CancellationToken,
) -> HostResult<ChainResponse> {
    let sink = move |event: &Event<'_>| {
        if event.item.is_none() && event.phase != a2e_proto::ChainPhase::START {
            progress(event.progress.settled, event.progress.total, event.node_id);
        }
    };
    engine(host, session_id)
        .run(req, sink, cancel.clone())
        .await
        .map_err(refusal)
}

#[cfg(test)]
mod tests {
    use a2e_proto::{ChainNode, ToolDefinition};
    use serde_json::{Map, json};

    use super::*;
    use crate::config::HostConfig;
    use crate::plugin::{CallContext, ToolOutput, ToolPlugin};

    /// Tools `a` and `b`: each answers with its name and its arguments.
    struct Named;

    impl ToolPlugin for Named {
        fn name(&self) -> &str {
            "named"
        }

        fn tools(&self) -> Vec<ToolDefinition> {
            vec![ToolDefinition::new("a", "A"), ToolDefinition::new("b", "B")]
        }

        async fn call(
            &self,
            tool: &str,
            args: Map<String, Value>,
            _: CallContext,
        ) -> HostResult<ToolOutput> {
            if let Some(ms) = args.get("block_ms").and_then(Value::as_u64) {
                // Busy on the chain's thread, finishing without a wait.
                std::thread::sleep(Duration::from_millis(ms));
            }
            Ok(json!({"tool": tool, "args": args}).into())
        }
    }

    /// A streaming linear chain of `n` nodes of tool `a` with `input`.
    fn streaming_chain(n: usize, input: Value) -> ChainRequest {
        let nodes: Vec<ChainNode> = (0..n)
            .map(|i| {
                let mut node = ChainNode::new(&format!("n{i}"), NodeKind::TOOL, "a");
                node.input = input.as_object().cloned().unwrap_or_default();
                if i + 1 < n {
                    node.next_node = format!("n{}", i + 1);
                }
                node
            })
            .collect();
        ChainRequest {
            entry_node: "n0".into(),
            nodes,
            streaming: true,
            ..ChainRequest::default()
        }
    }

    /// Runs `req`, then reads what its stream received: the items of event
    /// lines (each at most a segment and the line that filled it), the
    /// lines and bytes in all, and how long the run took.
    async fn runs_of(req: &ChainRequest) -> (usize, usize, usize, Duration) {
        let (tx, mut rx) = mpsc::channel(1024);
        let cancel = CancellationToken::new();
        let started = std::time::Instant::now();
        let resp = run_request(&host(), "s", req, Some(tx), &cancel)
            .await
            .unwrap();
        let took = started.elapsed();
        assert!(resp.success, "{:?}", resp.error);
        let (mut runs, mut lines, mut total) = (0, 0, 0);
        while let Some(out) = rx.recv().await {
            if let Outbound::Lines(bytes) = out {
                runs += 1;
                assert!(
                    bytes.len() <= EVENT_SEGMENT + EVENT_SLACK,
                    "{}",
                    bytes.len()
                );
                lines += bytes.iter().filter(|b| **b == b'\n').count();
                total += bytes.len();
            }
        }
        (runs, lines, total, took)
    }

    #[tokio::test]
    async fn a_stretch_of_inline_nodes_hands_its_events_on_by_age_and_size_only() {
        // 500 nodes, 1000 events: one run at the end, plus at most one per
        // EVENT_AGE the stretch lasted and one per EVENT_CHUNK written; each
        // run in segments of EVENT_SEGMENT and its rest.
        let (items, lines, bytes, took) = runs_of(&streaming_chain(500, json!({"x": 1}))).await;
        assert_eq!(lines, 1000);
        let aged = usize::try_from(took.as_micros() / EVENT_AGE.as_micros()).unwrap();
        let runs = 1 + aged + bytes / EVENT_CHUNK;
        let bound = runs + bytes / EVENT_SEGMENT;
        assert!(
            items <= bound,
            "{items} items in {took:?} (at most {bound})"
        );
    }

    #[tokio::test]
    async fn a_long_stretch_of_inline_nodes_hands_events_on_while_it_runs() {
        // 30 nodes that each keep the thread 1 ms: at least 30 ms without a
        // wait, so runs go out every EVENT_AGE, not all at the end.
        let (runs, lines, _, took) = runs_of(&streaming_chain(30, json!({"block_ms": 1}))).await;
        assert_eq!(lines, 60);
        assert!(took >= Duration::from_millis(30));
        assert!(runs >= 3, "{runs} runs in {took:?}");
    }

    fn host() -> Arc<Host> {
        let config = HostConfig {
            root: std::env::temp_dir(),
            builtins: Vec::new(),
            ..HostConfig::default()
        };
        Host::builder(config)
            .with_tool_plugin(Named)
            .build()
            .unwrap()
    }

    #[test]
    fn a_runner_makes_one_request_per_tool_and_timeout() {
        let runner = HostRunner::new(host(), "s");
        let a = runner.tool_request("a", 0);
        assert!(Arc::ptr_eq(&a, &runner.tool_request("a", 0)));
        let b = runner.tool_request("b", 0);
        assert_eq!((a.tool_name.as_str(), b.tool_name.as_str()), ("a", "b"));
        assert!(!Arc::ptr_eq(&a, &b));
        let later = runner.tool_request("a", 7);
        assert_eq!((later.tool_name.as_str(), later.timeout), ("a", 7));
        assert!(!Arc::ptr_eq(&a, &later));
        // Past the kept ones, requests are still right, only not shared.
        for i in 0..MAX_KEPT_REQUESTS {
            runner.tool_request(&format!("t{i}"), 0);
        }
        let extra = runner.tool_request("extra", 0);
        assert_eq!(extra.tool_name, "extra");
        assert!(!Arc::ptr_eq(&extra, &runner.tool_request("extra", 0)));
        assert!(Arc::ptr_eq(&a, &runner.tool_request("a", 0)));
    }

    #[tokio::test]
    async fn nodes_calling_different_tools_each_reach_their_own() {
        let host = host();
        let nodes: Vec<ChainNode> = (0..6)
            .map(|i| {
                let tool = if i % 3 == 1 { "b" } else { "a" };
                let mut node = ChainNode::new(&format!("n{i}"), NodeKind::TOOL, tool);
                node.input.insert("i".into(), json!(i));
                if i < 5 {
                    node.next_node = format!("n{}", i + 1);
                }
                node
            })
            .collect();
        let req = ChainRequest {
            entry_node: "n0".into(),
            nodes,
            streaming: false,
            ..ChainRequest::default()
        };
        let cancel = CancellationToken::new();
        let resp = run_request(&host, "s", &req, None, &cancel).await.unwrap();
        assert!(resp.success, "{:?}", resp.error);
        for i in 0..6 {
            let tool = if i % 3 == 1 { "b" } else { "a" };
            assert_eq!(
                resp.outputs.get(&format!("n{i}")),
                Some(&json!({"tool": tool, "args": {"i": i}})),
                "n{i}"
            );
        }
    }
}
