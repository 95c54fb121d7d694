//! ACMP task DAGs on the host: a [`Provider`] serving capabilities from the
//! host's tools and skills (capability = tool or skill name; tools first), and
//! the runner behind `a2e run` for DAG documents.
//!
//! Input mapping: a task's resolved input `{type, data}` becomes the call's
//! arguments — `data` itself when it is an object, `{"text": data}` when it is
//! a string, `{"data": data}` otherwise. Output: the result's `data` as a
//! `json` payload (`text` when it is a string). Errors: a failed call is an
//! `acmp/error` — `timeout` → -33003, cancellation → -33004, anything else
//! -33099 with `data.code` set to the A2E error code.
//!
//! A DAG whose tasks are the host's built-in tools, run on the host:
//!
//! ```
//! use a2e_host_core::{Host, HostConfig};
//! use acmp_dag::{Dag, DagStatus};
//! use serde_json::json;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let host = Host::builder(HostConfig::default()).with_builtins().build()?;
//!     let dag: Dag = serde_json::from_value(json!({
//!         "dag_id": "stats",
//!         "tasks": [{
//!             "task_id": "count",
//!             "capability": "text_stats",
//!             "input": {"type": "text", "data": "one two three"},
//!             "output_type": "json"
//!         }],
//!         "edges": []
//!     }))?;
//!     let cancel = tokio_util::sync::CancellationToken::new();
//!     let outcome = a2e_host_acmp::run_dag(&host, dag, |_| {}, &cancel).await?;
//!     assert_eq!(outcome.status, DagStatus::Completed);
//!     Ok(())
//! })
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod answer;
mod buyer;
pub mod http;
#[cfg(feature = "mcp")]
pub mod mcp;
mod offered;
pub mod stdio;
mod trace;
pub mod ws;

use std::sync::Arc;

