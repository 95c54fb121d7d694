//! Ontheia documents on the host: the [`ontheia::Backend`] whose steps reach the
//! host's capabilities, and the runs of `a2e run` and of Ontheia skills.
//!
//! | step | goes to |
//! |---|---|
//! | `llm` | the default model provider of `[[llm.providers]]` (`model` picks another model of it) |
//! | `tool` | server `a2e` ([`ontheia::NATIVE_TOOL_SERVER`]): the host's own tools by name; any other server: the tools of the MCP server mounted under that name (`server.tool`, or `tool` in toolkit `server`) |
//! | `memory_search`, `memory_write` | the host's memory, under the run's `agent_id` / `user_id` (the namespace policy applies) |
//! | `rest_call` | the `http_request` tool, so the outbound HTTP allow-list applies |
//! | `agent` | an agent of `[[ontheia.agents]]`: its task's chain, its chain, else a plain model call with its system prompt |
//!
//! Every tool call goes through [`Host::call_tool`] with the run's session, so
//! confinement, allow-lists, timeouts and the audit log apply as over the wire.
//!
//! A document run on a host with its built-in tools:
//!
//! ```
//! use a2e_host_core::{Host, HostConfig};
//! use serde_json::json;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let host = Host::builder(HostConfig::default()).with_builtins().build()?;
//!     let doc = ontheia::parse(
//!         r#"{"steps": [{"id": "count", "type": "tool", "server": "a2e",
//!             "tool": "text_stats", "args": {"text": "one two three"}}]}"#,
//!     )?;
//!     let globals = a2e_host_ontheia::globals("", []);
//!     let cancel = tokio_util::sync::CancellationToken::new();
//!     let outcome = a2e_host_ontheia::run(&host, "", &doc, &globals, |_| {}, cancel).await;
//!     let output = a2e_host_ontheia::output_of(outcome)?;
//!     // A step's output is text: the tool's result as JSON.
//!     let stats: serde_json::Value = serde_json::from_str(output.summary.as_str().unwrap_or(""))?;
//!     assert_eq!(stats["words"], json!(3));
//!     Ok(())
//! })
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

use std::sync::Arc;

