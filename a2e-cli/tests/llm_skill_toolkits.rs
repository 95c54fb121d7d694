//! `toolkits` on an embedded host: a skill naming a toolkit is offered that toolkit's
//! tools (and its listed tools), nothing else; the model's call of another tool is
//! answered as refused, and a toolkit tool runs through the host.

use crate::llm_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use a2e_host::plugin::{CallContext, ToolOutput, ToolPlugin};
use a2e_host::{Host, HostConfig, HostError, HostResult};
use a2e_proto::{SkillCallRequest, ToolDefinition, ToolParameter};
use llm_support::*;
use serde_json::{Map, Value, json};

/// Two tools in toolkit `notes`, one in toolkit `admin`.
struct Kits {
    counted: Arc<AtomicUsize>,
}

impl ToolPlugin<HostError> for Kits {
    fn name(&self) -> &str {
        "kits"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        let mut count = ToolDefinition::new("note_count", "Counts the notes")
            .param(ToolParameter::new("folder", "string", "Where").required());
        count.toolkit = Some("Notes".into());
        let mut tag = ToolDefinition::new("note_tag", "Tags a note");
        tag.toolkit = Some("notes".into());
        let mut wipe = ToolDefinition::new("wipe_all", "Deletes everything");
        wipe.toolkit = Some("admin".into());
        vec![count, tag, wipe]
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        _ctx: CallContext,
    ) -> HostResult<ToolOutput> {
        self.counted.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"tool": tool, "folder": args.get("folder"), "notes": 2}).into())
    }
}

const SKILL: &str = r#"---
name: count_notes
description: Counts the notes
tools: [read_file]
toolkits: [notes]
max_turns: 4
---
Count the notes.
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolkits_offer_their_tools_and_nothing_else() {
    let ws = Workspace::new();
    ws.skill("count_notes", SKILL);
    let server = Server::start(vec![
        tool("k1", "note_count", json!({"folder": "notes"})),
        tool("k2", "wipe_all", json!({})),
        // Arguments that break the tool's schema are answered with the violation.
        tool("k3", "note_count", json!({"folder": 7})),
        text("There are 2 notes."),
    ]);
    let config_path = ws.config(&provider("main", "openai", &server, ""));
    let config = HostConfig::load(&config_path).unwrap();
    let counted = Arc::new(AtomicUsize::new(0));
    let host = a2e_host::skills::builder_with_skills(
        Host::builder(config)
            .with_builtins()
            .with_tool_plugin(Kits {
                counted: counted.clone(),
            }),
    )
    .build()
    .unwrap();
    let req = SkillCallRequest {
        id: "t1".into(),
        name: "count_notes".into(),
        ..SkillCallRequest::default()
    };
    let result = host
        .call_skill(req.clone(), a2e_host::CallOptions::new())
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    assert_eq!(result.data, json!("There are 2 notes."));
    assert_eq!(result.summary["tool_calls"], 3);
    // The one valid call ran; the refused one and the bad one did not.
    assert_eq!(counted.load(Ordering::SeqCst), 1);

    let got = server.received();
    let mut offered = got[0].tool_names();
    offered.sort();
    assert_eq!(offered, ["note_count", "note_tag", "read_file"]);
    let last = got.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let tool_texts: Vec<String> = last
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(tool_texts.len(), 3, "{tool_texts:?}");
    assert!(tool_texts[0].contains("\"notes\":2"), "{tool_texts:?}");
    assert!(tool_texts[1].contains("refused") && tool_texts[1].contains("wipe_all"));
    assert!(tool_texts[2].contains("folder"), "{tool_texts:?}");
    // The collected events say the same.
    let refused = result
        .events
        .iter()
        .filter(|e| {
            e.data
                .get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with("tool refused wipe_all"))
        })
        .count();
    assert_eq!(refused, 1);
}
