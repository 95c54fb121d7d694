//! LLM skills: a skill file without a chain block runs the agentic loop
//! ([`a2e_llm::run_loop`]) with its Markdown body as the system prompt.
//!
//! * The model is the skill's `llm_config` (a configured provider by name, with
//!   model/temperature/…), or the agent's `llm_override` when the host's allow-list
//!   admits it (else the call is refused with `unauthorized` naming the field), or the
//!   first configured provider.
//! * The tools offered are those the skill lists in `tools` and those whose `toolkit` is
//!   in `toolkits`; calls of any other tool are answered to the model as refused. Tool
//!   calls go through [`Host::call_tool`] in the call's session, under a child of its
//!   cancellation token and within its remaining time.
//! * Turns, tool calls, tool results, streamed text (`artifact`) and token usage are
//!   `skill/event`s. `max_turns` bounds the model calls (`skill_error` naming the limit).
//! * With an `output_schema`, the final answer's JSON is extracted (first `{`/`[` to last
//!   `}`/`]`, repaired) and validated; otherwise `data` is the answer's text. `summary`
//!   holds the run's metadata: provider, model, turns, tool calls, token usage.

use std::sync::Arc;

use a2e_llm::{
    CancellationToken, ConfigError, LoopError, LoopEvent, LoopOptions, Providers, ToolExecutor,
    ToolSpec, run_loop, run_metadata, skill_messages,
};
use a2e_proto::{EventKind, SkillDefinition, ToolCallRequest};
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::defaults::Defaults;
use super::front_matter::SkillFile;
use crate::audit::AuditRecord;
use crate::error::{HostError, HostResult, SkillError};
use crate::host::{CallOptions, Host};
use crate::plugin::{SkillCall, SkillOutput, SkillPlugin};

/// The audit record type of a tool call an LLM skill's model made (named `skill/tool`).
pub const AUDIT_TYPE: &str = "skill/tool_call";

/// Most violations of `output_schema` listed in an error.
const MAX_VIOLATIONS: usize = 20;
/// Most bytes of the model's answer quoted in an error.
const MAX_QUOTED_ANSWER: usize = 400;

/// A loaded LLM skill.
#[derive(Debug, Clone)]
pub struct LlmSkill {
    /// Its manifest (`instructions` is the system prompt).
    pub def: SkillDefinition,
    /// Its default arguments.
    pub defaults: Defaults,
    output: Option<Arc<jsonschema::Validator>>,
}

impl LlmSkill {
    /// The LLM skill of a parsed file; `path` is named in errors.
    pub fn from_file(file: &SkillFile, path: &std::path::Path) -> Result<Self, SkillError> {
        let def = file.definition(&file.body, path)?;
        Self::new(def).map_err(|e| SkillError::InFile {
            path: path.to_owned(),
            source: Box::new(e),
        })
    }

    /// An LLM skill over a definition; its `output_schema` must compile.
    pub fn new(def: SkillDefinition) -> Result<Self, SkillError> {
        let output = if def.output_schema.is_empty() {
            None
        } else {
            let schema = Value::Object(def.output_schema.clone());
            let v = jsonschema::validator_for(&schema).map_err(|e| SkillError::Schema {
                skill: def.name.clone(),
                schema: "output_schema",
                source: Box::new(e),
            })?;
            Some(Arc::new(v))
        };
        let defaults = Defaults::new(&def)?;
        Ok(Self {
            def,
            defaults,
            output,
        })
    }

    /// The final answer as the result's `data`: the text, or with an `output_schema` the
    /// JSON extracted from it and validated.
    pub fn answer_data(&self, text: &str) -> HostResult<Value> {
        let Some(validator) = &self.output else {
            return Ok(Value::String(text.to_owned()));
        };
        let value = ontheia::repair::extract_json(text).ok_or_else(|| {
            HostError::Skill(format!(
                "the final answer holds no JSON value for output_schema: {:?}",
                a2e_llm::truncate(text, MAX_QUOTED_ANSWER)
            ))
        })?;
        let violations: Vec<String> = validator
            .iter_errors(&value)
            .take(MAX_VIOLATIONS)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path = if path.is_empty() { "$".into() } else { path };
                format!("{path}: {e}")
            })
            .collect();
        if violations.is_empty() {
            Ok(value)
        } else {
            Err(HostError::Skill(format!(
                "the final answer does not match output_schema: {}",
                violations.join("; ")
            )))
        }
    }
}

/// The plugin serving LLM skills over the host's model providers.
pub struct LlmSkills {
    skills: Vec<LlmSkill>,
    providers: Arc<Providers>,
}

impl LlmSkills {
    /// A plugin over loaded skills and the configured providers.
    pub fn new(skills: Vec<LlmSkill>, providers: Arc<Providers>) -> Self {
        Self { skills, providers }
    }
}

/// A provider configuration error as the host answers it: what the allow-list refuses
/// is `unauthorized`, a bad `llm_override` a `schema_violation`, a bad skill
/// configuration a failed skill. The message names the field.
fn config_error(e: ConfigError) -> HostError {
    if e.is_unauthorized() {
        HostError::unauthorized(e.to_string())
    } else if e.field().starts_with("llm_override") {
        HostError::schema(vec![e.to_string()])
    } else {
        HostError::skill_failed("the skill's model configuration", e)
    }
}

