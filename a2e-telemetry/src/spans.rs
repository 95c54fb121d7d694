//! Spans named and attributed per the OpenTelemetry semantic conventions for
//! generative AI (`docs/observability.md` cites them), plus a2e's own
//! attributes.
//!
//! | helper | span name | `gen_ai.operation.name` | kind |
//! |---|---|---|---|
//! | [`Telemetry::request`] | `{type}` (`tool/call`, `tools/call`) | — | server |
//! | [`Telemetry::workflow`] | `invoke_workflow {name}` | `invoke_workflow` | internal |
//! | [`Telemetry::agent`] | `invoke_agent {name}` | `invoke_agent` | internal |
//! | [`Telemetry::chat`] | `chat {model}` | `chat` | client |
//! | [`Telemetry::tool`] | `execute_tool {tool}` | `execute_tool` | internal |
//! | [`Telemetry::step`] | `{kind} {id}` (`branch check`) | — | internal |
//! | [`Telemetry::send`] | `send {queue}` (a node on a cluster's work queue) | — | producer |
//!
//! With telemetry off (or traces not exported) every helper returns a
//! disabled span at once and every recording method does nothing.

use opentelemetry::trace::Status;
use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::content;
use crate::context::TraceContext;
use crate::telemetry::{Inner, SPAN_TARGET, Telemetry};

/// The longest error message put on a span, in bytes.
const MAX_ERROR_MESSAGE: usize = 1024;

/// Where a new span hangs.
#[derive(Debug, Clone, Copy, Default)]
pub enum Parent<'a> {
    /// Under the current span (the usual case inside an instrumented future).
    #[default]
    Current,
    /// Under this span.
    Span(&'a Span),
    /// Under a span of another process (an incoming `traceparent`); a root
    /// of this process.
    Remote(&'a TraceContext),
}

/// The protocol a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// A2E (`a2e.request.type`).
    A2e,
    /// MCP (`mcp.method.name`).
    Mcp,
    /// A2A (`a2a.method.name`: `SendMessage`, `GetTask`, …).
    A2a,
}

/// What kind of workflow an `invoke_workflow` span runs (`a2e.workflow.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkflowKind {
    /// An A2E chain.
    Chain,
    /// An ACMP task DAG.
    Acmp,
    /// An Ontheia document.
    Ontheia,
}

