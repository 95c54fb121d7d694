//! The host as an A2A agent (`a2e serve --a2a`), reached by the official A2A
//! Python SDK (`a2a-sdk`, `.ci/install-a2a.sh`; `tests/a2a/client.py`) over
//! both bindings: the card, a blocking and a streamed message, `GetTask`,
//! `ListTasks`, a task subscribed to and cancelled, and the errors of an
//! unknown task and of cancelling a task that ended.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::mcp_conformance_support::{Server, start};

/// The SDK's Python, or `None` (skipped loudly; a failure under `CI`).
pub fn python(test: &str) -> Option<PathBuf> {
    let python = a2e_test_kit::ci_tools::dir().join("a2a-venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} needs the A2A Python SDK ({} is missing; run .ci/install-a2a.sh)",
        python.display()
    );
    crate::skip::skipped(&format!(
        "{test} needs the A2A Python SDK (run .ci/install-a2a.sh)"
    ));
    None
}

fn skill(root: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(root.join("skills")).unwrap();
    std::fs::write(root.join("skills").join(format!("{name}.md")), text).unwrap();
}

/// `echo` answers with its arguments after one progress event; `slow`
/// waits until it is cancelled.
fn skills(root: &Path) {
    skill(
        root,
        "echo",
        r#"---
name: echo
description: Answers with its arguments
command: [sh, -c, "read -r args; echo '{\"event\": \"progress\", \"data\": {\"pct\": 50, \"message\": \"half\"}}'; echo \"{\\\"result\\\": {\\\"got\\\": $args}}\""]
input_schema:
  type: object
  properties: { word: { type: string } }
  required: [word]
---
Echoes its arguments back.
"#,
    );
    skill(
        root,
        "slow",
        r#"---
name: slow
description: Waits until it is cancelled
command: [sh, -c, "read -r args; sleep 120; echo '{\"result\": {}}'"]
timeout_seconds: 300
---
Takes its time.
"#,
    );
}

/// `a2e serve --a2a` on a free loopback port, serving `root`.
pub fn host(root: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--a2a", "127.0.0.1:0", "--root"])
        .arg(root);
    start(cmd)
}

/// Runs `tests/a2a/SCRIPT BASE_URL BINDING ARGS…` on the SDK's Python and
/// reads the JSON report it prints.
pub fn run_script(python: &Path, script: &str, url: &str, binding: &str, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/a2a")
        .join(script);
    let out = Command::new(python)
        .arg(script)
        .args([url, binding])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{binding}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn drive(python: &Path, url: &str, binding: &str) -> Value {
    run_script(python, "client.py", url, binding, &[])
}

/// A task's state.
pub fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

#[test]
fn an_a2a_client_runs_skills_as_tasks_over_both_bindings() {
    let test = "an_a2a_client_runs_skills_as_tasks_over_both_bindings";
    let Some(python) = python(test) else { return };
    let root = tempfile::tempdir().unwrap();
    skills(root.path());
    let server = host(root.path());
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let seen = drive(&python, &server.url, binding);
        let card = &seen["card"];
        let ids: Vec<&str> = card["skills"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["id"].as_str())
            .collect();
        assert!(ids.contains(&"echo") && ids.contains(&"slow"), "{card}");
        assert_eq!(card["capabilities"]["streaming"], true, "{card}");
        let bindings: Vec<&str> = card["supportedInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["protocolBinding"].as_str())
            .collect();
        assert_eq!(bindings, ["JSONRPC", "HTTP+JSON"], "{card}");

        // A blocking send answers with the task that ended, its output the artifact.
        let task = &seen["blocking"].as_array().unwrap().last().unwrap()["task"];
        assert_eq!(state(task), "TASK_STATE_COMPLETED", "{binding}: {task}");
        let data = &task["artifacts"][0]["parts"][0]["data"];
        assert_eq!(data["got"]["word"], "hello", "{binding}: {task}");
        assert_eq!(task["history"][0]["messageId"], "m-1", "{binding}: {task}");
        assert_eq!(seen["get"]["id"], task["id"], "{binding}");
        assert_eq!(state(&seen["get"]), "TASK_STATE_COMPLETED", "{binding}");

        // Streamed: the task first, its progress, its artifact, then its end.
        let streamed = seen["streamed"].as_array().unwrap();
        assert!(streamed[0].get("task").is_some(), "{binding}: {streamed:?}");
        let progress = streamed.iter().any(|e| {
            e["statusUpdate"]["status"]["message"]["parts"][0]["data"]["event"] == "progress"
        });
        assert!(progress, "{binding}: {streamed:?}");
        let artifact = streamed
            .iter()
            .find_map(|e| e.get("artifactUpdate"))
            .unwrap_or_else(|| panic!("{binding}: no artifact in {streamed:?}"));
        assert_eq!(
            artifact["artifact"]["parts"][0]["data"]["got"]["word"],
            "streamed"
        );
        let last = &streamed.last().unwrap()["statusUpdate"];
        assert_eq!(
            state(last),
            "TASK_STATE_COMPLETED",
            "{binding}: {streamed:?}"
        );

        // Listed by its context.
        let listed = seen["listed"]["tasks"].as_array().unwrap();
        assert_eq!(listed.len(), 1, "{binding}: {listed:?}");
        assert_eq!(listed[0]["id"], task["id"]);

        // A task started without waiting, subscribed to, then cancelled.
        let started = &seen["slow_started"].as_array().unwrap().last().unwrap()["task"];
        assert_eq!(state(started), "TASK_STATE_WORKING", "{binding}: {started}");
        assert_eq!(
            state(&seen["cancelled"]),
            "TASK_STATE_CANCELED",
            "{binding}"
        );
        assert_eq!(
            state(&seen["slow_after"]),
            "TASK_STATE_CANCELED",
            "{binding}"
        );
        let subscribed = seen["subscribed"].as_array().unwrap();
        assert_eq!(
            state(&subscribed.last().unwrap()["statusUpdate"]),
            "TASK_STATE_CANCELED",
            "{binding}: {subscribed:?}"
        );

        // Errors by name.
        let unknown = seen["unknown_task"].to_string();
        assert!(
            unknown.contains("TaskNotFound") || unknown.contains("not found"),
            "{binding}: {unknown}"
        );
        let ended = seen["cancel_ended"].to_string();
        assert!(
            ended.contains("TaskNotCancelable") || ended.contains("cannot be canceled"),
            "{binding}: {ended}"
        );
    }
    // The tasks are the host's runs.
    let runs = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "list", "--json", "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    let runs = String::from_utf8_lossy(&runs.stdout);
    assert_eq!(runs.matches("a2a_task").count(), 6, "{runs}");
}