fn loop_error(e: LoopError) -> HostError {
    match e {
        LoopError::Timeout { after } => HostError::Timeout(after.as_secs()),
        LoopError::Cancelled => HostError::Cancelled,
        LoopError::MaxTurns { limit, usage } => HostError::Skill(format!(
            "max_turns reached: the model still called tools after {limit} turns ({} tokens used)",
            usage.total()
        )),
        other => HostError::skill_failed("the agentic loop failed", other),
    }
}

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
struct HostTools {
    host: Arc<Host>,
    skill: String,
    session_id: Arc<str>,
    correlation_id: Arc<str>,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    specs: Vec<ToolSpec>,
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
            let outcome = match host
                .call_tool(req, CallOptions::new().session(&session).cancel(&cancel))
                .await
            {
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

impl SkillPlugin for LlmSkills {
    fn name(&self) -> &str {
        "llm_skills"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        self.skills
            .iter()
            .map(|s| s.defaults.advertised(&s.def))
            .collect()
    }

    async fn call(
        &self,
        skill: &str,
        args: Map<String, Value>,
        call: SkillCall,
    ) -> HostResult<SkillOutput> {
        let found = self
            .skills
            .iter()
            .find(|s| s.def.name == skill)
            .ok_or_else(|| HostError::UnknownSkill(skill.into()))?;
        let args = found.defaults.apply(args)?;
        let model = self
            .providers
            .resolve(found.def.llm_config.as_ref(), call.llm_override.as_ref())
            .map_err(config_error)?;
        let cancel = call.ctx.cancel.child_token();
        let host = crate::Host::of(&call.host)?;
        let turns = super::llm_turns::ChatTurns::new(
            host.telemetry(),
            self.providers.config(&model.provider).map(|c| c.kind),
            &model.model,
            &call.ctx.session_id,
        );
        let tools = HostTools {
            specs: offered_tools(&host, &found.def),
            host,
            skill: skill.to_owned(),
            session_id: call.ctx.session_id.clone(),
            correlation_id: call.ctx.correlation_id.clone(),
            cancel: cancel.clone(),
            deadline: call.ctx.deadline,
        };
        let messages = skill_messages(
            found.def.instructions.as_deref().unwrap_or(""),
            &args,
            &found.def.output_schema,
        );
        let request = model.request(messages, Vec::new());
        let options = LoopOptions {
            max_turns: found
                .def
                .max_turns
                .unwrap_or(a2e_llm::DEFAULT_MAX_TURNS)
                .max(1),
            timeout: call.ctx.remaining(),
            stream: true,
            ..LoopOptions::default()
        };
        tracing::debug!(skill, provider = %model.provider, model = %model.model, tools = tools.specs.len(), "LLM skill starts");
        let (tx, mut rx) =
            tokio::sync::mpsc::unbounded_channel::<(EventKind, Map<String, Value>)>();
        let observed = turns.as_ref();
        let sink = move |event: LoopEvent| {
            if let Some(turns) = observed {
                turns.observe(&event);
            }
            let _ = tx.send(event.to_skill_event());
        };
        let ctx = call.ctx.clone();
        let forward = async move {
            while let Some((kind, data)) = rx.recv().await {
                ctx.emit(kind, data).await;
            }
        };
        let run = async {
            let traced = super::llm_turns::TracedModel {
                client: &model.client,
                turns: turns.as_ref(),
            };
            let result = run_loop(&traced, request, &tools, &sink, &options, &cancel).await;
            drop(sink);
            result
        };
        let (outcome, ()) = tokio::join!(run, forward);
        let outcome = outcome.map_err(loop_error);
        if let Some(turns) = &turns {
            let code = outcome.as_ref().err().map(HostError::code);
            turns.end(code.as_ref().map(|c| c.as_str()));
        }
        let outcome = outcome?;
        let data = found.answer_data(&outcome.text)?;
        Ok(SkillOutput {
            data,
            summary: Value::Object(run_metadata(&model, &outcome)),
            truncated: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn skill(schema: Value) -> LlmSkill {
        let mut def = SkillDefinition::new("s", "d");
        def.output_schema = schema.as_object().unwrap().clone();
        LlmSkill::new(def).unwrap()
    }

    #[test]
    fn answers_are_text_or_repaired_validated_json() {
        let plain = skill(json!({}));
        assert_eq!(plain.answer_data("hi").unwrap(), json!("hi"));
        let typed = skill(json!({"type": "object", "required": ["todos"],
            "properties": {"todos": {"type": "array"}}}));
        let v = typed
            .answer_data("Here: {'todos': ['a', 'b',],} done")
            .unwrap();
        assert_eq!(v, json!({"todos": ["a", "b"]}));
        let err = typed.answer_data(r#"{"todos": 3}"#).unwrap_err();
        assert!(err.to_string().contains("/todos"), "{err}");
        let err = typed.answer_data("no json at all").unwrap_err();
        assert!(err.to_string().contains("no JSON"), "{err}");
    }

    #[test]
    fn config_errors_map_to_refusals_or_failures() {
        let e = config_error(ConfigError::unauthorized(
            "llm_override.provider_name",
            "no",
        ));
        assert!(
            matches!(e, HostError::Unauthorized(ref m) if m.contains("llm_override.provider_name"))
        );
        assert!(
            config_error(ConfigError::invalid(
                "llm_override.provider_config.x",
                "bad"
            ))
            .is_refusal()
        );
        assert!(
            !config_error(ConfigError::invalid("llm_config.provider_name", "bad")).is_refusal()
        );
    }
}
