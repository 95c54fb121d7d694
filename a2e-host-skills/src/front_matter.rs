//! Skill files: Markdown with YAML front matter, in the shape of the widely used
//! `SKILL.md` agent-skill convention plus the A2E skill spec's fields.
//!
//! ```markdown
//! ---
//! name: summarise_notes
//! description: Summarise the notes and list the TODOs
//! version: 1.0.0
//! tools: [read_file, grep]
//! toolkits: [memory]
//! llm_config: { provider: local, model: qwen2.5:7b, temperature: 0.2 }
//! arguments: { folder: notes }
//! max_turns: 6
//! timeout_seconds: 120
//! ---
//! The instructions (the system prompt of an LLM skill).
//! ```
//!
//! The body decides the kind ([`SkillFileKind`]): a ```` ```chain ```` block makes a chain
//! skill, `command:` in the front matter a program skill (not served yet), anything else
//! an LLM skill whose instructions are the body.

use std::path::Path;

use a2e_host_core::error::{FieldError, SkillError};
use a2e_proto::{LLMConfig, SkillDefinition, SkillStatus};
use serde::Deserialize;
use serde_json::{Map, Value};

/// Most bytes of a skill file.
pub const MAX_SKILL_FILE_BYTES: usize = 1024 * 1024;

/// What a skill file runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillFileKind {
    /// A ```` ```chain ```` block in the body: an A2E chain.
    Chain,
    /// No chain block and no `command`: the agentic loop with the body as instructions.
    Llm,
    /// `command:` in the front matter: a program run in a sandbox.
    Program,
    /// A ```` ```ontheia ```` block in the body: an Ontheia chain.
    Ontheia,
}

impl SkillFileKind {
    /// `chain`, `llm`, `program` or `ontheia`.
    pub fn as_str(self) -> &'static str {
        match self {
            SkillFileKind::Chain => "chain",
            SkillFileKind::Llm => "llm",
            SkillFileKind::Program => "program",
            SkillFileKind::Ontheia => "ontheia",
        }
    }

    /// The feature of `a2e-host` that runs this kind (`chain` needs none).
    pub fn feature(self) -> &'static str {
        match self {
            SkillFileKind::Chain => "",
            SkillFileKind::Llm => "llm",
            SkillFileKind::Program => "sandbox",
            SkillFileKind::Ontheia => "ontheia",
        }
    }
}

/// The front matter of a skill file, every kind's fields.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontMatter {
    name: String,
    #[serde(default = "default_version")]
    version: String,
    description: String,
    #[serde(default)]
    triggers: Vec<String>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    /// The `SKILL.md` convention's spelling of `tools` (a list, or one space-separated string).
    #[serde(default, rename = "allowed-tools", alias = "allowed_tools")]
    allowed_tools: Option<Value>,
    #[serde(default)]
    toolkits: Option<Vec<Value>>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    input_schema: Map<String, Value>,
    #[serde(default)]
    output_schema: Map<String, Value>,
    #[serde(default)]
    when_to_use: String,
    #[serde(default, alias = "argument-hint")]
    argument_hint: String,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    tags: Option<Vec<String>>,
    #[serde(default)]
    max_turns: Option<u32>,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    #[serde(default)]
    icon: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    license: Option<String>,
    #[serde(default)]
    llm_config: Option<Value>,
    #[serde(default)]
    arguments: Option<Value>,
    /// A program skill's command: a list (program and arguments) or one string.
    #[serde(default)]
    pub command: Option<Value>,
    /// A program skill's address-space limit in MiB (default 1024).
    #[serde(default)]
    pub memory_limit_mb: Option<u64>,
    /// A program skill's CPU-time limit in seconds (default 60).
    #[serde(default)]
    pub cpu_seconds: Option<u64>,
}

fn default_version() -> String {
    "1.0.0".into()
}

/// A parsed skill file: its front matter and its Markdown body.
#[derive(Debug)]
pub struct SkillFile {
    /// The front matter.
    pub front: FrontMatter,
    /// The Markdown after the front matter.
    pub body: String,
}

/// Splits `---\nYAML\n---\nbody`.
pub fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---")?;
    let rest = rest
        .strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let yaml = rest.get(..offset)?;
            let body = rest.get(offset + line.len()..)?;
            return Some((yaml, body));
        }
        offset += line.len();
    }
    None
}

/// Whether the body holds a chain block (a fence whose info string is `chain` or
/// `json chain`).
pub fn has_chain_block(body: &str) -> bool {
    body.lines().any(|line| {
        let t = line.trim();
        let info = t.strip_prefix("```").or_else(|| t.strip_prefix("~~~"));
        info.is_some_and(|i| matches!(i.trim(), "chain" | "json chain"))
    })
}

