//! MCP prompts: what a provider offers, and the host's skills as prompts.
//!
//! [`SkillPrompts`] offers every Published skill as a prompt of the same
//! name (a slash command in the clients that have them): its arguments are
//! the properties of the skill's input schema (required as the schema says,
//! described by their `description`), and `prompts/get` renders the skill's
//! instructions (its SKILL.md body) with each `{{name}}` replaced by the
//! argument's value, followed by the arguments given. A required argument
//! that is missing is an `invalid params` error naming it.
//! `completion/complete` offers a property's `enum` values that start with
//! what was typed.

use std::sync::Arc;

use a2e_mcp::{ClientLink, rmcp};
use futures::future::BoxFuture;
use rmcp::model::{ErrorData, GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::{Map, Value};

use crate::host::Host;

/// A source of MCP prompts; the first provider that has a name serves it.
pub trait PromptProvider: Send + Sync + 'static {
    /// Its prompts.
    fn list(&self) -> Vec<Prompt>;

    /// Renders prompt `name` with `arguments` (`None`: not one of its
    /// prompts); `client` reaches the client that asks (its user, for input
    /// the prompt needs).
    fn get<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Map<String, Value>,
        client: &'a ClientLink,
    ) -> BoxFuture<'a, Option<Result<GetPromptResult, ErrorData>>>;

    /// Values for argument `argument` of prompt `name` starting with `prefix`.
    fn complete(&self, name: &str, argument: &str, prefix: &str) -> Vec<String> {
        let _ = (name, argument, prefix);
        Vec::new()
    }
}

/// The error of a required prompt argument that is missing.
pub fn missing_argument(prompt: &str, argument: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("prompt `{prompt}` needs argument `{argument}` (params.arguments.{argument})"),
        Some(serde_json::json!({ "prompt": prompt, "argument": argument })),
    )
}

/// The arguments a prompt declares, checked: every required one present,
/// every value a string (as MCP sends them).
pub fn check_arguments(prompt: &Prompt, given: &Map<String, Value>) -> Result<(), ErrorData> {
    for arg in prompt.arguments.iter().flatten() {
        let present = given.get(&arg.name).is_some_and(|v| !v.is_null());
        if arg.required == Some(true) && !present {
            return Err(missing_argument(&prompt.name, &arg.name));
        }
    }
    Ok(())
}

/// The host's Published skills as prompts.
pub struct SkillPrompts {
    host: Arc<Host>,
}

impl SkillPrompts {
    /// The skills of `host`.
    pub fn new(host: Arc<Host>) -> Self {
        Self { host }
    }

    fn skills(&self) -> Vec<a2e_proto::SkillDefinition> {
        self.host
            .registry()
            .skills()
            .into_iter()
            .map(|entry| (*entry.def).clone())
            .filter(|def| def.status == a2e_proto::SkillStatus::PUBLISHED)
            .collect()
    }
}

fn properties(schema: &Map<String, Value>) -> Vec<(&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().collect())
        .unwrap_or_default()
}

/// A skill as a prompt.
pub fn skill_prompt(def: &a2e_proto::SkillDefinition) -> Prompt {
    let required: Vec<&str> = def
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let arguments: Vec<PromptArgument> = properties(&def.input_schema)
        .into_iter()
        .map(|(name, prop)| {
            let mut arg = PromptArgument::new(name.clone());
            arg.description = prop
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            arg.required = Some(required.contains(&name.as_str()));
            arg
        })
        .collect();
    let mut prompt = Prompt::new(def.name.clone(), Some(def.description.clone()), None);
    prompt.arguments = (!arguments.is_empty()).then_some(arguments);
    prompt
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The skill's instructions with `{{name}}` replaced, then the arguments.
pub fn render(def: &a2e_proto::SkillDefinition, arguments: &Map<String, Value>) -> String {
    let mut text = def
        .instructions
        .clone()
        .filter(|i| !i.trim().is_empty())
        .unwrap_or_else(|| def.description.clone());
    for (name, value) in arguments {
        text = text.replace(&format!("{{{{{name}}}}}"), &as_text(value));
    }
    if !arguments.is_empty() {
        text.push_str("\n\nArguments:");
        for (name, value) in arguments {
            text.push_str(&format!("\n- {name}: {}", as_text(value)));
        }
    }
    text
}

impl PromptProvider for SkillPrompts {
    fn list(&self) -> Vec<Prompt> {
        self.skills().iter().map(skill_prompt).collect()
    }

    fn get<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Map<String, Value>,
        _client: &'a ClientLink,
    ) -> BoxFuture<'a, Option<Result<GetPromptResult, ErrorData>>> {
        Box::pin(async move {
            let def = self.skills().into_iter().find(|d| d.name == name)?;
            let prompt = skill_prompt(&def);
            if let Err(e) = check_arguments(&prompt, arguments) {
                return Some(Err(e));
            }
            let text = render(&def, arguments);
            let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
            result.description = Some(def.description.clone());
            Some(Ok(result))
        })
    }

    fn complete(&self, name: &str, argument: &str, prefix: &str) -> Vec<String> {
        let Some(def) = self.skills().into_iter().find(|d| d.name == name) else {
            return Vec::new();
        };
        properties(&def.input_schema)
            .into_iter()
            .find(|(n, _)| n.as_str() == argument)
            .and_then(|(_, prop)| prop.get("enum").and_then(Value::as_array).cloned())
            .unwrap_or_default()
            .iter()
            .map(as_text)
            .filter(|v| v.starts_with(prefix))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn skill() -> a2e_proto::SkillDefinition {
        let mut def = a2e_proto::SkillDefinition::new("summarise", "Summarise notes");
        def.instructions = Some("Summarise {{folder}} with care.".into());
        def.input_schema = json!({"type": "object", "required": ["folder"], "properties": {
            "folder": {"type": "string", "description": "Where"},
            "mode": {"type": "string", "enum": ["short", "long"]}}})
        .as_object()
        .cloned()
        .unwrap();
        def
    }

    #[test]
    fn a_skill_becomes_a_prompt_with_its_arguments() {
        let prompt = skill_prompt(&skill());
        let args = prompt.arguments.clone().unwrap();
        assert_eq!(args[0].name, "folder");
        assert_eq!(
            (args[0].required, args[1].required),
            (Some(true), Some(false))
        );
        let err = check_arguments(&prompt, &Map::new()).unwrap_err();
        assert!(
            err.message.contains("params.arguments.folder"),
            "{}",
            err.message
        );
        let given = json!({"folder": "notes"}).as_object().cloned().unwrap();
        check_arguments(&prompt, &given).unwrap();
        let text = render(&skill(), &given);
        assert!(text.starts_with("Summarise notes with care."), "{text}");
        assert!(text.ends_with("- folder: notes"), "{text}");
    }
}
