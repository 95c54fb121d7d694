//! The host's node runner: chain nodes as tool calls, skill calls and
//! processes of the session that runs the chain.

use std::sync::{Arc, Mutex};

use a2e_chain::{NodeCall, NodeError, NodeResult, NodeRunner};
use a2e_proto::{ErrorCode, NodeKind, SkillCallRequest, ToolCallRequest};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::HostError;
use crate::host::{CallKind, Caller, Finished, Host, NodeTrace, SkillCallKind, ToolCallKind};
use crate::plugin::Identity;

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
    /// The chain's span (disabled with telemetry off) and id: the nodes'
    /// spans hang under it.
    span: tracing::Span,
    chain_id: String,
    /// A cluster worker's node: its call's span hangs under this span of
    /// the coordinator (the work message's `traceparent`), if it sent one.
    remote: Option<Option<a2e_telemetry::TraceContext>>,
    /// The durable run the nodes belong to: their calls carry the
    /// idempotency key `run_id/node_id/attempt`.
    run_id: Option<Arc<str>>,
    /// What the nodes' calls carry in their contexts: those of the call
    /// the chain runs for (a chain skill's), empty for an agent's chain.
    extensions: crate::plugin::Extensions,
    /// The nodes whose calls wait for a person's decision (`"approval":
    /// "required"`); `None` when no node asks for one.
    approvals: Option<Arc<[Box<str>]>>,
}

impl HostRunner {
    /// A runner for `session_id` on `host`.
    pub fn new(host: Arc<Host>, session_id: &str) -> Self {
        Self {
            identity: host.identity(session_id),
            host,
            session_id: session_id.to_owned(),
            tool_requests: Mutex::new(Vec::new()),
            span: tracing::Span::none(),
            chain_id: String::new(),
            remote: None,
            run_id: None,
            extensions: crate::plugin::Extensions::new(),
            approvals: None,
        }
    }

    /// The same runner, the calls of `req`'s nodes that ask for a person's
    /// decision (`"approval": "required"`) marked
    /// [`ApprovalRequired`](crate::ApprovalRequired) for the approval layer.
    pub fn approving(mut self, req: &a2e_proto::ChainRequest) -> Self {
        let nodes: Vec<Box<str>> = req
            .nodes
            .iter()
            .filter(|n| n.approval_required())
            .map(|n| n.node_id.as_str().into())
            .collect();
        self.approvals = (!nodes.is_empty()).then(|| nodes.into());
        self
    }

    /// Whether the calls of node `node_id` wait for a person's decision
    /// whatever the rules say (the node asks for one).
    pub fn approval_required(&self, node_id: &str) -> bool {
        self.approvals
            .as_deref()
            .is_some_and(|nodes| nodes.iter().any(|n| &**n == node_id))
    }

    /// The nodes that ask for a person's decision.
    pub fn approval_nodes(&self) -> Vec<String> {
        self.approvals
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(|n| n.to_string())
            .collect()
    }

    /// Marks the calls of node `node_id` [`ApprovalRequired`](crate::ApprovalRequired).
    pub fn approving_node(mut self, node_id: &str) -> Self {
        let mut nodes: Vec<Box<str>> = self.approvals.as_deref().unwrap_or_default().to_vec();
        nodes.push(node_id.into());
        self.approvals = Some(nodes.into());
        self
    }

    /// The same runner, its nodes' calls carrying `extensions`.
    pub fn carrying(mut self, extensions: crate::plugin::Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// The host the nodes run on.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// The session the nodes run in.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Who the session acts for.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The chain's span (disabled when the chain is not traced).
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The chain's id (empty when the chain is not traced).
    pub fn chain_id(&self) -> &str {
        &self.chain_id
    }

    /// The same runner, its nodes' calls keyed for durable run `run_id`.
    pub fn durable(mut self, run_id: &str) -> Self {
        self.run_id = Some(Arc::from(run_id));
        self
    }

    /// The idempotency key of `call` in the durable run, if any.
    fn key(&self, call: &NodeCall) -> Option<String> {
        self.run_id
            .as_ref()
            .map(|run| format!("{run}/{}/{}", call.wire_id(), call.attempt))
    }

    /// The same runner, its nodes' spans under `span` of chain `chain_id`.
    pub fn traced(mut self, span: tracing::Span, chain_id: &str) -> Self {
        self.span = span;
        self.chain_id = chain_id.to_owned();
        self
    }

    /// The same runner for a cluster worker's node of chain `chain_id`: its
    /// call span under `parent`, a span of another host (the coordinator's
    /// `send` span of the node), or a root without one.
    #[cfg(feature = "journal")]
    pub fn remote_parent(
        mut self,
        parent: Option<a2e_telemetry::TraceContext>,
        chain_id: &str,
    ) -> Self {
        self.remote = Some(parent);
        self.chain_id = chain_id.to_owned();
        self
    }

    /// The request calling tool `name` with `timeout`: made once, then
    /// shared by every node that calls it.
    pub(super) fn tool_request(&self, name: &str, timeout: u64) -> Arc<ToolCallRequest> {
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
        node_id: &'a str,
        idempotency_key: Option<&'a str>,
        notices: Option<&a2e_chain::Notices>,
    ) -> Caller<'a> {
        Caller {
            session_id: &self.session_id,
            identity: Some(&self.identity),
            stream: None,
            cancel,
            deadline,
            full_result: false,
            trace: match &self.remote {
                // A worker's node: under the coordinator's span of it, or a
                // root when the coordinator traces nothing.
                Some(remote) => Some(NodeTrace {
                    parent: remote.as_ref().map_or(
                        a2e_telemetry::Parent::Current,
                        a2e_telemetry::Parent::Remote,
                    ),
                    chain_id: &self.chain_id,
                    node_id,
                }),
                None => (!self.span.is_disabled()).then_some(NodeTrace {
                    parent: a2e_telemetry::Parent::Span(&self.span),
                    chain_id: &self.chain_id,
                    node_id,
                }),
            },
            idempotency_key,
            extensions: self.extensions_of(node_id, notices),
        }
    }
}

