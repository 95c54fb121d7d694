//! LLM skills end to end over `a2e serve --stdio`: scripted OpenAI-compatible and
//! Anthropic-compatible servers drive multi-turn skills with the host's real tools
//! (`read_file`, `grep`), with events, default arguments, refused tools, `max_turns`,
//! `output_schema` (repaired JSON and a mismatch), the allow-list, a 429 retried, and the
//! host's key kept out of every answer, log line and audit record.

use crate::llm_support;

use std::time::Duration;

use conformance::child::HostProcess;
use llm_support::*;
use serde_json::{Value, json};

const SUMMARISE: &str = r#"---
name: summarise
description: Summarise the notes and list the TODOs
tools: [read_file, grep]
llm_config: { provider: main, temperature: 0.1 }
input_schema:
  type: object
  properties: { folder: { type: string }, focus: { type: string } }
  required: [folder]
arguments: { folder: notes }
max_turns: 4
timeout_seconds: 60
tags: [notes]
---
You summarise the notes of a folder. Use grep to find the TODO lines.
"#;

const TODOS: &str = r#"---
name: todos
description: The TODOs as JSON
tools: [grep]
llm_config: main
output_schema:
  type: object
  required: [todos]
  properties: { todos: { type: array, items: { type: string } } }
max_turns: 3
---
List the TODO lines of the notes.
"#;

struct Session {
    host: HostProcess,
    lines: std::cell::RefCell<Vec<String>>,
}

impl Session {
    fn start(ws: &Workspace, providers: &str, log: &str) -> Self {
        let config = ws.config(providers);
        let mut s = Session {
            host: serve(&config, &ws.stderr_path(), log),
            lines: Default::default(),
        };
        let (hs, _) = s.request(json!({"type": "handshake/req", "id": "hs", "agent_id": "e2e"}));
        assert_eq!(hs["ok"], true, "{hs}");
        s
    }

    /// Sends a request; the answer and the events before it.
    fn request(&mut self, msg: Value) -> (Value, Vec<Value>) {
        let id = msg["id"].as_str().unwrap().to_owned();
        self.host.send(msg.to_string().as_bytes()).unwrap();
        self.host
            .answer(&id, Duration::from_secs(60), |l| {
                self.lines.borrow_mut().push(l.to_owned())
            })
            .unwrap()
    }

    fn call(&mut self, id: &str, skill: &str, args: Value, extra: Value) -> (Value, Vec<Value>) {
        let mut msg = json!({"type": "skill/call/req", "id": id, "name": skill,
            "arguments": args, "streaming": true});
        if let Value::Object(more) = extra {
            msg.as_object_mut().unwrap().extend(more);
        }
        self.request(msg)
    }
}