#[cfg(feature = "llm")]
use a2e_llm::{Message as ChatMessage, NoDeltas};
use a2e_proto::{ErrorCode, ToolCallRequest};
use ontheia::{
    AgentPlan, AgentRequest, Backend, BackendError, LlmReply, LlmRequest, MemorySearch,
    MemoryWrite, RestRequest, RestResponse, ToolStepCall,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use a2e_telemetry::WorkflowKind;

use a2e_host_core::config::OntheiaAgent;
use a2e_host_core::host::{CallOptions, Host};

mod trace;

/// The host as an Ontheia backend for one run.
pub struct OntheiaBackend {
    host: Arc<Host>,
    session_id: String,
    /// Memory namespaces are checked against these (feature `memory`).
    #[cfg_attr(not(feature = "memory"), allow(dead_code))]
    agent_id: String,
    #[cfg_attr(not(feature = "memory"), allow(dead_code))]
    user_id: String,
    /// The durable run the document runs as: its tool steps' calls carry the
    /// idempotency key `run_id/<step key>/<attempt>`.
    run_id: Option<String>,
}

impl OntheiaBackend {
    /// A backend acting in session `session_id` (empty for the host's own runs)
    /// for `agent_id` and `user_id` (memory namespaces are checked against them).
    pub fn new(host: Arc<Host>, session_id: &str, agent_id: &str, user_id: &str) -> Self {
        Self {
            host,
            session_id: session_id.to_owned(),
            agent_id: agent_id.to_owned(),
            user_id: user_id.to_owned(),
            run_id: None,
        }
    }

    /// The same backend for durable run `run_id`.
    pub fn for_run(mut self, run_id: Option<&str>) -> Self {
        self.run_id = run_id.map(str::to_owned);
        self
    }

    async fn tool_call(
        &self,
        name: &str,
        args: Map<String, Value>,
        cancel: &CancellationToken,
        key: Option<&str>,
    ) -> Result<a2e_proto::ToolResult, BackendError> {
        let req = ToolCallRequest {
            tool_name: name.to_owned(),
            arguments: args,
            streaming: false,
            ..ToolCallRequest::default()
        };
        let mut options = CallOptions::new().session(&self.session_id).cancel(cancel);
        if let Some(key) = key {
            options = options.idempotency_key(key);
        }
        self.host
            .call_tool(req, options)
            .await
            .map_err(|e| match e.code().as_str() {
                "tool_denied" | "unauthorized" => BackendError::Denied(e.to_string()),
                _ => BackendError::failed(e.to_string()),
            })
    }

    /// The host tool a `tool` step names.
    fn tool_name(&self, server: &str, tool: &str) -> Result<String, BackendError> {
        if server == ontheia::NATIVE_TOOL_SERVER {
            return Ok(tool.to_owned());
        }
        let registry = self.host.registry();
        let qualified = format!("{server}.{tool}");
        if registry.tool(&qualified).is_some() {
            return Ok(qualified);
        }
        match registry.tool(tool) {
            Some(entry) if entry.def.toolkit.as_deref() == Some(server) => Ok(tool.to_owned()),
            _ => Err(BackendError::Denied(format!(
                "no tool `{tool}` on server `{server}` (servers: `{}` for the host's own tools, or a mounted MCP server)",
                ontheia::NATIVE_TOOL_SERVER
            ))),
        }
    }

    fn agent(&self, id: &str) -> Option<&OntheiaAgent> {
        self.host
            .config()
            .ontheia
            .agents
            .iter()
            .find(|a| a.id == id)
    }

    fn load_chain(&self, path: &std::path::Path) -> Result<ontheia::Document, BackendError> {
        let path = if path.is_absolute() {
            path.to_owned()
        } else {
            self.host.config().root.join(path)
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| BackendError::failed(format!("{}: {e}", path.display())))?;
        ontheia::parse(&text).map_err(|e| BackendError::failed(format!("{}: {e}", path.display())))
    }
}

/// An MCP `CallToolResult`-like object for a host tool's result.
fn mcp_result(result: &a2e_proto::ToolResult) -> Value {
    let text = match &result.data {
        Value::String(s) => s.clone(),
        Value::Null => result.error.clone().unwrap_or_default(),
        other => other.to_string(),
    };
    let text = if result.success {
        text
    } else {
        result.error.clone().unwrap_or(text)
    };
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": result.data,
        "isError": !result.success,
    })
}

impl Backend for OntheiaBackend {
    async fn llm(
        &self,
        req: LlmRequest,
        cancel: CancellationToken,
    ) -> Result<LlmReply, BackendError> {
        #[cfg(feature = "llm")]
        return self.model_call(req, cancel).await;
        #[cfg(not(feature = "llm"))]
        {
            let _ = (req, cancel);
            Err(BackendError::Unsupported("llm"))
        }
    }

    async fn tool(
        &self,
        call: ToolStepCall,
        cancel: CancellationToken,
    ) -> Result<Value, BackendError> {
        let name = match self.tool_name(&call.server, &call.tool) {
            Ok(name) => name,
            // A mounted server that starts on first use: start it, look again.
            Err(_) if self.host.registry().load_tools(true).await > 0 => {
                self.tool_name(&call.server, &call.tool)?
            }
            Err(e) => return Err(e),
        };
        let key = self
            .run_id
            .as_ref()
            .map(|run| format!("{run}/{}/{}", call.key, call.attempt));
        let result = self
            .tool_call(&name, call.args, &cancel, key.as_deref())
            .await?;
        Ok(mcp_result(&result))
    }

    async fn memory_search(
        &self,
        query: MemorySearch,
        cancel: CancellationToken,
    ) -> Result<Vec<Value>, BackendError> {
        let mut args = Map::new();
        args.insert("query".into(), Value::from(query.query));
        args.insert("namespaces".into(), Value::from(query.namespaces));
        args.insert("top_k".into(), Value::from(query.top_k));
        let found = self.memory("memory_search", args, &cancel).await?;
        match found.get("hits") {
            Some(Value::Array(hits)) => Ok(hits.clone()),
            _ => Ok(Vec::new()),
        }
    }