/// The instructions around a fenced block whose info string is `info`, and the
/// block's text; `None` when there is no such block.
pub fn fenced_block(body: &str, info: &str) -> Option<(String, String)> {
    let mut outside = String::new();
    let mut inside = String::new();
    let mut fence: Option<&str> = None;
    let mut found = false;
    for line in body.split_inclusive('\n') {
        let t = line.trim();
        match fence {
            None if !found => {
                let opened = ["```", "~~~"]
                    .into_iter()
                    .find(|f| t.strip_prefix(f).is_some_and(|i| i.trim() == info));
                match opened {
                    Some(f) => fence = Some(f),
                    None => outside.push_str(line),
                }
            }
            None => outside.push_str(line),
            Some(f) if t == f => {
                fence = None;
                found = true;
            }
            Some(_) => inside.push_str(line),
        }
    }
    found.then(|| (outside.trim().to_owned(), inside))
}

/// Parses a skill file's text; `path` is named in errors.
pub fn parse_file(text: &str, path: &Path) -> Result<SkillFile, SkillError> {
    if text.len() > MAX_SKILL_FILE_BYTES {
        return Err(SkillError::TooLarge {
            path: path.to_owned(),
            size: text.len(),
            limit: MAX_SKILL_FILE_BYTES,
        });
    }
    let (yaml, body) = split_front_matter(text).ok_or_else(|| SkillError::MissingFrontMatter {
        path: path.to_owned(),
    })?;
    let front: FrontMatter =
        serde_norway::from_str(yaml).map_err(|source| SkillError::FrontMatter {
            path: path.to_owned(),
            source,
        })?;
    if front.name.trim().is_empty() {
        return Err(field(path, "name", FieldError::Empty));
    }
    Ok(SkillFile {
        front,
        body: body.to_owned(),
    })
}

impl SkillFile {
    /// The kind the file declares.
    pub fn kind(&self) -> SkillFileKind {
        if self.front.command.is_some() {
            SkillFileKind::Program
        } else if fenced_block(&self.body, "ontheia").is_some() {
            SkillFileKind::Ontheia
        } else if has_chain_block(&self.body) {
            SkillFileKind::Chain
        } else {
            SkillFileKind::Llm
        }
    }

    /// The skill definition: front matter fields, `instructions`, `file_path`, the parsed
    /// `llm_config` and default `arguments`. `path` is named in errors.
    pub fn definition(
        &self,
        instructions: &str,
        path: &Path,
    ) -> Result<SkillDefinition, SkillError> {
        let f = &self.front;
        let llm_config = f
            .llm_config
            .as_ref()
            .map(parse_llm_config)
            .transpose()
            .map_err(|e| field(path, "llm_config", e))?;
        let arguments = match &f.arguments {
            None => Map::new(),
            Some(v) => parse_arguments(v).map_err(|e| field(path, "arguments", e))?,
        };
        let tools = match (&f.tools, &f.allowed_tools) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(Value::String(s))) => Some(
                s.split([' ', ','])
                    .filter(|t| !t.is_empty())
                    .map(|t| Value::String(t.to_owned()))
                    .collect(),
            ),
            (None, Some(Value::Array(a))) => Some(a.clone()),
            (None, Some(other)) => {
                let got = a2e_proto::json_kind(other);
                let expected = "a list or a string";
                return Err(field(
                    path,
                    "allowed-tools",
                    FieldError::Kind { expected, got },
                ));
            }
            (None, None) => None,
        };
        let mut metadata = f.metadata.clone();
        if let Some(license) = &f.license {
            metadata
                .get_or_insert_with(Map::new)
                .entry("license")
                .or_insert_with(|| Value::String(license.clone()));
        }
        let instructions = instructions.trim();
        Ok(SkillDefinition {
            name: f.name.clone(),
            version: f.version.clone(),
            description: f.description.clone(),
            triggers: f.triggers.clone(),
            tools,
            toolkits: f.toolkits.clone(),
            status: f
                .status
                .clone()
                .map(SkillStatus::new)
                .unwrap_or(SkillStatus::PUBLISHED),
            input_schema: f.input_schema.clone(),
            output_schema: f.output_schema.clone(),
            instructions: (!instructions.is_empty()).then(|| instructions.to_owned()),
            file_path: Some(path.display().to_string()),
            llm_config,
            arguments: if arguments.is_empty() {
                Value::Null
            } else {
                Value::Object(arguments)
            },
            when_to_use: f.when_to_use.clone(),
            argument_hint: f.argument_hint.clone(),
            source: f.source.clone().unwrap_or_else(|| "project".into()),
            category: f.category.clone(),
            tags: f.tags.clone(),
            max_turns: f.max_turns,
            timeout_seconds: f.timeout_seconds,
            icon: f.icon.clone(),
            metadata,
        })
    }
}

