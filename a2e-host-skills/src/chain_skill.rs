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

use std::path::Path;

use a2e_proto::{ChainNode, EventKind, NodeKind, SkillDefinition};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::defaults::Defaults;
use super::front_matter::{SkillFile, parse_file};

use a2e_host_core::error::{HostError, HostResult, SkillError};
use a2e_host_core::plugin::{SkillCall, SkillOutput, SkillPlugin};

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
    /// Its default arguments.
    pub defaults: Defaults,
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
pub fn parse_skill(text: &str, path: &Path) -> Result<ChainSkill, SkillError> {
    from_file(&parse_file(text, path)?, path)
}

/// The chain skill of a parsed file.
pub fn from_file(file: &SkillFile, path: &Path) -> Result<ChainSkill, SkillError> {
    let (instructions, chain_text) =
        split_chain_block(&file.body).ok_or_else(|| SkillError::MissingBlock {
            path: path.to_owned(),
            block: "chain",
        })?;
    let chain: ChainBody =
        serde_json::from_str(&chain_text).map_err(|source| SkillError::ChainBlock {
            path: path.to_owned(),
            source,
        })?;
    let mut def = file.definition(&instructions, path)?;
    if def.tools.is_none() {
        let mut names: Vec<String> = chain
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::TOOL)
            .map(|n| n.name.clone())
            .collect();
        names.sort();
        names.dedup();
        def.tools = (!names.is_empty()).then(|| names.into_iter().map(Value::String).collect());
    }
    let defaults = Defaults::new(&def)?;
    Ok(ChainSkill {
        def,
        body: chain,
        defaults,
    })
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

impl SkillPlugin<HostError> for ChainSkills {
    fn name(&self) -> &str {
        "chain_skills"
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
        let host = a2e_host_core::host::Host::of(&call.ctx)?;
        let progress: a2e_host_core::chains::ProgressFn =
            Box::new(move |done, total, node: &str| {
                let _ = tx.send((done as u64, total as u64, node.to_owned()));
            });
        let run = async {
            // Called for a node of a journaled run: the chain's nodes are
            // journaled in that run, under the node (resumed, forked).
            #[cfg(feature = "journal")]
            let progress =
                match a2e_host_runs::nested::run_nested(&host, &call.ctx, &req, progress).await {
                    Ok(ran) => return ran,
                    Err(progress) => progress,
                };
            a2e_host_core::chains::run_chain(&host, &call.ctx, &req, progress).await
        };
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
    use a2e_proto::SkillStatus;

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
        let err = parse_skill("no front matter", Path::new("a.md"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a.md") && err.contains("front matter"),
            "{err}"
        );
        let err = parse_skill(
            "---\nname: x\ndescription: y\n---\nno block\n",
            Path::new("b.md"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("```chain"), "{err}");
        let err = parse_skill("---\nname: x\ndescriptoin: y\n---\n", Path::new("c.md"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("descriptoin"), "{err}");
    }

    #[tokio::test]
    async fn default_arguments_reach_the_chain() {
        let text = SKILL.replace(
            "tags: [text]\n",
            "tags: [text]\narguments: { path: notes.md }\n",
        );
        let skill = parse_skill(&text, Path::new("skills/wc.md")).unwrap();
        assert_eq!(skill.def.arguments, serde_json::json!({"path": "notes.md"}));
        let seen = skill.defaults.advertised(&skill.def);
        assert_eq!(seen.input_schema["required"], serde_json::json!([]));

        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("notes.md"), "three small words").unwrap();
        let config = a2e_host_core::HostConfig {
            root: root.path().to_path_buf(),
            ..a2e_host_core::HostConfig::default()
        };
        let host = a2e_host_core::Host::builder(config)
            .with_builtins()
            .with_skill_plugin(ChainSkills::new(vec![skill]))
            .build()
            .unwrap();
        let req = a2e_proto::SkillCallRequest {
            id: "d1".into(),
            name: "word_count".into(),
            ..Default::default()
        };
        let result = host
            .call_skill(req, a2e_host_core::CallOptions::new())
            .await
            .unwrap();
        assert!(result.success, "{result:?}");
        assert!(
            result.data.to_string().contains("three small words"),
            "{result:?}"
        );
    }
}