fn logs(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "log")
        .map(|e| e["data"]["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// The texts of a request's messages with `role` (OpenAI and Anthropic shapes).
fn texts(body: &Value, role: &str) -> Vec<String> {
    let mut out = Vec::new();
    if role == "system"
        && let Some(s) = body["system"].as_str()
    {
        out.push(s.to_owned());
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let r = m["role"].as_str().unwrap_or("");
        let content = &m["content"];
        let blocks: Vec<&Value> = match content {
            Value::Array(b) => b.iter().collect(),
            other => vec![other],
        };
        for b in blocks {
            let is_result = b["type"] == "tool_result";
            let wanted = r == role || (role == "tool" && is_result);
            if !wanted {
                continue;
            }
            if let Some(s) = b.as_str() {
                out.push(s.to_owned());
            } else if let Some(s) = b["text"].as_str() {
                out.push(s.to_owned());
            } else if let Some(s) = b["content"].as_str() {
                out.push(s.to_owned());
            } else if let Value::Array(parts) = &b["content"] {
                out.extend(
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str().map(str::to_owned)),
                );
            }
        }
    }
    out
}

#[test]
fn openai_skill_runs_tools_streams_events_and_applies_defaults() {
    let ws = Workspace::new();
    ws.skill("summarise", SUMMARISE);
    let answer = "Plan: ship the release. TODOs: write the changelog; try a smaller model.";
    let server = Server::start(vec![
        Turn::Tools(vec![
            (
                "c1".into(),
                "read_file".into(),
                json!({"path": "notes/plan.md"}).to_string(),
            ),
            (
                "c2".into(),
                "grep".into(),
                json!({"pattern": "TODO", "path": "notes"}).to_string(),
            ),
        ]),
        tool(
            "c3",
            "write_file",
            json!({"path": "notes/hacked.md", "content": "x"}),
        ),
        text(answer),
    ]);
    let mut s = Session::start(&ws, &provider("main", "openai", &server, ""), "warn");

    // Discovery: the defaulted argument is no longer required, and carries its default.
    let (found, _) =
        s.request(json!({"type": "skill/discover/req", "id": "d1", "filter_tags": ["notes"]}));
    let skill = &found["skills"][0];
    assert_eq!(skill["name"], "summarise");
    assert_eq!(skill["status"], "Published");
    assert_eq!(skill["input_schema"]["required"], json!([]));
    assert_eq!(
        skill["input_schema"]["properties"]["folder"]["default"],
        "notes"
    );

    let (resp, events) = s.call("s1", "summarise", json!({"focus": "todos"}), json!({}));
    assert_eq!(resp["type"], "skill/call/resp", "{resp}");
    let result = &resp["data"];
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["data"], answer);
    let summary = &result["summary"];
    assert_eq!(summary["provider"], "main");
    assert_eq!(summary["model"], "scripted-model");
    assert_eq!(summary["turns"], 3);
    assert_eq!(summary["tool_calls"], 3);
    assert_eq!(summary["usage"]["total_tokens"], 45);

    // Events: a progress per turn, tool calls and results as logs, usage as status,
    // the answer's text as artifact chunks.
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "progress").count(),
        3,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "status").count(),
        3,
        "{kinds:?}"
    );
    let logs = logs(&events);
    assert!(
        logs.iter().any(|l| l.starts_with("tool call read_file")),
        "{logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.starts_with("tool result read_file") && l.contains("Ship the release")),
        "{logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.starts_with("tool refused write_file")),
        "{logs:?}"
    );
    assert_eq!(artifact_text(&events), answer);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());

    // What the model saw: the listed tools only, the instructions, the arguments with
    // the default merged in, the real tool results, and the refusal.
    let got = server.received();
    assert_eq!(got.len(), 3);
    let first = &got[0];
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(first.headers["authorization"], format!("Bearer {FAKE_KEY}"));
    assert_eq!(first.body["stream"], true);
    assert_eq!(first.body["temperature"], 0.1);
    let mut offered = first.tool_names();
    offered.sort();
    assert_eq!(offered, ["grep", "read_file"]);
    assert!(texts(&first.body, "system")[0].starts_with("You summarise the notes"));
    let user = texts(&first.body, "user").join("\n");
    assert!(
        user.contains("\"folder\": \"notes\"") && user.contains("\"focus\": \"todos\""),
        "{user}"
    );
    let results = texts(&got[1].body, "tool").join("\n");
    assert!(results.contains("Ship the release."), "{results}");
    assert!(
        results.contains("write the changelog") && results.contains("try a smaller model"),
        "{results}"
    );
    let refusal = texts(&got[2].body, "tool").join("\n");
    assert!(
        refusal.contains("refused") && refusal.contains("write_file"),
        "{refusal}"
    );
    assert!(!ws.root().join("notes/hacked.md").exists());
}

