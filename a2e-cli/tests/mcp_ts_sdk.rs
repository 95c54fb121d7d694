//! The official MCP TypeScript SDK (npm `@modelcontextprotocol/sdk`, the
//! client that Claude Desktop, Claude Code, Cursor, VS Code and the MCP
//! Inspector are built on) driving `a2e serve --mcp-stdio`: it lists the
//! tools (compiling their schemas), calls every built-in tool, reads an image
//! as an image, and sends bad input — each a JSON-RPC error naming what is
//! wrong, after which the session goes on.

use crate::mcp_conformance_support;

use std::path::Path;
use std::process::Command;

use base64::Engine;
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[test]
fn the_typescript_sdk_lists_and_calls_every_built_in_tool_over_stdio() {
    let test = "the_typescript_sdk_lists_and_calls_every_built_in_tool_over_stdio";
    let Some((node, _)) = mcp_conformance_support::suite(test) else {
        return;
    };
    let sdk = mcp_conformance_support::tools_dir()
        .join("mcp-conformance/node_modules/@modelcontextprotocol/sdk");
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("notes")).unwrap();
    std::fs::create_dir_all(r.join("skills")).unwrap();
    std::fs::write(r.join("notes/a.md"), "# Notes\nTODO: ship it\n").unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(PNG)
        .unwrap();
    std::fs::write(r.join("pixel.png"), png).unwrap();
    std::fs::write(
        r.join("skills/needs_topic.md"),
        "---\nname: needs_topic\nversion: 1.0.0\ndescription: Write about a topic\n\
         input_schema:\n  type: object\n  required: [topic]\n  properties:\n    topic: { type: string }\n\
         ---\nWrite three sentences about {{topic}}.\n",
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/ts_sdk_check.mjs");
    let out = Command::new(node)
        .arg(script)
        .arg(&sdk)
        .arg(env!("CARGO_BIN_EXE_a2e"))
        .arg(r)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["server"], "a2e");

    let builtins = [
        "glob",
        "grep",
        "http_request",
        "list_dir",
        "memory_delete",
        "memory_search",
        "memory_write",
        "read_file",
        "run_command",
        "split_text",
        "text_stats",
        "transform",
        "write_file",
    ];
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in builtins {
        assert!(tools.contains(&name), "{name} is not listed: {tools:?}");
        let call = &seen["calls"][name];
        assert_eq!(call["is_error"], false, "{name}: {call}");
    }
    // An LLM skill with no model provider configured cannot run, so it is
    // not listed as a tool (docs/protocol-decisions.md); its prompt still is.
    assert!(!tools.contains(&"skill__needs_topic"), "{tools:?}");
    assert!(tools.iter().all(|t| !t.contains('.')), "{tools:?}");
    let text = |name: &str| seen["calls"][name]["text"].as_str().unwrap().to_owned();
    assert!(text("read_file").contains("TODO: ship it"));
    assert!(text("run_command").contains("hello"));
    assert!(text("http_request").contains("pong"));
    assert!(text("transform").contains(r#""result":6"#));
    assert!(text("memory_search").contains("remember this"));
    assert!(text("memory_delete").contains(r#""deleted":true"#));
    assert_eq!(
        std::fs::read_to_string(r.join("out/new.txt")).unwrap(),
        "written over MCP"
    );
    assert_eq!(
        seen["calls"]["read_image"]["types"],
        serde_json::json!(["text", "image"]),
        "{}",
        seen["calls"]["read_image"]
    );

    let bad = &seen["bad"];
    let error = |case: &str, code: i64, names: &str| {
        let got = &bad[case];
        assert_eq!(got["code"], code, "{case}: {got}");
        let message = got["message"].as_str().unwrap();
        assert!(message.contains(names), "{case}: {message}");
    };
    error("unknown_method", -32601, "no/such_method");
    error("wrong_params", -32602, "missing field `name`");
    error("escaping_uri", -32602, "params.uri");
    error("missing_prompt_argument", -32602, "params.arguments.topic");
    let huge = bad["huge_argument"]["thrown"].as_str().unwrap();
    assert!(
        huge.contains("-32602") && huge.contains("params.arguments.text"),
        "{huge}"
    );
    // The session went on.
    assert_eq!(seen["after"]["is_error"], false, "{}", seen["after"]);
}

/// The TypeScript SDK's v2 client (npm `@modelcontextprotocol/client`, its
/// stable line since MCP 2026-07-28) at both revisions against `a2e serve
/// --mcp-http`: a 2025-11-25 session and a stateless 2026-07-28 client each
/// list, call a tool, and call a skill without its required argument — the
/// host asks the user, then the skill asks the client's model: in the session
/// as requests, at 2026-07-28 as `input_required` rounds the SDK answers
/// through the same handlers. At 2026-07-28 the tasks extension's official
/// client (npm `@modelcontextprotocol/ext-tasks`) also runs a chain skill as
/// a task, whose missing argument the host asks for inside the task.
#[test]
fn the_typescript_v2_client_works_at_both_revisions() {
    let test = "the_typescript_v2_client_works_at_both_revisions";
    let Some((node, _)) = mcp_conformance_support::suite(test) else {
        return;
    };
    let client = mcp_conformance_support::tools_dir()
        .join("mcp-ts-client/node_modules/@modelcontextprotocol/client");
    if !client.join("dist/index.mjs").exists() {
        let why = format!(
            "{test} needs the TypeScript v2 client ({} is missing; run .ci/install-mcp-conformance.sh)",
            client.display()
        );
        assert!(std::env::var_os("CI").is_none(), "{why}");
        crate::skip::skipped(&why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("skills")).unwrap();
    std::fs::write(root.join("notes.md"), "# Notes about the sea\n").unwrap();
    std::fs::write(
        root.join("skills/write_about.md"),
        "---\nname: write_about\nversion: 1.0.0\ndescription: Write about a topic\n\
         input_schema:\n  type: object\n  required: [topic]\n  properties:\n    \
         topic: { type: string, description: What to write about }\n---\nWrite about the topic.\n",
    )
    .unwrap();
    let note = crate::mcp_tasks_support::WRITE_NOTE;
    std::fs::write(root.join("skills/write_note.md"), note).unwrap();
    let config = dir.path().join("a2e.toml");
    std::fs::write(
        &config,
        format!(
            "root = {:?}\nskill_dirs = [\"skills\"]\n\n[memory]\nenabled = false\n",
            root.display().to_string()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--mcp-http", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env_remove("A2E_LLM_BASE_URL")
        .env_remove("A2E_LLM_MODEL");
    let server = mcp_conformance_support::start(cmd);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/ts_client_v2.mjs");
    for revision in ["2025-11-25", "2026-07-28"] {
        let out = Command::new(&node)
            .arg(&script)
            .arg(&client)
            .arg(&server.url)
            .arg(revision)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{revision}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(seen["version"], revision, "{seen}");
        assert_eq!(seen["read"]["isError"], false, "{seen}");
        assert!(
            seen["read"]["text"]
                .as_str()
                .unwrap()
                .contains("Notes about the sea"),
            "{seen}"
        );
        assert_eq!(seen["skill"]["name"], "skill__write_about", "{seen}");
        assert_eq!(seen["skill"]["isError"], false, "{seen}");
        assert_eq!(
            seen["skill"]["text"], "The tides rise twice a day.",
            "{seen}"
        );
        let forms = seen["forms"].as_array().unwrap();
        assert_eq!(forms.len(), 1, "{seen}");
        assert!(forms[0].as_str().unwrap().contains("topic"), "{seen}");
        let prompts = seen["prompts"].as_array().unwrap();
        assert_eq!(prompts.len(), 1, "{seen}");
        assert!(
            prompts[0].as_str().unwrap().contains("tides"),
            "the user's answer reached the skill: {seen}"
        );
        if revision == "2026-07-28" {
            let task = &seen["task"];
            assert_eq!(task["status"], "completed", "{seen}");
            assert!(
                task["taskId"].as_str().is_some_and(|t| !t.is_empty()),
                "{seen}"
            );
            assert_eq!(
                task["asked"],
                json!([{"kind": "elicitation", "scope": "task", "delivery": "task-update"}]),
                "the question came inside the task: {seen}"
            );
            assert!(
                task["text"].as_str().unwrap().contains("bytes_written"),
                "{seen}"
            );
            let note = std::fs::read_to_string(root.join("note.md")).unwrap();
            assert_eq!(note, "tides", "the answer reached the task's chain");
        }
    }
}