impl HostRunner {
    /// What the calls of node `node_id` carry: the chain's extensions, the
    /// approval mark when the node asks for one, and the call's handle to
    /// its chain's events when it has one.
    fn extensions_of(
        &self,
        node_id: &str,
        notices: Option<&a2e_chain::Notices>,
    ) -> crate::plugin::Extensions {
        let mut extensions = self.extensions.clone();
        if self.approval_required(node_id) {
            extensions.insert(crate::ApprovalRequired);
        }
        if let Some(notices) = notices {
            extensions.insert(notices.clone());
        }
        extensions
    }
}

/// Most distinct tool requests a runner keeps.
pub(super) const MAX_KEPT_REQUESTS: usize = 32;

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

/// The timeout of a tool node's call. A node whose input sets `timeout`
/// runs under its deadline, which its engine (or, on a cluster worker, the
/// worker) enforces: the call sets no timer of its own. Any other node's
/// call gets the host's default tool timeout like every call, and the
/// chain's deadline when that comes first.
fn node_call_timeout(call: &NodeCall) -> u64 {
    match (call.own_timeout(), call.deadline) {
        (Some(_), Some(_)) => crate::host::MAX_TIMEOUT_SECS,
        (Some(own), None) => own.as_secs() + u64::from(own.subsec_nanos() > 0),
        (None, _) => 0,
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

/// A tool or skill call's outcome as the node's: its data, or its error.
fn outcome<K: CallKind>(finished: Finished<K>) -> NodeResult {
    finished
        .outcome
        .map(K::into_data)
        .map_err(|(code, message)| NodeError::new(code, message))
}

impl NodeRunner for HostRunner {
    async fn run(&self, call: NodeCall) -> NodeResult {
        let metrics = self.host.telemetry().metrics();
        let timer = metrics
            .is_enabled()
            .then(|| (metrics.timer(), call.kind.clone()));
        let result = self.run_local(call).await;
        if let Some((timer, kind)) = timer {
            let outcome = match &result {
                Ok(_) => a2e_telemetry::metrics::OK,
                Err(e) => e.code.as_str(),
            };
            timer.node(kind.as_str(), outcome);
        }
        result
    }
}

impl HostRunner {
    /// Runs `call` on this host, without the node metrics [`NodeRunner::run`]
    /// records (a cluster worker's node).
    ///
    /// Every path is boxed: a future is moved whole (its size, not what it
    /// holds) each time it is built into its caller's and into the engine's
    /// box, so a node's call, which holds a whole call pipeline, is built
    /// once in its own allocation and the futures around it stay small.
    pub fn run_local(&self, call: NodeCall) -> BoxFuture<'_, NodeResult> {
        if call.kind == NodeKind::TOOL {
            Box::pin(self.run_tool(call))
        } else if call.kind == NodeKind::SKILL {
            Box::pin(self.run_skill(call))
        } else if call.kind == NodeKind::PROC {
            Box::pin(async move {
                let op = self
                    .host
                    .telemetry()
                    .step("proc", &call.node_id)
                    .chain(&self.chain_id)
                    .parent(a2e_telemetry::Parent::Span(&self.span))
                    .start();
                let result = tracing::Instrument::instrument(
                    run_proc(&self.host, &self.session_id, call),
                    op.span().clone(),
                )
                .await;
                if let Err(e) = &result {
                    op.error(e.code.as_str(), &e.message);
                }
                result
            })
        } else {
            Box::pin(std::future::ready(Err(NodeError::runtime(format!(
                "node kind `{}` cannot be run by the host",
                call.kind
            )))))
        }
    }
}

impl HostRunner {
    async fn run_tool(&self, call: NodeCall) -> NodeResult {
        let timeout = node_call_timeout(&call);
        let req = self.tool_request(&call.name, timeout);
        let key = self.key(&call);
        let finished = self
            .host
            .call::<ToolCallKind>(
                self.caller(
                    &call.cancel,
                    call.deadline,
                    &call.node_id,
                    key.as_deref(),
                    call.notices.as_ref(),
                ),
                &req,
                call.input.into_map(),
            )
            .await
            .map_err(node_error)?;
        outcome::<ToolCallKind>(finished)
    }

    async fn run_skill(&self, call: NodeCall) -> NodeResult {
        // A node with a timeout of its own asks for what is left of it (a
        // skill's own `timeout_seconds` still applies when shorter); any
        // other gets the skill's default, and the chain's deadline when it
        // comes first.
        let timeout = if call.own_timeout().is_some() {
            secs_left(&call)
        } else {
            0
        };
        let mut req = SkillCallRequest::new(&call.name, Value::Null);
        req.timeout = timeout;
        req.streaming = false;
        let key = self.key(&call);
        let finished = self
            .host
            .call::<SkillCallKind>(
                self.caller(
                    &call.cancel,
                    call.deadline,
                    &call.node_id,
                    key.as_deref(),
                    call.notices.as_ref(),
                ),
                &req,
                call.input.into_map(),
            )
            .await
            .map_err(node_error)?;
        outcome::<SkillCallKind>(finished)
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
