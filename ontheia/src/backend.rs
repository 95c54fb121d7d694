//! The seam to the host: one [`Backend`] trait with a method per step kind
//! that leaves the engine (`llm`, `tool`, `memory_search`, `memory_write`,
//! `rest_call`, `agent`). Every method has a default that answers
//! [`BackendError::Unsupported`], so a host implements what it offers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::doc::Document;
use crate::error::BackendError;

/// The server name under which a host exposes its own (non-MCP) tools to
/// `tool` steps: `{"type":"tool","server":"a2e","tool":"fs/read",…}`.
pub const NATIVE_TOOL_SERVER: &str = "a2e";

/// An `llm` step's call (or an agent's plain model call).
#[derive(Debug, Clone, PartialEq)]
pub struct LlmRequest {
    /// The step's id.
    pub step_id: String,
    /// The expanded prompt (the user message).
    pub prompt: String,
    /// The expanded `system_prompt`, if any.
    pub system_prompt: Option<String>,
    /// `model`, if any.
    pub model: Option<String>,
    /// `params.temperature`, if any.
    pub temperature: Option<f64>,
    /// `params.silent`: the host must not stream the answer to the chat.
    pub silent: bool,
    /// The other `params` (expanded), e.g. `max_tokens`.
    pub params: Map<String, Value>,
    /// The chain state so far (`{id: {data, output}}` as JSON), truncated to
    /// the configured chain-context size: context the host may give the model.
    pub chain_state: String,
    /// `agent_id` of the step, else of the context: whose model to use.
    pub agent_id: Option<String>,
    /// Agent delegation depth (0 for the top chain).
    pub depth: usize,
}

/// A model's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmReply {
    /// The full text.
    pub text: String,
    /// Non-fatal problems (a tool the model called failed, …).
    pub warnings: Vec<String>,
}

impl LlmReply {
    /// A reply with just text.
    pub fn text(text: impl Into<String>) -> LlmReply {
        LlmReply {
            text: text.into(),
            warnings: Vec::new(),
        }
    }
}

/// A `tool` step's call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStepCall {
    /// The step's id.
    pub step_id: String,
    /// The step's place in the run ([`crate::StepCall::key`]): with the run's
    /// id and `attempt`, the idempotency key of the call.
    pub key: String,
    /// The attempt of the innermost `retry` it runs in (1 outside retries).
    pub attempt: u32,
    /// The MCP server (or [`NATIVE_TOOL_SERVER`]).
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The expanded arguments.
    pub args: Map<String, Value>,
}

/// A `memory_search` step's query.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySearch {
    /// The step's id.
    pub step_id: String,
    /// Expanded namespaces.
    pub namespaces: Vec<String>,
    /// The expanded query (default: the user's input).
    pub query: String,
    /// 1–20 (default 5).
    pub top_k: u32,
}

/// A `memory_write` step's record.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryWrite {
    /// The step's id.
    pub step_id: String,
    /// The expanded namespace.
    pub namespace: String,
    /// The expanded content.
    pub content: String,
    /// `params.metadata` (expanded) plus `source: "chain_step"` and `step_id`.
    pub metadata: Map<String, Value>,
}

/// A `rest_call` step's request. The host sends it through its outbound
/// HTTP policy.
#[derive(Debug, Clone, PartialEq)]
pub struct RestRequest {
    /// The step's id.
    pub step_id: String,
    /// Upper-case method.
    pub method: String,
    /// The expanded URL.
    pub url: String,
    /// Expanded headers; `Content-Type: application/json` added when there
    /// is a body and no content type.
    pub headers: Vec<(String, String)>,
    /// The expanded body; send it as JSON text (see [`RestRequest::body_text`]).
    pub body: Option<Value>,
}

impl RestRequest {
    /// The body as it goes on the wire: JSON text.
    pub fn body_text(&self) -> Option<String> {
        self.body.as_ref().map(Value::to_string)
    }
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq)]
pub struct RestResponse {
    /// The status code.
    pub status: u16,
    /// The body as text.
    pub body: String,
}

/// An `agent` step's delegation request.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRequest {
    /// The step's id.
    pub step_id: String,
    /// The target agent (name or id).
    pub agent_id: String,
    /// A task of that agent, if named.
    pub task_id: Option<String>,
    /// A chain bound to that agent, if named.
    pub chain_id: Option<String>,
    /// The message to the agent.
    pub input: String,
    /// The depth the delegated work runs at (1 for the first level).
    pub depth: usize,
}

/// How the host wants a delegation carried out.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentPlan {
    /// Run this chain (the task's chain, the named chain, or the agent's
    /// default chain) one level deeper; its last stored result is the step's.
    Chain {
        /// The chain.
        document: Box<Document>,
        /// `${agent_id}` inside the chain (default: the request's agent).
        agent_id: Option<String>,
        /// `${task_id}` inside the chain.
        task_id: Option<String>,
    },
    /// No chain: one model call with the agent's system prompt and model.
    Llm {
        /// The agent's task context or persona.
        system_prompt: Option<String>,
        /// The agent's model.
        model: Option<String>,
    },
    /// The host ran the agent itself; this is its answer.
    Reply(LlmReply),
}