#[test]
fn anthropic_skill_repairs_the_final_json_and_validates_it() {
    let ws = Workspace::new();
    ws.skill("todos", TODOS);
    let server = Server::start(vec![
        tool("t1", "grep", json!({"pattern": "TODO", "path": "notes"})),
        // Single quotes and trailing commas around prose: repair must fix it.
        text("Here they are:\n{'todos': ['write the changelog', 'try a smaller model',],}\nDone."),
        tool("t2", "grep", json!({"pattern": "TODO", "path": "notes"})),
        text(r#"{"todos": "none"}"#),
    ]);
    let mut s = Session::start(&ws, &provider("main", "anthropic", &server, ""), "warn");

    let (resp, events) = s.call("a1", "todos", json!({}), json!({}));
    let result = &resp["data"];
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(
        result["data"],
        json!({"todos": ["write the changelog", "try a smaller model"]})
    );
    assert_eq!(result["summary"]["usage"]["input_tokens"], 24);
    assert_eq!(result["summary"]["usage"]["output_tokens"], 12);
    assert!(artifact_text(&events).contains("Here they are:"));
    let got = server.received();
    assert_eq!(got[0].path, "/v1/messages");
    assert_eq!(got[0].headers["x-api-key"], FAKE_KEY);
    let system = texts(&got[0].body, "system").join("\n");
    assert!(
        system.contains("List the TODO lines") && system.contains("\"todos\""),
        "{system}"
    );
    let results = texts(&got[1].body, "tool").join("\n");
    assert!(results.contains("write the changelog"), "{results}");

    // An answer that parses but does not match: skill_error listing the violation.
    let (resp, _) = s.call("a2", "todos", json!({}), json!({}));
    let result = &resp["data"];
    assert_eq!(result["success"], false, "{result}");
    assert_eq!(result["error_code"], "skill_error");
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("output_schema") && error.contains("/todos"),
        "{error}"
    );
}

#[test]
fn max_turns_ends_the_loop_with_a_skill_error_naming_the_limit() {
    let ws = Workspace::new();
    ws.skill("todos", &TODOS.replace("max_turns: 3", "max_turns: 2"));
    let grep = || tool("g", "grep", json!({"pattern": "TODO", "path": "notes"}));
    let server = Server::start(vec![grep(), grep(), grep(), text("never reached")]);
    let mut s = Session::start(&ws, &provider("main", "openai", &server, ""), "warn");
    let (resp, events) = s.call("m1", "todos", json!({}), json!({}));
    let result = &resp["data"];
    assert_eq!(result["success"], false, "{result}");
    assert_eq!(result["error_code"], "skill_error");
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("max_turns") && error.contains("after 2 turns"),
        "{error}"
    );
    assert_eq!(server.received().len(), 2);
    assert_eq!(events.iter().filter(|e| e["kind"] == "progress").count(), 2);
}

#[test]
fn llm_override_is_held_to_the_allow_list() {
    let ws = Workspace::new();
    ws.skill("summarise", SUMMARISE);
    let closed = Server::start(vec![]);
    let open = Server::start(vec![text("from the bigger model")]);
    let providers = provider("main", "openai", &closed, "")
        + &provider(
            "open",
            "anthropic",
            &open,
            "agent_selectable = true\nmodels = [\"bigger\"]",
        );
    let mut s = Session::start(&ws, &providers, "warn");
    let refused = |s: &mut Session, id: &str, over: Value, field: &str| {
        let (resp, _) = s.call(id, "summarise", json!({}), json!({"llm_override": over}));
        assert_eq!(resp["type"], "error", "{resp}");
        assert_eq!(resp["code"], "unauthorized", "{resp}");
        let message = resp["message"].as_str().unwrap();
        assert!(message.contains(field), "{message}");
    };
    refused(
        &mut s,
        "o1",
        json!({"provider_name": "main", "provider_credentials": {}}),
        "llm_override.provider_name",
    );
    refused(
        &mut s,
        "o2",
        json!({"provider_name": "elsewhere", "provider_credentials": {}}),
        "llm_override.provider_name",
    );
    refused(
        &mut s,
        "o3",
        json!({"provider_name": "open", "provider_credentials": {}, "provider_config": {"model": "gpt-unlisted"}}),
        "llm_override.provider_config.model",
    );
    refused(
        &mut s,
        "o4",
        json!({"provider_name": "open", "provider_credentials": {"api_key": "agent-key"}}),
        "llm_override.provider_credentials",
    );
    assert!(closed.received().is_empty() && open.received().is_empty());

    let (resp, _) = s.call(
        "o5",
        "summarise",
        json!({}),
        json!({"llm_override": {"provider_name": "open", "provider_credentials": {}, "provider_config": {"model": "bigger"}}}),
    );
    assert_eq!(resp["data"]["success"], true, "{resp}");
    assert_eq!(resp["data"]["data"], "from the bigger model");
    assert_eq!(resp["data"]["summary"]["provider"], "open");
    let got = open.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body["model"], "bigger");
    assert!(closed.received().is_empty());
}