impl WorkflowKind {
    fn as_str(self) -> &'static str {
        match self {
            WorkflowKind::Chain => "chain",
            WorkflowKind::Acmp => "acmp",
            WorkflowKind::Ontheia => "ontheia",
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind<'a> {
    Request(Protocol, &'a str),
    Workflow(WorkflowKind, Option<&'a str>),
    Agent(&'a str),
    Chat(&'a str, &'a str),
    Tool(&'a str),
    Step(&'a str, &'a str),
    Send(&'a str),
}

/// A span about to start: identifiers and the parent are set here, then
/// [`SpanBuilder::start`]. Costs nothing with telemetry off.
#[derive(Debug, Clone, Copy)]
#[must_use = "a span builder does nothing until `start`"]
pub struct SpanBuilder<'a> {
    inner: Option<&'a Inner>,
    kind: Kind<'a>,
    parent: Parent<'a>,
    session: Option<&'a str>,
    agent: Option<&'a str>,
    chain: Option<&'a str>,
    node: Option<&'a str>,
    request_id: Option<&'a str>,
    tool_call_id: Option<&'a str>,
    provider: Option<&'a str>,
    model: Option<&'a str>,
    target: Option<&'a str>,
}

macro_rules! op_span {
    ($parent:expr, $name:literal, $($fields:tt)*) => {
        match $parent {
            Parent::Current => tracing::info_span!(target: SPAN_TARGET, $name, $($fields)*),
            Parent::Span(p) => tracing::info_span!(target: SPAN_TARGET, parent: p, $name, $($fields)*),
            Parent::Remote(_) => tracing::info_span!(target: SPAN_TARGET, parent: None, $name, $($fields)*),
        }
    };
}

impl<'a> SpanBuilder<'a> {
    fn new(telemetry: &'a Telemetry, kind: Kind<'a>) -> Self {
        SpanBuilder {
            inner: telemetry.traced(),
            kind,
            parent: Parent::Current,
            session: None,
            agent: None,
            chain: None,
            node: None,
            request_id: None,
            tool_call_id: None,
            provider: None,
            model: None,
            target: None,
        }
    }

    /// What a request is about (an MCP `tools/call`'s tool): the request
    /// span is named `{method} {target}`.
    pub fn target(mut self, target: &'a str) -> Self {
        self.target = Some(target);
        self
    }

    /// Where the span hangs (default: under the current span).
    pub fn parent(mut self, parent: Parent<'a>) -> Self {
        self.parent = parent;
        self
    }

    /// `a2e.session.id` (and `gen_ai.conversation.id` on agent and chat spans).
    pub fn session(mut self, id: &'a str) -> Self {
        self.session = Some(id);
        self
    }

    /// `a2e.agent.id`: the agent the session belongs to.
    pub fn agent_id(mut self, id: &'a str) -> Self {
        self.agent = Some(id);
        self
    }

    /// `a2e.chain.id`.
    pub fn chain(mut self, id: &'a str) -> Self {
        self.chain = Some(id);
        self
    }

    /// `a2e.node.id`: the chain node, Ontheia step or ACMP task.
    pub fn node(mut self, id: &'a str) -> Self {
        self.node = Some(id);
        self
    }

    /// `a2e.request.id`: the request's `id`.
    pub fn request_id(mut self, id: &'a str) -> Self {
        self.request_id = Some(id);
        self
    }

    /// `gen_ai.tool.call.id`: the model's id of this tool call.
    pub fn tool_call_id(mut self, id: &'a str) -> Self {
        self.tool_call_id = Some(id);
        self
    }

    /// `gen_ai.provider.name` of an agent span.
    pub fn provider(mut self, provider: &'a str) -> Self {
        self.provider = Some(provider);
        self
    }

    /// `gen_ai.request.model` of an agent span.
    pub fn model(mut self, model: &'a str) -> Self {
        self.model = Some(model);
        self
    }

    /// Creates the span (not entered: instrument a future with
    /// [`OpSpan::span`] or enter it).
    pub fn start(self) -> OpSpan {
        let Some(inner) = self.inner else {
            return OpSpan::disabled();
        };
        let span = match self.kind {
            Kind::Request(protocol, method) => {
                let name = match self.target {
                    Some(target) => format!("{method} {target}"),
                    None => method.to_owned(),
                };
                let span = op_span!(self.parent, "request",
                    otel.name = name, otel.kind = "server",
                    a2e.request.type = Empty, mcp.method.name = Empty, a2a.method.name = Empty,
                    a2e.request.id = Empty,
                    a2e.session.id = Empty, a2e.agent.id = Empty);
                match protocol {
                    Protocol::A2e => span.record("a2e.request.type", method),
                    Protocol::Mcp => span.record("mcp.method.name", method),
                    Protocol::A2a => span.record("a2a.method.name", method),
                };
                span
            }
            Kind::Workflow(kind, name) => {
                let span_name = match name {
                    Some(name) => format!("invoke_workflow {name}"),
                    None => "invoke_workflow".to_owned(),
                };
                op_span!(
                    self.parent,
                    "invoke_workflow",
                    otel.name = span_name,
                    otel.kind = "internal",
                    gen_ai.operation.name = "invoke_workflow",
                    gen_ai.workflow.name = name,
                    a2e.workflow.kind = kind.as_str(),
                    a2e.session.id = Empty,
                    a2e.agent.id = Empty,
                    a2e.chain.id = Empty,
                    a2e.node.id = Empty
                )
            }
            Kind::Agent(name) => {
                op_span!(
                    self.parent,
                    "invoke_agent",
                    otel.name = format!("invoke_agent {name}"),
                    otel.kind = "internal",
                    gen_ai.operation.name = "invoke_agent",
                    gen_ai.agent.name = name,
                    gen_ai.provider.name = self.provider,
                    gen_ai.request.model = self.model,
                    gen_ai.conversation.id = self.session,
                    a2e.session.id = Empty,
                    a2e.agent.id = Empty,
                    a2e.chain.id = Empty,
                    a2e.node.id = Empty
                )
            }
            Kind::Chat(provider, model) => {
                op_span!(
                    self.parent,
                    "chat",
                    otel.name = format!("chat {model}"),
                    otel.kind = "client",
                    gen_ai.operation.name = "chat",
                    gen_ai.provider.name = provider,
                    gen_ai.request.model = model,
                    gen_ai.conversation.id = self.session,
                    a2e.session.id = Empty,
                    a2e.agent.id = Empty,
                    a2e.chain.id = Empty,
                    a2e.node.id = Empty
                )
            }
            Kind::Tool(tool) => {
                op_span!(
                    self.parent,
                    "execute_tool",
                    otel.name = format!("execute_tool {tool}"),
                    otel.kind = "internal",
                    gen_ai.operation.name = "execute_tool",
                    gen_ai.tool.name = tool,
                    gen_ai.tool.call.id = self.tool_call_id,
                    a2e.session.id = Empty,
                    a2e.agent.id = Empty,
                    a2e.chain.id = Empty,
                    a2e.node.id = Empty
                )
            }
            Kind::Step(kind, id) => {
                op_span!(
                    self.parent,
                    "step",
                    otel.name = format!("{kind} {id}"),
                    otel.kind = "internal",
                    a2e.node.kind = kind,
                    a2e.session.id = Empty,
                    a2e.agent.id = Empty,
                    a2e.chain.id = Empty,
                    a2e.node.id = Empty
                )
            }
            Kind::Send(queue) => {
                op_span!(
                    self.parent,
                    "send",
                    otel.name = format!("send {queue}"),
                    otel.kind = "producer",
                    messaging.system = "nats",
                    messaging.operation.type = "send",
                    messaging.operation.name = "send",
                    messaging.destination.name = queue,
                    a2e.cluster.queue = queue,
                    a2e.session.id = Empty,
                    a2e.agent.id = Empty,
                    a2e.chain.id = Empty,
                    a2e.node.id = Empty
                )
            }
        };
        for (field, value) in [
            ("a2e.session.id", self.session),
            ("a2e.agent.id", self.agent),
            ("a2e.chain.id", self.chain),
            ("a2e.node.id", self.node),
            ("a2e.request.id", self.request_id),
        ] {
            if let Some(value) = value {
                span.record(field, value);
            }
        }
        if let Parent::Remote(remote) = self.parent {
            remote.set_as_parent_of(&span);
        }
        OpSpan {
            span,
            capture: inner.capture_content,
            secrets: Some(inner.secrets.clone()),
        }
    }
}

impl Telemetry {
    /// The span of one request a host received: `tool/call`, `chain/req`,
    /// MCP's `tools/call`… Kind server; the root of the request's trace (give
    /// an incoming `traceparent` as [`Parent::Remote`]).
    pub fn request<'a>(&'a self, protocol: Protocol, method: &'a str) -> SpanBuilder<'a> {
        SpanBuilder::new(self, Kind::Request(protocol, method))
    }

    /// `invoke_workflow {name}`: a chain, an ACMP DAG, an Ontheia document.
    /// `name` when the workflow has one (a chain skill's name), else the span
    /// is named `invoke_workflow`; the chain's id goes in [`SpanBuilder::chain`].
    pub fn workflow<'a>(&'a self, kind: WorkflowKind, name: Option<&'a str>) -> SpanBuilder<'a> {
        SpanBuilder::new(self, Kind::Workflow(kind, name))
    }

    /// `invoke_agent {skill}`: a skill's run (an LLM skill's whole loop).
    pub fn agent<'a>(&'a self, skill: &'a str) -> SpanBuilder<'a> {
        SpanBuilder::new(self, Kind::Agent(skill))
    }

    /// `chat {model}`: one model call.
    pub fn chat<'a>(&'a self, provider: &'a str, model: &'a str) -> SpanBuilder<'a> {
        SpanBuilder::new(self, Kind::Chat(provider, model))
    }

    /// `execute_tool {tool}`: one tool call (a request's, a chain node's, a
    /// model's).
    pub fn tool<'a>(&'a self, tool: &'a str) -> SpanBuilder<'a> {
        SpanBuilder::new(self, Kind::Tool(tool))
    }

    /// `{kind} {id}`: a chain node that calls nothing (a branch, a map), an
    /// Ontheia step, an ACMP task.
    pub fn step<'a>(&'a self, kind: &'a str, id: &'a str) -> SpanBuilder<'a> {
        SpanBuilder::new(self, Kind::Step(kind, id)).node(id)
    }
}

impl Telemetry {
    /// `send {queue}`: a chain node a cluster's coordinator puts on the work
    /// queue of toolkit `queue`, from its publication until its result is
    /// read (kind producer, `messaging.*` per the messaging conventions).
    /// Its [`OpSpan::trace_context`] goes in the message's headers
    /// ([`TraceContext::inject`]); the worker's call span hangs under it.
    pub fn send<'a>(&'a self, queue: &'a str) -> SpanBuilder<'a> {
        SpanBuilder::new(self, Kind::Send(queue))
    }
}

/// A started span and what may be recorded on it.
#[derive(Debug, Clone)]
pub struct OpSpan {
    span: Span,
    capture: bool,
    secrets: Option<std::sync::Arc<[String]>>,
}

impl Default for OpSpan {
    /// A span that records nothing.
    fn default() -> Self {
        Self::disabled()
    }
}

impl OpSpan {
    fn disabled() -> Self {
        OpSpan {
            span: Span::none(),
            capture: false,
            secrets: None,
        }
    }

