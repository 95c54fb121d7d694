//! Chain skills: a Markdown file with YAML front matter describing the skill,
//! whose body holds an A2E chain run with the call's arguments as `initial_input`.
//!
//! ````markdown
//! ---
//! name: summarize_file
//! description: Read a file and count its words
//! triggers: ["summarize a file"]
//! tags: [fs, text]
//! input_schema:
//!   type: object
//!   properties: { path: { type: string } }
//!   required: [path]
//! ---
//! Instructions for the agent (the Markdown outside the chain block).
//!
//! ```chain
//! { "entry_node": "read",
//!   "nodes": [ { "node_id": "read", "kind": "tool", "name": "read_file",
//!                "input_map": { "path": "input.path" } } ] }
//! ```
//! ````
//!
//! The chain is the first fenced block whose info string is `chain` or
//! `json chain`. When the front matter lists no `tools`, the tools of the
//! chain's tool nodes are the skill's declared tools (so a missing one makes
//! the skill `Blocked`). The skill's output is the chain's `final_output`.

use std::path::{Path, PathBuf};

use a2e_proto::{ChainNode, EventKind, NodeKind, SkillDefinition, SkillStatus};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{HostError, HostResult};
use crate::plugin::{SkillCall, SkillOutput, SkillPlugin};

/// The chain a skill runs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChainBody {
    /// The nodes.
    pub nodes: Vec<ChainNode>,
    /// The first node.
    pub entry_node: String,
    /// Chain time limit in seconds (default: the skill's `timeout_seconds`, else 300).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// A loaded chain skill.
#[derive(Debug, Clone)]
pub struct ChainSkill {
    /// Its manifest.
    pub def: SkillDefinition,
    /// Its chain.
    pub body: ChainBody,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: String,
    #[serde(default = "default_version")]
    version: String,
    description: String,
    #[serde(default)]
    triggers: Vec<String>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
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
    #[serde(default)]
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
}

fn default_version() -> String {
    "1.0.0".into()
}

/// Splits `---\nYAML\n---\nbody`.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
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

/// Splits the body into instructions and the first `chain` fenced block.
fn split_chain_block(body: &str) -> Option<(String, String)> {
    let mut instructions = String::new();
    let mut chain = String::new();
    let mut in_block = false;
    let mut found = false;
    let mut fence = "";
    for line in body.split_inclusive('\n') {
        let trimmed = line.trim();
        if !found && !in_block {
            let info = trimmed
                .strip_prefix("```")
                .or_else(|| trimmed.strip_prefix("~~~"));
            if let Some(info) = info {
                let info = info.trim();
                if info == "chain" || info == "json chain" {
                    in_block = true;
                    fence = if trimmed.starts_with("```") {
                        "```"
                    } else {
                        "~~~"
                    };
                    continue;
                }
            }
            instructions.push_str(line);
        } else if in_block {
            if trimmed == fence {
                in_block = false;
                found = true;
            } else {
                chain.push_str(line);
            }
        } else {
            instructions.push_str(line);
        }
    }
    found.then(|| (instructions.trim().to_owned(), chain))
}

/// Parses a skill file's text; `path` is recorded as `file_path` and named in errors.
pub fn parse_skill(text: &str, path: &Path) -> Result<ChainSkill, String> {
    let where_ = path.display();
    let (yaml, body) = split_front_matter(text)
        .ok_or_else(|| format!("{where_}: missing `---` YAML front matter"))?;
    let front: FrontMatter =
        serde_norway::from_str(yaml).map_err(|e| format!("{where_}: front matter: {e}"))?;
    let (instructions, chain_text) = split_chain_block(body)
        .ok_or_else(|| format!("{where_}: no ```chain block in the body"))?;
    let chain: ChainBody =
        serde_json::from_str(&chain_text).map_err(|e| format!("{where_}: chain block: {e}"))?;
    let tools = front.tools.or_else(|| {
        let mut names: Vec<String> = chain
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::TOOL)
            .map(|n| n.name.clone())
            .collect();
        names.sort();
        names.dedup();
        (!names.is_empty()).then(|| names.into_iter().map(Value::String).collect())
    });
    let def = SkillDefinition {
        name: front.name,
        version: front.version,
        description: front.description,
        triggers: front.triggers,
        tools,
        toolkits: front.toolkits,
        status: front
            .status
            .map(SkillStatus::new)
            .unwrap_or(SkillStatus::PUBLISHED),
        input_schema: front.input_schema,
        output_schema: front.output_schema,
        instructions: (!instructions.is_empty()).then_some(instructions),
        file_path: Some(path.display().to_string()),
        llm_config: None,
        arguments: Value::Null,
        when_to_use: front.when_to_use,
        argument_hint: front.argument_hint,
        source: front.source.unwrap_or_else(|| "project".into()),
        category: front.category,
        tags: front.tags,
        max_turns: front.max_turns,
        timeout_seconds: front.timeout_seconds,
        icon: front.icon,
        metadata: front.metadata,
    };
    Ok(ChainSkill { def, body: chain })
}