    async fn memory_write(
        &self,
        record: MemoryWrite,
        cancel: CancellationToken,
    ) -> Result<u64, BackendError> {
        let mut args = Map::new();
        args.insert("namespace".into(), Value::from(record.namespace));
        args.insert("content".into(), Value::from(record.content));
        args.insert("metadata".into(), Value::Object(record.metadata));
        self.memory("memory_write", args, &cancel).await?;
        Ok(1)
    }

    async fn rest_call(
        &self,
        req: RestRequest,
        cancel: CancellationToken,
    ) -> Result<RestResponse, BackendError> {
        let mut args = Map::new();
        args.insert("url".into(), Value::from(req.url.clone()));
        args.insert("method".into(), Value::from(req.method.clone()));
        let headers: Map<String, Value> = req
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        args.insert("headers".into(), Value::Object(headers));
        if let Some(body) = req.body_text() {
            args.insert("body".into(), Value::from(body));
        }
        let result = self.tool_call("http_request", args, &cancel, None).await?;
        if !result.success {
            return Err(BackendError::failed(
                result.error.unwrap_or_else(|| "the request failed".into()),
            ));
        }
        let status = result
            .data
            .get("status")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        Ok(RestResponse {
            status: u16::try_from(status).unwrap_or(0),
            body: result
                .data
                .get("body")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        })
    }

    async fn agent(
        &self,
        req: AgentRequest,
        _cancel: CancellationToken,
    ) -> Result<AgentPlan, BackendError> {
        let agent = self.agent(&req.agent_id).ok_or_else(|| {
            BackendError::Denied(format!(
                "no agent `{}` in the host configuration ([[ontheia.agents]])",
                req.agent_id
            ))
        })?;
        let task_chain = req
            .task_id
            .as_deref()
            .and_then(|t| agent.tasks.get(t))
            .cloned();
        let named_chain = req
            .chain_id
            .as_deref()
            .and_then(|c| agent.chains.get(c))
            .cloned();
        match task_chain.or(named_chain).or_else(|| agent.chain.clone()) {
            Some(path) => Ok(AgentPlan::Chain {
                document: Box::new(self.load_chain(&path)?),
                agent_id: Some(agent.id.clone()),
                task_id: req.task_id,
            }),
            None => Ok(AgentPlan::Llm {
                system_prompt: agent.system_prompt.clone(),
                model: agent.model.clone(),
            }),
        }
    }
}

impl OntheiaBackend {
    /// An `llm` step: one call of the default provider.
    #[cfg(feature = "llm")]
    async fn model_call(
        &self,
        req: LlmRequest,
        cancel: CancellationToken,
    ) -> Result<LlmReply, BackendError> {
        let providers = self
            .host
            .providers()
            .ok_or(BackendError::Unsupported("llm"))?;
        let model = providers
            .resolve(None, None)
            .map_err(|e| BackendError::failed(e.to_string()))?;
        let mut messages = Vec::new();
        if let Some(system) = req.system_prompt.as_deref().filter(|s| !s.is_empty()) {
            messages.push(ChatMessage::system(system));
        }
        messages.push(ChatMessage::user(req.prompt));
        let mut request = model.request(messages, Vec::new());
        if let Some(m) = req.model.filter(|m| !m.is_empty()) {
            request.model = m;
        }
        if let Some(t) = req.temperature {
            request.temperature = Some(t);
        }
        if let Some(n) = req
            .params
            .get("max_tokens")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
        {
            request.max_tokens = Some(n);
        }
        // The step's trace context goes to the provider as `traceparent`.
        let trace = a2e_telemetry::TraceContext::current();
        let answer = a2e_host_core::llm_turns::chat_traced(
            &model.client,
            &request,
            &mut NoDeltas,
            &cancel,
            trace,
        )
        .await
        .map_err(|e| BackendError::failed(e.to_string()))?;
        Ok(LlmReply::text(answer.content))
    }