    fn secrets(&self) -> &[String] {
        self.secrets.as_deref().unwrap_or_default()
    }

    /// The `tracing` span: instrument the call's future with it
    /// (`fut.instrument(op.span().clone())`) or enter it.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// Whether anything is recorded.
    pub fn is_recording(&self) -> bool {
        !self.span.is_disabled()
    }

    /// Whether content is recorded (`capture_content`): ask before building
    /// content only for [`OpSpan::arguments`] and the like.
    pub fn captures_content(&self) -> bool {
        self.capture && self.is_recording()
    }

    /// The trace context to send on with an outbound call made under this span.
    pub fn trace_context(&self) -> Option<TraceContext> {
        TraceContext::of(&self.span)
    }

    /// `gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens`.
    pub fn tokens(&self, input: u64, output: u64) {
        if self.is_recording() {
            self.span
                .set_attribute("gen_ai.usage.input_tokens", saturating_i64(input));
            self.span
                .set_attribute("gen_ai.usage.output_tokens", saturating_i64(output));
        }
    }

    /// `gen_ai.response.model`.
    pub fn response_model(&self, model: &str) {
        if self.is_recording() {
            self.span
                .set_attribute("gen_ai.response.model", model.to_owned());
        }
    }

    /// `gen_ai.response.finish_reasons`.
    pub fn finish_reasons(&self, reasons: &[&str]) {
        if self.is_recording() {
            let list: Vec<opentelemetry::StringValue> =
                reasons.iter().map(|r| r.to_string().into()).collect();
            self.span.set_attribute(
                "gen_ai.response.finish_reasons",
                opentelemetry::Value::Array(list.into()),
            );
        }
    }