/// Loads every `*.md` file under `dirs` (one level deep, and `*/SKILL.md` /
/// `*/skill.md` in subfolders). Missing directories are skipped.
pub fn load_dirs(dirs: &[PathBuf]) -> Result<Vec<ChainSkill>, String> {
    let mut files = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                for name in ["SKILL.md", "skill.md"] {
                    let candidate = path.join(name);
                    if candidate.is_file() {
                        files.push(candidate);
                        break;
                    }
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut skills = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        skills.push(parse_skill(&text, &file)?);
    }
    Ok(skills)
}

/// The plugin serving chain skills.
pub struct ChainSkills {
    skills: Vec<ChainSkill>,
}

impl ChainSkills {
    /// A plugin over loaded skills.
    pub fn new(skills: Vec<ChainSkill>) -> Self {
        Self { skills }
    }
}

impl SkillPlugin for ChainSkills {
    fn name(&self) -> &str {
        "chain_skills"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        self.skills.iter().map(|s| s.def.clone()).collect()
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
        let req = a2e_proto::ChainRequest {
            session_id: call.ctx.session_id.to_string(),
            nodes: found.body.nodes.clone(),
            entry_node: found.body.entry_node.clone(),
            initial_input: args,
            timeout: found
                .body
                .timeout
                .or(found.def.timeout_seconds)
                .unwrap_or(300),
            ..Default::default()
        };
        let ctx = call.ctx.clone();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, u64, String)>();
        let forward = async move {
            while let Some((done, total, node)) = rx.recv().await {
                let pct = (done * 100).checked_div(total).map_or(100, |p| p as i64);
                ctx.progress(pct, format!("{node} done ({done}/{total})"))
                    .await;
            }
        };
        let run = crate::chains::run_chain(
            &call.host,
            &call.ctx.session_id,
            &req,
            Box::new(move |done, total, node: &str| {
                let _ = tx.send((done as u64, total as u64, node.to_owned()));
            }),
            &call.ctx.cancel,
        );
        let (resp, ()) = tokio::join!(run, forward);
        let resp = resp?;
        if resp.success {
            Ok(SkillOutput::from(resp.final_output))
        } else {
            let message = resp
                .error
                .as_ref()
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("the skill's chain failed")
                .to_owned();
            call.ctx
                .emit(
                    EventKind::STATUS,
                    a2e_proto::EventData::status(message.clone()),
                )
                .await;
            Err(HostError::Skill(message))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKILL: &str = "---\nname: word_count\ndescription: Count words\ntags: [text]\ninput_schema:\n  type: object\n  required: [path]\n---\nRead a file, count its words.\n\n```chain\n{\"entry_node\":\"read\",\"nodes\":[{\"node_id\":\"read\",\"kind\":\"tool\",\"name\":\"read_file\",\"input_map\":{\"path\":\"input.path\"}}]}\n```\n";

    #[test]
    fn parses_front_matter_instructions_and_chain() {
        let s = parse_skill(SKILL, Path::new("skills/wc.md")).unwrap();
        assert_eq!(s.def.name, "word_count");
        assert_eq!(s.def.status, SkillStatus::PUBLISHED);
        assert_eq!(
            s.def.instructions.as_deref(),
            Some("Read a file, count its words.")
        );
        assert_eq!(s.def.tool_names(), vec!["read_file"]);
        assert_eq!(s.body.entry_node, "read");
        assert_eq!(s.def.input_schema["required"], serde_json::json!(["path"]));
    }

    #[test]
    fn errors_name_the_file_and_the_problem() {
        let err = parse_skill("no front matter", Path::new("a.md")).unwrap_err();
        assert!(
            err.contains("a.md") && err.contains("front matter"),
            "{err}"
        );
        let err = parse_skill(
            "---\nname: x\ndescription: y\n---\nno block\n",
            Path::new("b.md"),
        )
        .unwrap_err();
        assert!(err.contains("```chain"), "{err}");
        let err =
            parse_skill("---\nname: x\ndescriptoin: y\n---\n", Path::new("c.md")).unwrap_err();
        assert!(err.contains("descriptoin"), "{err}");
    }
}