/// `llm_config` in a skill file: a provider name (`local`), a short form
/// (`{provider: local, model: m, temperature: 0.2}`, every key but `provider` /
/// `provider_name` being a provider setting), or the spec's `LLMConfig`
/// (`provider_name`, `provider_credentials`, `provider_config`).
pub fn parse_llm_config(value: &Value) -> Result<LLMConfig, FieldError> {
    match value {
        Value::String(name) if !name.trim().is_empty() => Ok(LLMConfig {
            provider_name: name.trim().to_owned(),
            provider_credentials: Map::new(),
            provider_config: None,
            is_default: false,
        }),
        Value::Object(map)
            if map.contains_key("provider_config") || map.contains_key("provider_credentials") =>
        {
            Ok(serde_json::from_value(value.clone())?)
        }
        Value::Object(map) => {
            let mut settings = map.clone();
            let name = settings
                .remove("provider")
                .or_else(|| settings.remove("provider_name"))
                .ok_or(FieldError::Missing("provider"))?;
            let name = name
                .as_str()
                .filter(|n| !n.trim().is_empty())
                .ok_or(FieldError::Missing("provider"))?;
            let is_default = settings
                .remove("is_default")
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            Ok(LLMConfig {
                provider_name: name.trim().to_owned(),
                provider_credentials: Map::new(),
                provider_config: (!settings.is_empty()).then_some(settings),
                is_default,
            })
        }
        other => Err(FieldError::Kind {
            expected: "a provider name or a mapping",
            got: a2e_proto::json_kind(other),
        }),
    }
}

/// Default `arguments`: a mapping, or (the spec's `list[str]`) a list of `name=value`
/// strings whose value is read as JSON when it parses, else as text.
pub fn parse_arguments(value: &Value) -> Result<Map<String, Value>, FieldError> {
    match value {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map.clone()),
        Value::Array(items) => {
            let mut out = Map::new();
            for (i, item) in items.iter().enumerate() {
                let item_error = |reason: String| FieldError::Item { index: i, reason };
                let text = item
                    .as_str()
                    .ok_or_else(|| item_error("expected a `name=value` string".into()))?;
                let (name, raw) = text
                    .split_once('=')
                    .ok_or_else(|| item_error(format!("{text:?} is not `name=value`")))?;
                let name = name.trim();
                if name.is_empty() {
                    return Err(item_error("the name is empty".into()));
                }
                let raw = raw.trim();
                let value =
                    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
                out.insert(name.to_owned(), value);
            }
            Ok(out)
        }
        other => Err(FieldError::Kind {
            expected: "a mapping of defaults",
            got: a2e_proto::json_kind(other),
        }),
    }
}

/// A field's error, naming the file.
pub(crate) fn field(path: &Path, field: &'static str, reason: FieldError) -> SkillError {
    SkillError::Field {
        path: path.to_owned(),
        field,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_follow_the_body_and_the_command() {
        let p = Path::new("s.md");
        let llm = parse_file("---\nname: a\ndescription: b\n---\nDo it.\n", p).unwrap();
        assert_eq!(llm.kind(), SkillFileKind::Llm);
        let chain =
            parse_file("---\nname: a\ndescription: b\n---\n```chain\n{}\n```\n", p).unwrap();
        assert_eq!(chain.kind(), SkillFileKind::Chain);
        let prog = parse_file(
            "---\nname: a\ndescription: b\ncommand: [python3, x.py]\n---\n",
            p,
        )
        .unwrap();
        assert_eq!(prog.kind(), SkillFileKind::Program);
    }

    #[test]
    fn llm_config_forms() {
        let c = parse_llm_config(&json!("local")).unwrap();
        assert_eq!(
            (c.provider_name.as_str(), c.provider_config),
            ("local", None)
        );
        let c =
            parse_llm_config(&json!({"provider": "x", "model": "m", "temperature": 0.2})).unwrap();
        assert_eq!(c.provider_name, "x");
        assert_eq!(
            Value::Object(c.provider_config.unwrap()),
            json!({"model": "m", "temperature": 0.2})
        );
        let c = parse_llm_config(&json!({"provider_name": "y", "provider_credentials": {},
            "provider_config": {"model": "n"}}))
        .unwrap();
        assert_eq!(c.provider_name, "y");
        assert!(
            parse_llm_config(&json!({"model": "m"}))
                .unwrap_err()
                .to_string()
                .contains("provider")
        );
        assert!(parse_llm_config(&json!(3)).is_err());
    }

    #[test]
    fn default_arguments_forms() {
        assert_eq!(
            Value::Object(parse_arguments(&json!(["folder=notes", "limit=3"])).unwrap()),
            json!({"folder": "notes", "limit": 3})
        );
        assert_eq!(
            Value::Object(parse_arguments(&json!({"a": true})).unwrap()),
            json!({"a": true})
        );
        assert!(
            parse_arguments(&json!(["novalue"]))
                .unwrap_err()
                .to_string()
                .contains("name=value")
        );
        assert!(parse_arguments(&json!(1)).is_err());
    }

    #[test]
    fn skill_md_fields_are_read() {
        let text = "---\nname: s\ndescription: d\nallowed-tools: read_file grep\nlicense: MIT\nargument-hint: a path\n---\nBody\n";
        let file = parse_file(text, Path::new("s/SKILL.md")).unwrap();
        let def = file
            .definition(&file.body, Path::new("s/SKILL.md"))
            .unwrap();
        assert_eq!(def.tool_names(), vec!["read_file", "grep"]);
        assert_eq!(def.argument_hint, "a path");
        assert_eq!(def.metadata.unwrap()["license"], "MIT");
        assert_eq!(def.instructions.as_deref(), Some("Body"));
    }
}