    /// The call failed with A2E error `code`: status error (its description
    /// the code), `error.type` and `a2e.error.code` the code, the message (known
    /// secrets cut out, at most 1 KiB) in `a2e.error.message`.
    pub fn error(&self, code: &str, message: &str) {
        if self.is_recording() {
            self.span.set_status(Status::error(code.to_owned()));
            self.span.set_attribute("error.type", code.to_owned());
            self.span.set_attribute("a2e.error.code", code.to_owned());
            if !message.is_empty() {
                let mut text = content::render_text(message, self.secrets());
                if text.len() > MAX_ERROR_MESSAGE {
                    let mut cut = MAX_ERROR_MESSAGE;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                }
                self.span.set_attribute("a2e.error.message", text);
            }
        }
    }

    /// `gen_ai.tool.call.arguments`, only with `capture_content`.
    pub fn arguments(&self, arguments: &Value) {
        self.content("gen_ai.tool.call.arguments", arguments);
    }

    /// `gen_ai.tool.call.result`, only with `capture_content`.
    pub fn result(&self, result: &Value) {
        self.content("gen_ai.tool.call.result", result);
    }

    /// `gen_ai.input.messages` (the conventions' message list), only with
    /// `capture_content`.
    pub fn input_messages(&self, messages: &Value) {
        self.content("gen_ai.input.messages", messages);
    }

    /// `gen_ai.output.messages`, only with `capture_content`.
    pub fn output_messages(&self, messages: &Value) {
        self.content("gen_ai.output.messages", messages);
    }

    /// `gen_ai.system_instructions`, only with `capture_content`.
    pub fn system_instructions(&self, text: &str) {
        if self.capture && self.is_recording() {
            let parts = serde_json::json!([{"type": "text", "content": text}]);
            self.content("gen_ai.system_instructions", &parts);
        }
    }

    fn content(&self, key: &'static str, value: &Value) {
        if self.capture && self.is_recording() {
            self.span
                .set_attribute(key, content::render(value, self.secrets()));
        }
    }
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
