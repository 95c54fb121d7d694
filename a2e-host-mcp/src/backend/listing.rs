//! What `tools/list` offers: the host's tools and Published skills under
//! their MCP names ([`names`](super::names)), with titles, annotations and
//! output schemas where the host knows them, and without the ones that
//! cannot run under this configuration.
//!
//! **Left out.** A tool or skill that would fail on every call is not listed
//! over MCP (a client cannot tell an agent why a listed tool always fails;
//! an unlisted one is not tried): the built-in `run_command` when
//! `[commands] allow` is empty, `http_request` when `[http] allow_hosts` is
//! empty, and an LLM skill whose model is not there — its provider is not
//! configured, or it runs on the client's model (provider `mcp-client`, or
//! the host has none) and the client declared no `sampling`. A2E's
//! `tool/list` still lists them, and a call by name still answers why it
//! fails. Each list logs what it left out, and why, at `info`.

use a2e_mcp::BackendTool;
use a2e_mcp::rmcp::model::ToolAnnotations;
use a2e_proto::{SkillDefinition, ToolDefinition, ToolListRequest};
use serde_json::{Map, Value};

use super::names::{McpNames, Target};
use crate::builtins::ToolHints;
use crate::host::Host;

/// The plugin that serves the built-in tools.
const BUILTIN_PLUGIN: &str = "builtin";
/// The plugin that serves the memory tools.
#[cfg(feature = "memory")]
const MEMORY_PLUGIN: &str = "memory";
/// The plugin that serves LLM skills.
#[cfg(feature = "llm")]
const LLM_SKILLS_PLUGIN: &str = "llm_skills";

/// The hints of a tool the host itself serves (a plugin of the same name
/// gets none).
fn hints_of(host: &Host, name: &str) -> Option<ToolHints> {
    let entry = host.registry().tool(name)?;
    match entry.plugin.name() {
        BUILTIN_PLUGIN => crate::builtins::builtin_hints(name),
        #[cfg(feature = "memory")]
        MEMORY_PLUGIN => crate::memory::memory_hints(name),
        _ => None,
    }
}

/// Why the tool `def` cannot run under the host's configuration, if it
/// cannot.
fn tool_unusable(host: &Host, def: &ToolDefinition) -> Option<&'static str> {
    let plugin = host.registry().tool(&def.name)?.plugin.name().to_owned();
    if plugin != BUILTIN_PLUGIN {
        return None;
    }
    let config = host.config();
    match def.name.as_str() {
        "run_command" if config.commands.allow.is_empty() => {
            Some("no command is allowed (`[commands] allow`)")
        }
        "http_request" if config.http.allow_hosts.is_empty() => {
            Some("no host is allowed (`[http] allow_hosts`)")
        }
        _ => None,
    }
}

/// Why the skill `def` cannot run for a client that does (or does not)
/// support sampling, if it cannot.
#[cfg(feature = "llm")]
fn skill_unusable(host: &Host, def: &SkillDefinition, sampling: bool) -> Option<String> {
    let entry = host.registry().skill(&def.name)?;
    if entry.plugin.name() != LLM_SKILLS_PLUGIN {
        return None;
    }
    let providers = host.providers();
    let config = def.llm_config.as_ref();
    let on_client = providers.is_none_or(|p| p.names().next().is_none())
        || config.is_some_and(|c| {
            c.provider_name == crate::CLIENT_PROVIDER
                && providers.is_none_or(|p| p.config(crate::CLIENT_PROVIDER).is_none())
        });
    if on_client {
        return (!sampling).then(|| {
            "it runs on the client's model and the client declared no `sampling`".to_owned()
        });
    }
    let providers = providers?;
    providers
        .resolve(config, None)
        .err()
        .map(|e| format!("its model provider is not there: {e}"))
}

#[cfg(not(feature = "llm"))]
fn skill_unusable(_host: &Host, _def: &SkillDefinition, _sampling: bool) -> Option<String> {
    None
}

fn annotations(hints: &ToolHints) -> ToolAnnotations {
    let mut a = ToolAnnotations::new();
    a.title = Some(hints.title.to_owned());
    a.read_only_hint = Some(hints.read_only);
    if !hints.read_only {
        a.destructive_hint = Some(hints.destructive);
    }
    a.open_world_hint = Some(hints.open_world);
    a
}

/// The description of a skill as a tool: its description, then (a
/// paragraph of its own) its `when_to_use`.
fn skill_description(def: &SkillDefinition) -> String {
    let mut text = def.description.trim().to_owned();
    let when = def.when_to_use.trim();
    if !when.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(when);
    }
    text
}

