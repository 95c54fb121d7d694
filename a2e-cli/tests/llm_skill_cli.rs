//! `a2e skill NAME --input JSON [--events]` and `a2e skills` over the real binary:
//! the result on stdout, events as JSON lines on stderr, exit 0 / 1 / 2.

use crate::llm_support;

use std::process::{Command, Output};

use llm_support::*;
use serde_json::{Value, json};

const SKILL: &str = r#"---
name: summarise
description: Summarise the notes
tools: [read_file, grep]
input_schema:
  type: object
  properties: { folder: { type: string } }
  required: [folder]
arguments: ["folder=notes"]
max_turns: 2
---
Summarise the notes.
"#;

fn a2e(ws: &Workspace, providers: &str, args: &[&str]) -> Output {
    let config = ws.config(providers);
    Command::new(env!("CARGO_BIN_EXE_a2e"))
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap()
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn a_skill_runs_from_the_command_line_with_events_on_stderr() {
    let ws = Workspace::new();
    ws.skill("summarise", SKILL);
    let server = Server::start(vec![
        tool("c1", "grep", json!({"pattern": "TODO", "path": "notes"})),
        text("Two TODOs."),
    ]);
    let providers = provider("main", "openai", &server, "");
    let out = a2e(
        &ws,
        &providers,
        &["skill", "summarise", "--input", "{}", "--events"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let resp = stdout_json(&out);
    assert_eq!(resp["type"], "skill/call/resp");
    assert_eq!(resp["name"], "summarise");
    assert_eq!(resp["data"]["success"], true);
    assert_eq!(resp["data"]["data"], "Two TODOs.");
    assert_eq!(resp["data"]["summary"]["turns"], 2);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let events: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &Value| v["type"] == "skill/event")
        .collect();
    assert!(events.iter().any(|e| e["kind"] == "progress"), "{stderr}");
    assert!(
        events.iter().any(|e| e["data"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("tool result grep"))),
        "{stderr}"
    );
    assert_eq!(artifact_text(&events), "Two TODOs.");
    // The default argument reached the model.
    let user = server.received()[0].body["messages"][1]["content"].clone();
    assert!(
        user.as_str().unwrap().contains("\"folder\": \"notes\""),
        "{user}"
    );

    // `a2e skills` lists it as an LLM skill.
    let out = a2e(&ws, &providers, &["skills"]);
    assert_eq!(out.status.code(), Some(0));
    let listing = String::from_utf8(out.stdout).unwrap();
    let line = listing
        .lines()
        .find(|l| l.starts_with("summarise"))
        .expect("listed");
    assert!(
        line.contains("Published") && line.contains(" llm "),
        "{line}"
    );
}

#[test]
fn exit_codes_tell_failure_from_refusal() {
    let ws = Workspace::new();
    ws.skill("summarise", SKILL);
    let grep = || tool("g", "grep", json!({"pattern": "TODO", "path": "notes"}));
    let server = Server::start(vec![grep(), grep()]);
    let providers = provider("main", "openai", &server, "");

    // The skill ran and failed (max_turns): exit 1, the failed result on stdout, no
    // events on stderr without --events.
    let out = a2e(&ws, &providers, &["skill", "summarise"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let resp = stdout_json(&out);
    assert_eq!(resp["data"]["error_code"], "skill_error");
    assert!(
        resp["data"]["error"]
            .as_str()
            .unwrap()
            .contains("max_turns")
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("skill/event"));

    // Refused or invalid: exit 2 with the reason on stderr.
    for (args, needle) in [
        (
            vec!["skill", "summarise", "--input", "{not json"],
            "--input",
        ),
        (vec!["skill", "summarise", "--input", "[1]"], "JSON object"),
        (
            vec!["skill", "summarise", "--input", r#"{"folder": 3}"#],
            "folder",
        ),
        (vec!["skill", "nope"], "unknown skill"),
        (
            vec![
                "skill",
                "summarise",
                "--llm-override",
                r#"{"provider_name": "main", "provider_credentials": {}}"#,
            ],
            "llm_override.provider_name",
        ),
    ] {
        let out = a2e(&ws, &providers, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(
        server.received().len(),
        2,
        "refused calls never reach the model"
    );
}

#[test]
fn a_program_skill_with_a_bad_command_is_refused_at_start_naming_the_file() {
    let ws = Workspace::new();
    ws.skill(
        "prog",
        "---\nname: prog\ndescription: A program\ncommand: {run: it}\n---\n",
    );
    let out = a2e(&ws, "", &["skills"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("prog.md") && stderr.contains("command"),
        "{stderr}"
    );
}

/// The example skill of `examples/workspace`, against an endpoint given only by the
/// environment (`A2E_LLM_BASE_URL`, `A2E_LLM_MODEL`, `A2E_LLM_API_KEY`), as its README
/// line says to run it.
#[test]
fn the_example_skill_runs_against_an_endpoint_from_the_environment() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace");
    let server = Server::start(vec![
        tool("e1", "list_dir", json!({"path": "notes"})),
        tool("e2", "grep", json!({"pattern": "TODO", "path": "notes"})),
        text(
            "```json\n{\"summary\": \"A release week.\", \"todos\": [\
             {\"text\": \"confirm the schema drift check runs in CI\", \"file\": \"notes/monday.txt\"},\
             {\"text\": \"write the migration note for plugin authors\", \"file\": \"notes/wednesday.txt\"}]}\n```",
        ),
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .arg("--root")
        .arg(&example)
        .args(["skill", "summarise_notes"])
        .env("A2E_LLM_BASE_URL", &server.base_url)
        .env("A2E_LLM_MODEL", "example-model")
        .env("A2E_LLM_API_KEY", FAKE_KEY)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let resp = stdout_json(&out);
    let todos = resp["data"]["data"]["todos"].as_array().unwrap();
    assert_eq!(todos.len(), 2, "{resp}");
    assert_eq!(resp["data"]["summary"]["provider"], "env");
    assert_eq!(resp["data"]["summary"]["model"], "example-model");
    let got = server.received();
    assert_eq!(
        got[0].headers["authorization"],
        format!("Bearer {FAKE_KEY}")
    );
    let mut offered = got[0].tool_names();
    offered.sort();
    assert_eq!(offered, ["grep", "list_dir", "read_file"]);
    let listing = got[1].body["messages"].to_string();
    assert!(
        listing.contains("monday.txt") && listing.contains("wednesday.txt"),
        "{listing}"
    );
    let grep = got[2].body["messages"].to_string();
    assert!(grep.contains("migration note"), "{grep}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(FAKE_KEY));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(FAKE_KEY));
}
