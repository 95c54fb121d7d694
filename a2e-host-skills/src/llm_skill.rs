//! LLM skills: a skill file without a chain block runs the agentic loop
//! ([`a2e_llm::run_loop`]) with its Markdown body as the system prompt.
//!
//! * The model is the skill's `llm_config` (a configured provider by name, with
//!   model/temperature/…), or the agent's `llm_override` when the host's allow-list
//!   admits it (else the call is refused with `unauthorized` naming the field), or the
//!   first configured provider.
//! * The tools offered are those the skill lists in `tools` and those whose `toolkit` is
//!   in `toolkits`; calls of any other tool are answered to the model as refused. Tool
//!   calls go through [`Host::call_tool`](a2e_host_core::Host::call_tool) in the call's session, under a child of its
//!   cancellation token and within its remaining time.
//! * Turns, tool calls, tool results, streamed text (`artifact`) and token usage are
//!   `skill/event`s. `max_turns` bounds the model calls (`skill_error` naming the limit).
//! * With an `output_schema`, the final answer's JSON is extracted (first `{`/`[` to last
//!   `}`/`]`, repaired) and validated; otherwise `data` is the answer's text. `summary`
//!   holds the run's metadata: provider, model, turns, tool calls, token usage.

use std::sync::Arc;

use a2e_llm::{
    ConfigError, LoopError, LoopEvent, LoopOptions, Providers, run_metadata, skill_messages,
};
use a2e_proto::{EventKind, SkillDefinition};
use serde_json::{Map, Value};

use super::defaults::Defaults;
use super::front_matter::SkillFile;
use super::llm_durable;
use a2e_host_core::error::{HostError, HostResult, SkillError};
pub use a2e_host_core::llm::CLIENT_PROVIDER;
use a2e_host_core::llm_tools::HostTools;
pub use a2e_host_core::llm_tools::{AUDIT_TYPE, offered_tools};
use a2e_host_core::plugin::{SkillCall, SkillOutput, SkillPlugin};

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

/// The model an LLM skill call runs on.
// Without `mcp` the client's variant is uninhabited: nothing to box.
#[cfg_attr(not(feature = "mcp"), allow(clippy::large_enum_variant))]
enum Model {
    /// A configured provider.
    Provider(a2e_llm::ResolvedModel),
    /// The connected MCP client's, through its sampling.
    Client(ClientModel),
}

/// The connected MCP client's model, with the model name the skill asks for.
#[cfg(feature = "mcp")]
struct ClientModel(a2e_host_mcp::ClientModel, ClientHint);

/// What a skill's `llm_config` asks of the client's model: a model name (a
/// hint to the client), a temperature, a token limit.
#[cfg(feature = "mcp")]
struct ClientHint {
    model: String,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
}

#[cfg(feature = "mcp")]
impl ClientHint {
    fn of(config: Option<&Map<String, Value>>) -> Self {
        let get = |key: &str| config.and_then(|c| c.get(key));
        Self {
            model: get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            temperature: get("temperature").and_then(Value::as_f64),
            max_tokens: get("max_tokens")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok()),
        }
    }

    fn request(&self, messages: Vec<a2e_llm::Message>) -> a2e_llm::ChatRequest {
        a2e_llm::ChatRequest {
            model: self.model.clone(),
            messages,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            ..a2e_llm::ChatRequest::default()
        }
    }
}
/// Without the `mcp` feature no call has an MCP client.
#[cfg(not(feature = "mcp"))]
enum ClientModel {}

impl Model {
    fn provider(&self) -> &str {
        match self {
            Model::Provider(m) => &m.provider,
            Model::Client(_) => CLIENT_PROVIDER,
        }
    }

    fn model(&self) -> &str {
        match self {
            Model::Provider(m) => &m.model,
            #[cfg(feature = "mcp")]
            Model::Client(c) => &c.1.model,
            #[cfg(not(feature = "mcp"))]
            Model::Client(never) => match *never {},
        }
    }

    fn request(&self, messages: Vec<a2e_llm::Message>) -> a2e_llm::ChatRequest {
        match self {
            Model::Provider(m) => m.request(messages, Vec::new()),
            #[cfg(feature = "mcp")]
            Model::Client(c) => c.1.request(messages),
            #[cfg(not(feature = "mcp"))]
            Model::Client(never) => match *never {},
        }
    }

    fn metadata(&self, outcome: &a2e_llm::LoopOutcome) -> Map<String, Value> {
        match self {
            Model::Provider(m) => run_metadata(m, outcome),
            #[cfg(feature = "mcp")]
            Model::Client(c) => {
                let mut map = Map::new();
                map.insert("provider".into(), Value::from(CLIENT_PROVIDER));
                let model = c.0.answered_model().unwrap_or_else(|| c.1.model.clone());
                map.insert("model".into(), Value::String(model));
                map.insert("turns".into(), Value::from(outcome.turns));
                map.insert("tool_calls".into(), Value::from(outcome.tool_calls));
                map.insert("client".into(), Value::String(c.0.client_name()));
                map
            }
            #[cfg(not(feature = "mcp"))]
            Model::Client(never) => match *never {},
        }
    }
}