use a2e_proto::{ErrorCode, SkillCallRequest, ToolCallRequest};
use acmp_dag::{
    AcmpError, Dag, DagOutcome, DagRunOptions, DagStatus, Event, EventKind, Invocation,
    InvokeResult, Orchestrator, Payload, Provider, ProviderRef, Router, Task, TaskState,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub use self::answer::{DAG_REQUEST_TYPE, answer_of, event_of, state_of};
use self::buyer::pool_router;
pub use self::buyer::remote_provider;
pub use self::offered::{OfferedProvider, Target, provider_token, service};
use a2e_host_core::{acmp_config, chains, error, host, proc};
#[cfg(feature = "ontheia")]
use a2e_host_ontheia as ontheia_host;
use a2e_telemetry::WorkflowKind;

use crate::error::HostError;
use crate::host::{CallOptions, Host};

/// Serves ACMP capabilities from a host's tools and skills.
#[derive(Clone)]
pub struct HostProvider {
    host: Arc<Host>,
    session_id: String,
    /// The run's task spans: a task's call hangs under its task's span.
    spans: Option<trace::TaskSpans>,
    /// A durable run's id: each call carries the idempotency key
    /// `run_id/task_id/attempt`.
    run_id: Option<Arc<str>>,
}

impl HostProvider {
    /// A provider on `host` acting for `session_id` (empty for the host itself).
    pub fn new(host: Arc<Host>, session_id: &str) -> Self {
        Self {
            host,
            session_id: session_id.to_owned(),
            spans: None,
            run_id: None,
        }
    }

    /// The same provider, its calls keyed for durable run `run_id`.
    #[must_use]
    pub fn durable(mut self, run_id: &str) -> Self {
        self.run_id = Some(Arc::from(run_id));
        self
    }

    /// Whether `capability` names a tool or skill of the host.
    pub fn serves(&self, capability: &str) -> bool {
        self.host.registry().tool(capability).is_some()
            || self.host.registry().skill(capability).is_some()
    }
}

/// The call arguments for a task input (see the module docs).
pub fn arguments(input: Option<&Payload>) -> Map<String, Value> {
    match input.map(|p| &p.data) {
        Some(Value::Object(map)) => map.clone(),
        Some(Value::String(text)) => {
            let mut m = Map::new();
            m.insert("text".into(), Value::String(text.clone()));
            m
        }
        Some(Value::Null) | None => Map::new(),
        Some(other) => {
            let mut m = Map::new();
            m.insert("data".into(), other.clone());
            m
        }
    }
}

pub(crate) fn payload(data: Value) -> Payload {
    if data.is_string() {
        Payload::new("text", data)
    } else {
        Payload::json(data)
    }
}

fn acmp_error(task_id: &str, code: &ErrorCode, message: String) -> AcmpError {
    if *code == ErrorCode::TIMEOUT {
        AcmpError::timeout(task_id, message)
    } else {
        AcmpError::internal(task_id, message).with_data("code", code.to_string())
    }
}

fn refusal(task_id: &str, e: &HostError) -> AcmpError {
    acmp_error(task_id, &e.code(), e.to_string())
}

impl Provider for HostProvider {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeResult, AcmpError> {
        let span = self
            .spans
            .as_ref()
            .and_then(|s| s.span_of(&invocation.params.task_id));
        match span {
            Some(span) => tracing::Instrument::instrument(self.call(invocation), span).await,
            None => self.call(invocation).await,
        }
    }
}

impl HostProvider {
    /// Runs a task as the tool or skill its capability names.
    async fn call(&self, invocation: Invocation) -> Result<InvokeResult, AcmpError> {
        let params = invocation.params;
        let task_id = params.task_id.clone();
        let cancel = invocation.cancel;
        let key = self
            .run_id
            .as_ref()
            .map(|run| format!("{run}/{task_id}/{}", invocation.attempt));
        let options = || {
            let options = CallOptions::new().session(&self.session_id).cancel(&cancel);
            match key.as_deref() {
                Some(key) => options.idempotency_key(key),
                None => options,
            }
        };
        let args = arguments(params.input.as_ref());
        let timeout = params.timeout_ms.map_or(0, |ms| ms.div_ceil(1000).max(1));
        if cancel.is_cancelled() {
            return Err(AcmpError::cancelled(&task_id));
        }
        let registry = self.host.registry();
        if registry.tool(&params.capability).is_none()
            && registry.skill(&params.capability).is_none()
        {
            // A tool that loads on first use (a mounted MCP server).
            registry.load_tools(true).await;
        }
        let data = if registry.tool(&params.capability).is_some() {
            let mut req = ToolCallRequest::new(&params.capability, Value::Object(args));
            req.session_id = self.session_id.clone();
            req.timeout = timeout;
            let result = self
                .host
                .call_tool(req, options())
                .await
                .map_err(|e| refusal(&task_id, &e))?;
            if !result.success {
                if cancel.is_cancelled() {
                    return Err(AcmpError::cancelled(&task_id));
                }
                let code = result.error_code.unwrap_or(ErrorCode::TOOL_ERROR);
                return Err(acmp_error(
                    &task_id,
                    &code,
                    result.error.unwrap_or_default(),
                ));
            }
            result.data
        } else if registry.skill(&params.capability).is_some() {
            let mut req = SkillCallRequest::new(&params.capability, Value::Object(args));
            req.timeout = timeout;
            req.streaming = false;
            let result = self
                .host
                .call_skill(req, options())
                .await
                .map_err(|e| refusal(&task_id, &e))?;
            if !result.success {
                if cancel.is_cancelled() {
                    return Err(AcmpError::cancelled(&task_id));
                }
                let code = result.error_code.unwrap_or(ErrorCode::SKILL_ERROR);
                return Err(acmp_error(
                    &task_id,
                    &code,
                    result.error.unwrap_or_default(),
                ));
            }
            result.data
        } else {
            return Err(AcmpError::capability_not_found(
                &task_id,
                &params.capability,
            ));
        };
        Ok(InvokeResult::new(task_id, payload(data)))
    }
}

/// Routes every capability the host serves to a [`HostProvider`]; others have
/// no provider (the task fails with -33002 when it would start).
pub struct HostRouter {
    provider: HostProvider,
    shared: ProviderRef,
}

impl HostRouter {
    /// A router over `host`.
    pub fn new(host: Arc<Host>, session_id: &str) -> Self {
        Self::with_provider(HostProvider::new(host, session_id))
    }

    fn with_provider(provider: HostProvider) -> Self {
        Self {
            shared: Arc::new(provider.clone()),
            provider,
        }
    }

    /// The same router, each task's call under its span of `spans`.
    fn traced(self, spans: trace::TaskSpans) -> Self {
        let mut provider = self.provider;
        provider.spans = Some(spans);
        Self::with_provider(provider)
    }
}

impl Router for HostRouter {
    fn route(&self, task: &Task) -> Option<ProviderRef> {
        self.provider
            .serves(&task.capability)
            .then(|| self.shared.clone())
    }
}

/// Whether a JSON document is an ACMP DAG (has `tasks`) rather than a chain.
pub fn is_dag_document(value: &Value) -> bool {
    value.get("tasks").is_some_and(Value::is_array) && value.get("nodes").is_none()
}

/// The printable result of a DAG run: status, leaf outputs, every task's end.
pub fn outcome_json(outcome: &DagOutcome) -> Value {
    let status = match outcome.status {
        DagStatus::Completed => "completed",
        DagStatus::Failed => "failed",
        DagStatus::Cancelled => "cancelled",
    };
    let result: Map<String, Value> = outcome
        .result()
        .into_iter()
        .map(|(id, p)| {
            (
                id.to_owned(),
                serde_json::to_value(p).unwrap_or(Value::Null),
            )
        })
        .collect();
    let tasks: Vec<Value> = outcome
        .tasks
        .iter()
        .map(|t| {
            let mut v = Map::new();
            v.insert("task_id".into(), Value::from(&*t.task_id));
            v.insert("state".into(), Value::from(state_name(t.state())));
            if let Some(e) = t.error() {
                v.insert("error".into(), Value::String(e.to_string()));
            }
            if let Some(r) = t.cancel_reason() {
                v.insert("cancel_reason".into(), Value::from(r.as_str()));
                if let Some(cause) = r.cause() {
                    v.insert("cancelled_by".into(), Value::from(cause));
                }
            }
            Value::Object(v)
        })
        .collect();
    json!({
        "dag_id": outcome.dag().dag_id,
        "status": status,
        "result": result,
        "tasks": tasks,
    })
}

fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Pending => "pending",
        TaskState::Running => "running",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Cancelled => "cancelled",
    }
}