    #[cfg(feature = "memory")]
    async fn memory(
        &self,
        tool: &str,
        args: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, BackendError> {
        let Some(memory) = self.host.memory() else {
            return Err(BackendError::Unsupported("memory"));
        };
        let who = a2e_memory::Principal::new(self.agent_id.as_str(), self.user_id.as_str());
        tokio::select! {
            out = memory.call(&who, tool, Value::Object(args)) => out.map_err(|e| match e.code().as_str() {
                "unauthorized" | "tool_denied" => BackendError::Denied(e.to_string()),
                _ => BackendError::failed(e.to_string()),
            }),
            () = cancel.cancelled() => Err(BackendError::failed("cancelled")),
        }
    }
}

impl OntheiaBackend {
    /// Memory steps in a host built without its `memory` feature.
    #[cfg(not(feature = "memory"))]
    async fn memory(
        &self,
        _tool: &str,
        _args: Map<String, Value>,
        _cancel: &CancellationToken,
    ) -> Result<Value, BackendError> {
        Err(BackendError::Unsupported("memory"))
    }
}

/// One Ontheia event as a JSON object (for `--events` and skill events).
pub fn event_json(event: &ontheia::Event<'_>) -> Value {
    let mut out = Map::new();
    out.insert("seq".into(), Value::from(event.seq));
    out.insert("step_id".into(), Value::from(event.step_id));
    if event.key != event.step_id {
        out.insert("key".into(), Value::from(event.key));
    }
    out.insert("step_type".into(), Value::from(event.step_type.as_str()));
    out.insert("event".into(), Value::from(event.kind.as_str()));
    if let Some(output) = event.output {
        out.insert("output".into(), Value::from(output));
    }
    if let Some(error) = event.error {
        out.insert("error".into(), Value::from(error));
    }
    if event.depth > 0 {
        out.insert("depth".into(), Value::from(event.depth));
    }
    Value::Object(out)
}

/// Runs `doc` on `host` for `globals` (in session `session_id`, empty for the
/// host's own runs), handing each event to `on_event`.
pub async fn run(
    host: &Arc<Host>,
    session_id: &str,
    doc: &ontheia::Document,
    globals: &ontheia::Globals,
    on_event: impl FnMut(Value) + Send,
    cancel: CancellationToken,
) -> Result<ontheia::RunOutcome, ontheia::RunError> {
    run_with(
        host,
        session_id,
        doc,
        globals,
        on_event,
        cancel,
        DurableRun::default(),
    )
    .await
}

/// How a run of [`run_with`] is made durable.
#[derive(Debug, Default)]
pub struct DurableRun<'a> {
    /// The engine's: what an earlier run finished, and who journals the steps.
    pub options: ontheia::RunOptions,
    /// The durable run's id: its tool steps' calls carry the idempotency key
    /// `run_id/<step key>/<attempt>`.
    pub run_id: Option<&'a str>,
}