/// The connected MCP client's model for this call, when the call runs on
/// it: the skill names the provider `mcp-client` (and no provider of that
/// name is configured), or the host has no provider at all and the call
/// came from an MCP client with sampling. An agent's `llm_override` always
/// picks a configured provider. A skill that names `mcp-client` called
/// from elsewhere, or from a client without sampling, is a `skill_error`
/// saying so.
fn client_model(
    providers: &Providers,
    def: &SkillDefinition,
    call: &SkillCall<HostError>,
) -> HostResult<Option<ClientModel>> {
    if call.llm_override.is_some() {
        return Ok(None);
    }
    let config = def.llm_config.as_ref();
    let named = config.is_some_and(|c| c.provider_name == CLIENT_PROVIDER)
        && providers.config(CLIENT_PROVIDER).is_none();
    let no_provider = providers.names().next().is_none();
    if !named && !no_provider {
        return Ok(None);
    }
    #[cfg(feature = "mcp")]
    {
        match a2e_host_mcp::client_of(&call.ctx) {
            Some(link) if link.supports_sampling() => {
                let hint = ClientHint::of(config.and_then(|c| c.provider_config.as_ref()));
                return Ok(Some(ClientModel(
                    a2e_host_mcp::ClientModel::new(link),
                    hint,
                )));
            }
            Some(link) => {
                return Err(HostError::Skill(format!(
                    "the LLM skill `{}` runs on the MCP client's model, but the client {}does not support sampling (the `sampling` capability)",
                    def.name,
                    link.client_name()
                        .map(|n| format!("`{n}` "))
                        .unwrap_or_default()
                )));
            }
            None => {}
        }
    }
    if named {
        return Err(HostError::Skill(format!(
            "the LLM skill `{}` runs on the MCP client's model (provider `{CLIENT_PROVIDER}`): call it from an MCP client that supports sampling",
            def.name
        )));
    }
    Ok(None)
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

impl SkillPlugin<HostError> for LlmSkills {
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
        call: SkillCall<HostError>,
    ) -> HostResult<SkillOutput> {
        let found = self
            .skills
            .iter()
            .find(|s| s.def.name == skill)
            .ok_or_else(|| HostError::UnknownSkill(skill.into()))?;
        let args = found.defaults.apply(args)?;
        let model = match client_model(&self.providers, &found.def, &call)? {
            Some(client) => Model::Client(client),
            None => Model::Provider(
                self.providers
                    .resolve(found.def.llm_config.as_ref(), call.llm_override.as_ref())
                    .map_err(config_error)?,
            ),
        };
        let cancel = call.ctx.cancel.child_token();
        let host = a2e_host_core::host::Host::of(&call.ctx)?;
        let durable = llm_durable::begin(&host, &call, skill, &args, &found.def).await?;
        let cancel = llm_durable::cancel_token(&durable, cancel).await;
        let turns = a2e_host_core::llm_turns::ChatTurns::new(
            host.telemetry(),
            match &model {
                Model::Provider(m) => self.providers.config(&m.provider).map(|c| c.kind),
                Model::Client(_) => None,
            },
            model.model(),
            &call.ctx.session_id,
        );
        let tools = HostTools {
            specs: offered_tools(&host, &found.def),
            host: host.clone(),
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
        let request = model.request(messages);
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
        tracing::debug!(skill, provider = %model.provider(), model = %model.model(), tools = tools.specs.len(), "LLM skill starts");
        let (tx, mut rx) =
            tokio::sync::mpsc::unbounded_channel::<(EventKind, Map<String, Value>)>();
        let observed = turns.as_ref();
        let journal = &durable;
        let sink = move |event: LoopEvent| {
            if let Some(turns) = observed {
                turns.observe(&event);
            }
            llm_durable::observe(journal, &event);
            let _ = tx.send(event.to_skill_event());
        };
        let ctx = call.ctx.clone();
        let forward = async move {
            while let Some((kind, data)) = rx.recv().await {
                ctx.emit(kind, data).await;
            }
        };
        let run = async {
            let result = match &model {
                Model::Provider(m) => {
                    let traced = a2e_host_core::llm_turns::TracedModel {
                        client: &m.client,
                        turns: turns.as_ref(),
                    };
                    llm_durable::drive(&durable, &traced, request, &tools, &sink, &options, &cancel)
                        .await
                }
                #[cfg(feature = "mcp")]
                Model::Client(c) => {
                    llm_durable::drive(&durable, &c.0, request, &tools, &sink, &options, &cancel)
                        .await
                }
                #[cfg(not(feature = "mcp"))]
                Model::Client(never) => match *never {},
            };
            drop(sink);
            result
        };
        let (outcome, ()) = tokio::join!(run, forward);
        let outcome = outcome.map_err(loop_error);
        if let Some(turns) = &turns {
            let code = outcome.as_ref().err().map(HostError::code);
            turns.end(code.as_ref().map(|c| c.as_str()));
        }
        let result = outcome.and_then(|outcome| {
            Ok(SkillOutput {
                data: found.answer_data(&outcome.text)?,
                summary: Value::Object(model.metadata(&outcome)),
                truncated: false,
            })
        });
        llm_durable::finish(&durable, result).await
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