/// The output schema of a skill, when every successful result holds to it:
/// an LLM skill's answer is checked against its `output_schema`, and MCP's
/// `structuredContent` is an object.
fn skill_output_schema(host: &Host, def: &SkillDefinition) -> Option<Map<String, Value>> {
    #[cfg(feature = "llm")]
    {
        let checked = host
            .registry()
            .skill(&def.name)
            .is_some_and(|e| e.plugin.name() == LLM_SKILLS_PLUGIN);
        let object = def.output_schema.get("type") == Some(&Value::from("object"));
        (checked && object).then(|| def.output_schema.clone())
    }
    #[cfg(not(feature = "llm"))]
    {
        let _ = (host, def);
        None
    }
}

/// The tools and Published skills a client is offered, and what was left
/// out (with why).
struct Offered {
    tools: Vec<ToolDefinition>,
    skills: Vec<SkillDefinition>,
    left_out: Vec<(String, String)>,
    names: McpNames,
}

/// What is offered to a client that does (or does not) support `sampling`;
/// with `None`, everything, what cannot run too.
fn offered(host: &Host, sampling: Option<bool>) -> Offered {
    let all = ToolListRequest {
        query: String::new(),
        ..ToolListRequest::default()
    };
    let mut left_out = Vec::new();
    let mut tools = Vec::new();
    for def in host.list_tools(&all) {
        match sampling.and_then(|_| tool_unusable(host, &def)) {
            Some(why) => left_out.push((def.name.clone(), why.to_owned())),
            None => tools.push(def),
        }
    }
    let mut skills = Vec::new();
    for def in host.discover_skills(&a2e_proto::SkillDiscoverRequest::default()) {
        if def.status != a2e_proto::SkillStatus::PUBLISHED {
            continue;
        }
        match sampling.and_then(|sampling| skill_unusable(host, &def, sampling)) {
            Some(why) => left_out.push((format!("skill {}", def.name), why)),
            None => skills.push(def),
        }
    }
    let names = McpNames::build(
        tools.iter().map(|d| d.name.clone()),
        skills.iter().map(|d| d.name.clone()),
    );
    Offered {
        tools,
        skills,
        left_out,
        names,
    }
}

/// What one `tools/list` offers to a client that does (or does not) support
/// sampling, and the names it offers them under.
pub(super) async fn list(host: &Host, sampling: bool) -> (Vec<BackendTool>, McpNames) {
    host.registry().load_tools(false).await;
    let Offered {
        tools,
        skills,
        left_out,
        names,
    } = offered(host, Some(sampling));
    for (name, why) in &left_out {
        tracing::info!("`{name}` is not offered over MCP: {why}");
    }
    let mut out = Vec::with_capacity(tools.len() + skills.len());
    for mut def in tools {
        let schema = host
            .registry()
            .tool(&def.name)
            .map(|entry| entry.plugin.input_schema(&entry.def));
        let hints = hints_of(host, &def.name);
        if let Some(name) = names.name_of(&Target::Tool(def.name.clone())) {
            def.name = name.to_owned();
        }
        let mut tool = BackendTool::from(def);
        tool.input_schema = schema.and_then(|s| s.as_object().cloned());
        if let Some(hints) = hints {
            tool.title = Some(hints.title.to_owned());
            tool.annotations = Some(annotations(&hints));
            tool.output_schema = hints.output_schema;
        }
        out.push(tool);
    }
    for skill in skills {
        let Some(name) = names.name_of(&Target::Skill(skill.name.clone())) else {
            continue;
        };
        let mut def = ToolDefinition::new(name, &skill_description(&skill));
        def.tags = skill.tags.clone().unwrap_or_default();
        let mut tool = BackendTool::from(def);
        tool.input_schema = (!skill.input_schema.is_empty()).then(|| skill.input_schema.clone());
        tool.title = Some(skill.name.clone());
        tool.output_schema = skill_output_schema(host, &skill);
        out.push(tool);
    }
    (out, names)
}

/// The input schema of what the MCP name `name` means now (a tool's, from
/// its plugin; a skill's): `None` when it is unknown or its schema is
/// derived from its parameters.
pub(super) fn input_schema_of(host: &Host, name: &str) -> Option<Map<String, Value>> {
    match current_names(host).resolve(name) {
        Target::Tool(tool) => {
            let entry = host.registry().tool(&tool)?;
            entry.plugin.input_schema(&entry.def).as_object().cloned()
        }
        Target::Skill(skill) => {
            let def = host.registry().skill(&skill)?.def;
            (!def.input_schema.is_empty()).then(|| def.input_schema.clone())
        }
    }
}

/// The names of every tool and Published skill now, those that cannot run
/// too (what a call is resolved by when its name is not one the connection
/// was listed: a call of one that cannot run reaches the host, which says
/// why).
pub(super) fn current_names(host: &Host) -> McpNames {
    offered(host, None).names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_describes_when_to_use_it() {
        let mut def = SkillDefinition::new("find_todos", "Find TODO markers");
        def.when_to_use = "Use when the notes hold open items".into();
        assert_eq!(
            skill_description(&def),
            "Find TODO markers\n\nUse when the notes hold open items"
        );
        def.when_to_use.clear();
        assert_eq!(skill_description(&def), "Find TODO markers");
    }
}