/// [`run`] made durable: resumed from what an earlier run finished, its
/// journaled steps observed ([`ontheia::RunOptions`]).
pub async fn run_with(
    host: &Arc<Host>,
    session_id: &str,
    doc: &ontheia::Document,
    globals: &ontheia::Globals,
    mut on_event: impl FnMut(Value) + Send,
    cancel: CancellationToken,
    durable: DurableRun<'_>,
) -> Result<ontheia::RunOutcome, ontheia::RunError> {
    let DurableRun { options, run_id } = durable;
    let agent_id = globals.agent_id.clone().unwrap_or_default();
    let user_id = globals.user_id.clone().unwrap_or_else(|| agent_id.clone());
    let backend =
        OntheiaBackend::new(host.clone(), session_id, &agent_id, &user_id).for_run(run_id);
    let engine = ontheia::Engine::new(backend);
    let telemetry = host.telemetry();
    let workflow = telemetry
        .workflow(WorkflowKind::Ontheia, None)
        .session(session_id)
        .start();
    let timer = telemetry.metrics().timer();
    let mut steps = trace::StepSpans::new(telemetry.clone(), workflow.clone(), session_id);
    let run = engine.run_with(
        doc,
        globals,
        move |e: &ontheia::Event<'_>| {
            steps.on_event(e);
            on_event(event_json(e))
        },
        cancel,
        options,
    );
    let outcome = if workflow.is_recording() {
        tracing::Instrument::instrument(run, workflow.span().clone()).await
    } else {
        run.await
    };
    let code = match &outcome {
        Ok(o) if !o.any_failed() => a2e_telemetry::metrics::OK,
        Ok(_) => ErrorCode::SKILL_ERROR.as_str(),
        Err(ontheia::RunError::Cancelled) => ErrorCode::CANCELLED.as_str(),
        Err(ontheia::RunError::Invalid(_)) => ErrorCode::SCHEMA_VIOLATION.as_str(),
    };
    if code != a2e_telemetry::metrics::OK {
        workflow.error(
            code,
            &outcome
                .as_ref()
                .err()
                .map(ToString::to_string)
                .unwrap_or_default(),
        );
    }
    timer.workflow(WorkflowKind::Ontheia, code);
    outcome
}

/// A run's `${input}` and string globals from call arguments: the first of
/// `input_keys` that holds a string is the input (else every argument, as
/// JSON); every other string argument is a global of its name.
pub fn input_of(args: &Map<String, Value>, input_keys: &[&str]) -> (String, Vec<(String, String)>) {
    let input = input_keys
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .map_or_else(|| Value::Object(args.clone()).to_string(), str::to_owned);
    let vars = args
        .iter()
        .filter(|(k, _)| !input_keys.contains(&k.as_str()))
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect();
    (input, vars)
}

/// Globals for a run: `input`, then `vars` (`user_id`, `user_name`,
/// `user_email`, `agent_id`, `task_id`, `chat_id`, `current_date`,
/// `current_time`, anything else as an extra variable).
pub fn globals<'a>(
    input: &str,
    vars: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> ontheia::Globals {
    let mut g = ontheia::Globals::with_input(input);
    for (name, value) in vars {
        let value = Some(value.to_owned());
        match name {
            "user_id" => g.user_id = value,
            "user_name" => g.user_name = value,
            "user_email" => g.user_email = value,
            "agent_id" => g.agent_id = value,
            "task_id" => g.task_id = value,
            "chat_id" => g.chat_id = value,
            "current_date" => g.current_date = value,
            "current_time" => g.current_time = value,
            "input" | "userInput" => {}
            other => {
                g.extra.insert(other.to_owned(), Value::from(value));
            }
        }
    }
    g
}

/// A document's outcome as a skill's result (an Ontheia skill's, or a
/// document an ACMP provider serves): every stored step
/// result as `data`, the last step's output as `summary`; a failed step
/// fails the call.
pub fn output_of(
    outcome: Result<ontheia::RunOutcome, ontheia::RunError>,
) -> a2e_host_core::error::HostResult<a2e_host_core::plugin::SkillOutput> {
    let outcome = outcome.map_err(|e| match e {
        ontheia::RunError::Cancelled => a2e_host_core::error::HostError::Cancelled,
        other => a2e_host_core::error::HostError::skill_failed("the ontheia chain failed", other),
    })?;
    let summary = outcome
        .last_result()
        .map(|r| r.output.clone())
        .unwrap_or(Value::Null);
    if outcome.any_failed() {
        let failed: Vec<String> = outcome
            .results
            .iter()
            .filter(|(_, r)| r.status == ontheia::StepStatus::Failed)
            .map(|(id, r)| format!("{id}: {}", r.error.clone().unwrap_or_default()))
            .collect();
        return Err(a2e_host_core::error::HostError::Skill(format!(
            "steps failed: {}",
            failed.join("; ")
        )));
    }
    Ok(a2e_host_core::plugin::SkillOutput {
        data: outcome.to_value(),
        summary,
        truncated: false,
    })
}