#[test]
fn the_host_key_never_leaves_the_request_headers() {
    let ws = Workspace::new();
    ws.skill("summarise", SUMMARISE);
    let echo = format!(r#"{{"error": {{"message": "invalid key {FAKE_KEY}"}}}}"#);
    let server = Server::start(vec![
        Turn::Status(429, r#"{"error": {"message": "slow down"}}"#.into()),
        tool("c1", "read_file", json!({"path": "notes/plan.md"})),
        text("done"),
        Turn::Status(401, echo),
    ]);
    let mut s = Session::start(&ws, &provider("main", "openai", &server, ""), "trace");
    // A 429 is retried; the skill then runs to its answer.
    let (ok, _) = s.call("k1", "summarise", json!({}), json!({}));
    assert_eq!(ok["data"]["success"], true, "{ok}");
    assert_eq!(ok["data"]["data"], "done");
    assert_eq!(server.received().len(), 3);
    // A provider error that quotes the key: the answer names the failure, not the key.
    let (failed, _) = s.call("k2", "summarise", json!({}), json!({}));
    assert_eq!(failed["data"]["success"], false, "{failed}");
    assert!(
        failed["data"]["error"].as_str().unwrap().contains("401"),
        "{failed}"
    );
    let (found, _) = s.request(json!({"type": "skill/discover/req", "id": "d"}));
    assert_eq!(found["skills"][0]["name"], "summarise");
    s.host.close_stdin();
    s.host.wait_exit(Duration::from_secs(10));

    let stdout = s.lines.borrow().join("\n");
    let stderr = std::fs::read_to_string(ws.stderr_path()).unwrap();
    let audit = std::fs::read_to_string(ws.audit_path()).unwrap();
    assert!(stdout.contains("skill/call/resp"));
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "trace logging is on"
    );
    assert!(audit.contains("summarise"), "{audit}");
    // The model's tool calls are audited too, under the skill's name.
    let tool_call = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["type"] == "skill/tool_call")
        .expect("an audited tool call");
    assert_eq!(tool_call["name"], "summarise/read_file");
    assert_eq!(tool_call["success"], true);
    assert_eq!(tool_call["agent"], "e2e");
    assert_eq!(tool_call["arguments"]["path"], "notes/plan.md");
    for (what, text) in [("stdout", &stdout), ("stderr", &stderr), ("audit", &audit)] {
        assert!(!text.contains(FAKE_KEY), "the key shows in {what}");
        assert!(
            !text.contains("host-key-5d2e"),
            "part of the key shows in {what}"
        );
    }
}

#[test]
fn a_skill_naming_an_unconfigured_provider_fails_clearly() {
    let ws = Workspace::new();
    ws.skill(
        "todos",
        &TODOS.replace("llm_config: main", "llm_config: nowhere"),
    );
    let server = Server::start(vec![]);
    let mut s = Session::start(&ws, &provider("main", "openai", &server, ""), "warn");
    let (resp, _) = s.call("u1", "todos", json!({}), json!({}));
    assert_eq!(resp["data"]["success"], false, "{resp}");
    let error = resp["data"]["error"].as_str().unwrap();
    assert!(
        error.contains("llm_config.provider_name") && error.contains("nowhere"),
        "{error}"
    );
}

#[test]
fn timeout_seconds_bounds_a_model_that_never_answers() {
    let ws = Workspace::new();
    ws.skill(
        "todos",
        &TODOS.replace("max_turns: 3", "max_turns: 3\ntimeout_seconds: 1"),
    );
    let server = Server::start(vec![Turn::Hang, text(r#"{"todos": []}"#)]);
    let mut s = Session::start(&ws, &provider("main", "openai", &server, ""), "warn");
    let (resp, _) = s.call("h1", "todos", json!({}), json!({}));
    assert_eq!(resp["data"]["success"], false, "{resp}");
    assert_eq!(resp["data"]["error_code"], "timeout", "{resp}");
    // The host is not stuck: the next call runs.
    let (resp, _) = s.call("h2", "todos", json!({}), json!({}));
    assert_eq!(resp["data"]["data"], json!({"todos": []}), "{resp}");
}
