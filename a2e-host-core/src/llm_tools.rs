//! The host's tools as an LLM skill's model sees them: the ones the skill
//! offers ([`offered_tools`]) and their calls run through the host in the
//! skill call's session ([`HostTools`]), each audited.

use std::future::Future;
use std::sync::Arc;

use a2e_llm::{CancellationToken, ToolExecutor, ToolSpec};
use a2e_proto::{SkillDefinition, ToolCallRequest};
use serde_json::Value;
use tokio::time::Instant;

use crate::audit::AuditRecord;
use crate::host::{CallOptions, Host};

/// The audit record type of a tool call an LLM skill's model made (named `skill/tool`).
pub const AUDIT_TYPE: &str = "skill/tool_call";

/// The names in a `tools`/`toolkits` list (strings, or objects with a `name`).
fn names(list: Option<&Vec<Value>>) -> Vec<String> {
    list.into_iter()
        .flatten()
        .filter_map(|t| match t {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => o.get("name").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// The host's tools a skill may use: listed in `tools`, or of a toolkit in `toolkits`
/// (case-insensitive).
pub fn offered_tools(host: &Host, def: &SkillDefinition) -> Vec<ToolSpec> {
    let tools = names(def.tools.as_ref());
    let kits: Vec<String> = names(def.toolkits.as_ref())
        .iter()
        .map(|k| k.to_lowercase())
        .collect();
    host.registry()
        .tools()
        .into_iter()
        .filter(|e| {
            tools.contains(&e.def.name)
                || e.def
                    .toolkit
                    .as_ref()
                    .is_some_and(|k| kits.contains(&k.to_lowercase()))
        })
        .map(|e| {
            let schema = e.plugin.input_schema(&e.def);
            ToolSpec::new(e.def.name.clone(), e.def.description.clone(), schema)
        })
        .collect()
}

/// Runs the model's tool calls through the host, in the skill call's session.
pub struct HostTools {
    /// The host the calls run on.
    pub host: Arc<Host>,
    /// The skill whose model asks for the calls (named in the audit log).
    pub skill: String,
    /// The skill call's session.
    pub session_id: Arc<str>,
    /// The skill call's correlation id (named in the audit log).
    pub correlation_id: Arc<str>,
    /// Fires when the skill call is cancelled.
    pub cancel: CancellationToken,
    /// The skill call's deadline, which no tool call outlives.
    pub deadline: Option<Instant>,
    /// The tools offered to the model.
    pub specs: Vec<ToolSpec>,
}

impl ToolExecutor for HostTools {
    fn tools(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> impl Future<Output = Result<Value, String>> + Send {
        self.call_keyed(name, arguments, None)
    }
}

impl HostTools {
    /// Runs one tool call, carrying the idempotency key `key` of a durable
    /// run's node when it has one.
    pub fn call_keyed(
        &self,
        name: &str,
        arguments: Value,
        key: Option<String>,
    ) -> impl Future<Output = Result<Value, String>> + Send {
        let mut req = ToolCallRequest::new(name, arguments);
        req.id = uuid::Uuid::new_v4().to_string();
        req.correlation_id = self.correlation_id.to_string();
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            req.timeout = left.as_secs().max(1);
        }
        let host = self.host.clone();
        let session = self.session_id.clone();
        let cancel = self.cancel.clone();
        let skill = self.skill.clone();
        async move {
            let started = std::time::Instant::now();
            let audited_arguments = host.audit().arguments(&req.arguments);
            let tool_name = req.tool_name.clone();
            let mut options = CallOptions::new().session(&session).cancel(&cancel);
            if let Some(key) = key.as_deref() {
                options = options.idempotency_key(key);
            }
            let outcome = match host.call_tool(req, options).await {
                Ok(r) if r.success => Ok(r.data),
                Ok(r) => {
                    let code = r.error_code.map(|c| c.to_string()).unwrap_or_default();
                    Err((code, r.error.unwrap_or_default()))
                }
                Err(e) => Err((e.code().to_string(), e.to_string())),
            };
            host.audit().record(&AuditRecord {
                ts: a2e_proto::now(),
                session: session.to_string(),
                agent: host.identity(&session).agent_id.to_string(),
                msg_type: AUDIT_TYPE.into(),
                name: format!("{skill}/{tool_name}"),
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                success: outcome.is_ok(),
                error_code: outcome
                    .as_ref()
                    .err()
                    .map(|e| e.0.clone())
                    .unwrap_or_default(),
                arguments: audited_arguments,
                correlation_id: self.correlation_id.to_string(),
            });
            outcome.map_err(|(code, message)| format!("{code}: {message}"))
        }
    }
}
