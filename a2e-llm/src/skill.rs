//! Helpers that keep the host's LLM-skill wiring thin: the opening messages of a skill
//! call, its loop options, error codes, and the usage metadata of a result.

use std::time::Duration;

use a2e_proto::{ErrorCode, EventKind};
use serde_json::{Map, Value, json};

use crate::agent::{LoopEventSink, LoopOptions, LoopOutcome};
use crate::config::ResolvedModel;
use crate::error::{ConfigError, LlmError, LoopError};
use crate::events::LoopEvent;
#[cfg(test)]
use crate::types::Usage;
use crate::types::{Message, ToolChoice};

/// The `max_turns` of a skill that sets none.
pub const DEFAULT_MAX_TURNS: u32 = 10;

/// The opening messages of a skill call: the instructions (the skill file's Markdown body)
/// as the system prompt, followed by the expected answer shape when `output_schema` is
/// non-empty; the arguments as a JSON object in the user message.
pub fn skill_messages(
    instructions: &str,
    arguments: &Map<String, Value>,
    output_schema: &Map<String, Value>,
) -> Vec<Message> {
    let mut system = instructions.trim().to_owned();
    if !output_schema.is_empty() {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(
            "When you are done, answer with one JSON value (no prose around it) matching this JSON Schema:\n",
        );
        system.push_str(&Value::Object(output_schema.clone()).to_string());
    }
    let user = format!(
        "Arguments (JSON):\n{}",
        serde_json::to_string_pretty(&Value::Object(arguments.clone())).unwrap_or_default()
    );
    let mut messages = Vec::with_capacity(2);
    if !system.is_empty() {
        messages.push(Message::system(system));
    }
    messages.push(Message::user(user));
    messages
}

impl LoopOptions {
    /// Options of a skill call: the skill's `max_turns` (default
    /// [`DEFAULT_MAX_TURNS`]), the smaller of its `timeout_seconds` and the call's
    /// `timeout` (0 means none), streaming as the call asks.
    pub fn for_skill(
        max_turns: Option<u32>,
        timeout_seconds: Option<u64>,
        call_timeout_seconds: u64,
        streaming: bool,
    ) -> Self {
        let limits = [timeout_seconds.unwrap_or(0), call_timeout_seconds];
        let timeout = limits
            .into_iter()
            .filter(|s| *s > 0)
            .min()
            .map(Duration::from_secs);
        LoopOptions {
            max_turns: max_turns.unwrap_or(DEFAULT_MAX_TURNS).max(1),
            timeout,
            stream: streaming,
            first_tool_choice: ToolChoice::Auto,
            ..LoopOptions::default()
        }
    }
}

impl LoopError {
    /// The A2E error code a skill result carries for this error: `timeout` for the loop's
    /// time bound or a model request's timeout, `skill_error` otherwise (the limit, a
    /// provider failure, a cancellation).
    pub fn error_code(&self) -> ErrorCode {
        match self {
            LoopError::Timeout { .. } | LoopError::Provider(LlmError::Timeout { .. }) => {
                ErrorCode::TIMEOUT
            }
            _ => ErrorCode::SKILL_ERROR,
        }
    }
}

impl ConfigError {
    /// `unauthorized` for what the allow-list refuses, `skill_error` for a bad configuration.
    pub fn error_code(&self) -> ErrorCode {
        if self.is_unauthorized() {
            ErrorCode::UNAUTHORIZED
        } else {
            ErrorCode::SKILL_ERROR
        }
    }
}

/// What a skill result's metadata says about the model run: provider, model, turns, tool
/// calls and token usage. Never credentials.
pub fn run_metadata(model: &ResolvedModel, outcome: &LoopOutcome) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("provider".into(), json!(model.provider));
    map.insert("model".into(), json!(model.model));
    map.insert("turns".into(), json!(outcome.turns));
    map.insert("tool_calls".into(), json!(outcome.tool_calls));
    map.insert(
        "usage".into(),
        json!({
            "input_tokens": outcome.usage.input_tokens,
            "output_tokens": outcome.usage.output_tokens,
            "total_tokens": outcome.usage.total(),
        }),
    );
    map
}

/// An [`LoopEventSink`] handing each event on as a `skill/event` kind and payload
/// ([`LoopEvent::to_skill_event`]).
pub struct SkillEventSink<F>(pub F);

impl<F: Fn(EventKind, Map<String, Value>) + Send + Sync> LoopEventSink for SkillEventSink<F> {
    fn event(&self, event: LoopEvent) {
        let (kind, data) = event.to_skill_event();
        (self.0)(kind, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_instructions_schema_and_arguments() {
        let args = json!({"path": "notes.md"}).as_object().unwrap().clone();
        let schema = json!({"type": "object"}).as_object().unwrap().clone();
        let m = skill_messages("Summarise.", &args, &schema);
        let Message::System { content } = &m[0] else {
            panic!("{m:?}")
        };
        assert!(content.starts_with("Summarise.\n\n"));
        assert!(content.ends_with(r#"{"type":"object"}"#));
        let Message::User { content } = &m[1] else {
            panic!("{m:?}")
        };
        assert!(content.contains("\"path\": \"notes.md\""));
        assert_eq!(skill_messages("", &args, &Map::new()).len(), 1);
    }

    #[test]
    fn skill_options_take_the_smaller_timeout() {
        let o = LoopOptions::for_skill(Some(3), Some(120), 60, true);
        assert_eq!(
            (o.max_turns, o.timeout, o.stream),
            (3, Some(Duration::from_secs(60)), true)
        );
        let o = LoopOptions::for_skill(None, None, 0, false);
        assert_eq!((o.max_turns, o.timeout), (DEFAULT_MAX_TURNS, None));
        assert_eq!(
            LoopOptions::for_skill(Some(0), Some(5), 60, false).timeout,
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn error_codes() {
        assert_eq!(
            LoopError::MaxTurns {
                limit: 2,
                usage: Usage::default()
            }
            .error_code(),
            ErrorCode::SKILL_ERROR
        );
        assert_eq!(
            LoopError::Timeout {
                after: Duration::from_secs(1)
            }
            .error_code(),
            ErrorCode::TIMEOUT
        );
        assert_eq!(
            ConfigError::unauthorized("llm_override.provider_name", "no").error_code(),
            ErrorCode::UNAUTHORIZED
        );
    }
}