/// What the host provides. Implement the kinds you support; the others fail
/// their steps with [`BackendError::Unsupported`]. Each call gets the run's
/// cancellation token; the engine also stops waiting when it fires.
pub trait Backend: Send + Sync + 'static {
    /// A model call.
    fn llm(
        &self,
        req: LlmRequest,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<LlmReply, BackendError>> + Send {
        let _ = (req, cancel);
        async { Err(BackendError::Unsupported("llm")) }
    }

    /// A tool call; returns an MCP `CallToolResult`-like object
    /// (`{"content":[{"type":"text","text":…}], "isError": false}`).
    fn tool(
        &self,
        call: ToolStepCall,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<Value, BackendError>> + Send {
        let _ = (call, cancel);
        async { Err(BackendError::Unsupported("tool")) }
    }

    /// A memory search; returns the hits (objects, e.g. `{content, score,
    /// namespace}`).
    fn memory_search(
        &self,
        req: MemorySearch,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<Vec<Value>, BackendError>> + Send {
        let _ = (req, cancel);
        async { Err(BackendError::Unsupported("memory_search")) }
    }

    /// A memory write; returns how many records were stored.
    fn memory_write(
        &self,
        req: MemoryWrite,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<u64, BackendError>> + Send {
        let _ = (req, cancel);
        async { Err(BackendError::Unsupported("memory_write")) }
    }

    /// An HTTP request.
    fn rest_call(
        &self,
        req: RestRequest,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<RestResponse, BackendError>> + Send {
        let _ = (req, cancel);
        async { Err(BackendError::Unsupported("rest_call")) }
    }

    /// Resolves a delegation to a plan (see [`AgentPlan`]).
    fn agent(
        &self,
        req: AgentRequest,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<AgentPlan, BackendError>> + Send {
        let _ = (req, cancel);
        async { Err(BackendError::Unsupported("agent")) }
    }
}

/// A boxed backend future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, BackendError>> + Send + 'static>>;

/// The dyn-compatible twin of [`Backend`], for `Arc<dyn DynBackend>`; every
/// `Backend` is one, and `Arc<dyn DynBackend>` is a `Backend` again.
pub trait DynBackend: Send + Sync + 'static {
    /// See [`Backend::llm`].
    fn llm_boxed(
        self: Arc<Self>,
        req: LlmRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<LlmReply>;
    /// See [`Backend::tool`].
    fn tool_boxed(
        self: Arc<Self>,
        call: ToolStepCall,
        cancel: CancellationToken,
    ) -> BoxFuture<Value>;
    /// See [`Backend::memory_search`].
    fn memory_search_boxed(
        self: Arc<Self>,
        req: MemorySearch,
        cancel: CancellationToken,
    ) -> BoxFuture<Vec<Value>>;
    /// See [`Backend::memory_write`].
    fn memory_write_boxed(
        self: Arc<Self>,
        req: MemoryWrite,
        cancel: CancellationToken,
    ) -> BoxFuture<u64>;
    /// See [`Backend::rest_call`].
    fn rest_call_boxed(
        self: Arc<Self>,
        req: RestRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<RestResponse>;
    /// See [`Backend::agent`].
    fn agent_boxed(
        self: Arc<Self>,
        req: AgentRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<AgentPlan>;
}

impl<B: Backend> DynBackend for B {
    fn llm_boxed(
        self: Arc<Self>,
        req: LlmRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<LlmReply> {
        Box::pin(async move { self.llm(req, cancel).await })
    }
    fn tool_boxed(
        self: Arc<Self>,
        call: ToolStepCall,
        cancel: CancellationToken,
    ) -> BoxFuture<Value> {
        Box::pin(async move { self.tool(call, cancel).await })
    }
    fn memory_search_boxed(
        self: Arc<Self>,
        req: MemorySearch,
        cancel: CancellationToken,
    ) -> BoxFuture<Vec<Value>> {
        Box::pin(async move { self.memory_search(req, cancel).await })
    }
    fn memory_write_boxed(
        self: Arc<Self>,
        req: MemoryWrite,
        cancel: CancellationToken,
    ) -> BoxFuture<u64> {
        Box::pin(async move { self.memory_write(req, cancel).await })
    }
    fn rest_call_boxed(
        self: Arc<Self>,
        req: RestRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<RestResponse> {
        Box::pin(async move { self.rest_call(req, cancel).await })
    }
    fn agent_boxed(
        self: Arc<Self>,
        req: AgentRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<AgentPlan> {
        Box::pin(async move { self.agent(req, cancel).await })
    }
}

/// A shared, type-erased backend (what a host registry usually holds).
#[derive(Clone)]
pub struct SharedBackend(pub Arc<dyn DynBackend>);

impl std::fmt::Debug for SharedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedBackend")
    }
}

impl Backend for SharedBackend {
    fn llm(
        &self,
        req: LlmRequest,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<LlmReply, BackendError>> + Send {
        Arc::clone(&self.0).llm_boxed(req, cancel)
    }
    fn tool(
        &self,
        call: ToolStepCall,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<Value, BackendError>> + Send {
        Arc::clone(&self.0).tool_boxed(call, cancel)
    }
    fn memory_search(
        &self,
        req: MemorySearch,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<Vec<Value>, BackendError>> + Send {
        Arc::clone(&self.0).memory_search_boxed(req, cancel)
    }
    fn memory_write(
        &self,
        req: MemoryWrite,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<u64, BackendError>> + Send {
        Arc::clone(&self.0).memory_write_boxed(req, cancel)
    }
    fn rest_call(
        &self,
        req: RestRequest,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<RestResponse, BackendError>> + Send {
        Arc::clone(&self.0).rest_call_boxed(req, cancel)
    }
    fn agent(
        &self,
        req: AgentRequest,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<AgentPlan, BackendError>> + Send {
        Arc::clone(&self.0).agent_boxed(req, cancel)
    }
}