/// A one-line description of an event for progress output (`None`: not worth a line).
pub fn describe(event: &Event) -> Option<String> {
    match &event.kind {
        EventKind::Transition { task_id, to, .. } => {
            Some(format!("{task_id}: {}", state_name(*to)))
        }
        EventKind::DagFinished { status } => Some(format!("dag: {status:?}").to_lowercase()),
        _ => None,
    }
}

/// Why [`run_dag`] has no outcome to give.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DagRunError {
    /// The DAG was refused before anything ran; the report names every
    /// problem.
    #[error("{0}")]
    Invalid(#[from] acmp_dag::ValidationReport),
    /// The run could not be followed to its end.
    #[error("{0}")]
    Run(#[from] acmp_dag::RunError),
    /// The caller cancelled the run (its tasks were cancelled).
    #[error("cancelled")]
    Cancelled,
    /// The DAG cannot be afforded (found before any call).
    #[error("{0}")]
    Budget(#[from] acmp_dag::remote::BudgetError),
    /// `[acmp]` of the configuration is unusable.
    #[error("{0}")]
    Config(String),
}

/// Runs a DAG: over the remote providers of `[[acmp.providers]]` when there
/// are any (checked against the budget before any call), else on the host.
pub async fn run_dag(
    host: &Arc<Host>,
    dag: Dag,
    on_event: impl Fn(&Event) + Send + Sync + 'static,
    cancel: &CancellationToken,
) -> Result<DagOutcome, DagRunError> {
    run_dag_with(host, dag, on_event, cancel, DagRunMode::default()).await
}

/// For whom and how durably [`run_dag_with`] runs a DAG.
#[derive(Default)]
pub struct DagRunMode<'a> {
    /// The session the host's calls belong to (`""`: the host's own).
    pub session: &'a str,
    /// A durable run's id: the calls' idempotency keys start with it.
    pub run_id: Option<&'a str>,
    /// What an earlier run finished, and the observer of each call.
    pub options: DagRunOptions,
}

/// [`run_dag`] for a session, and durably when `mode` says so.
pub async fn run_dag_with(
    host: &Arc<Host>,
    dag: Dag,
    on_event: impl Fn(&Event) + Send + Sync + 'static,
    cancel: &CancellationToken,
    mode: DagRunMode<'_>,
) -> Result<DagOutcome, DagRunError> {
    let telemetry = host.telemetry();
    let workflow = telemetry
        .workflow(WorkflowKind::Acmp, Some(&dag.dag_id))
        .start();
    let timer = telemetry.metrics().timer();
    let spans = trace::TaskSpans::new(telemetry.clone(), workflow.clone());
    let sink = spans.clone();
    let orchestrator = match pool_router(host, &host.config().acmp).map_err(DagRunError::Config)? {
        Some(pool) => {
            for e in pool.connect_all().await {
                tracing::warn!("{e}");
            }
            pool.preflight(&dag)?;
            Orchestrator::new(pool)
        }
        None => {
            let mut provider = HostProvider::new(host.clone(), mode.session);
            if let Some(run) = mode.run_id {
                provider = provider.durable(run);
            }
            Orchestrator::new(HostRouter::with_provider(provider).traced(spans))
        }
    }
    .with_event_sink(move |e: &Event| {
        sink.on_event(e);
        on_event(e);
    });
    let outcome = follow(orchestrator, dag, cancel, mode.options).await;
    let code = match &outcome {
        Ok(o) if o.status == DagStatus::Completed => a2e_telemetry::metrics::OK,
        Ok(o) if o.status == DagStatus::Cancelled => ErrorCode::CANCELLED.as_str(),
        Ok(_) => ErrorCode::CHAIN_NODE_ERROR.as_str(),
        Err(DagRunError::Cancelled) => ErrorCode::CANCELLED.as_str(),
        Err(_) => ErrorCode::RUNTIME_ERROR.as_str(),
    };
    if code != a2e_telemetry::metrics::OK {
        let message = outcome.as_ref().err().map(ToString::to_string);
        workflow.error(code, message.as_deref().unwrap_or_default());
    }
    timer.workflow(WorkflowKind::Acmp, code);
    outcome
}

/// Validates and runs `dag` to its outcome, or cancels it with `cancel`.
async fn follow(
    orchestrator: Orchestrator,
    dag: Dag,
    cancel: &CancellationToken,
    options: DagRunOptions,
) -> Result<DagOutcome, DagRunError> {
    let validated = orchestrator.validate(dag)?;
    let run = orchestrator.start_with(validated, options);
    let control = run.control();
    let outcome = run.outcome();
    tokio::pin!(outcome);
    tokio::select! {
        outcome = &mut outcome => Ok(outcome?),
        _ = cancel.cancelled() => {
            // Cancelled tasks tell their providers (`acmp/cancel`) before the run ends.
            control.cancel();
            let grace = orchestrator.config().cancel_grace + std::time::Duration::from_secs(1);
            let _ = tokio::time::timeout(grace, outcome).await;
            Err(DagRunError::Cancelled)
        }
    }
}
