//! An A2A client as the decider of an approval (`tests/a2a/approve.py`, the
//! official A2A Python SDK): a task whose call waits for approval is
//! `TASK_STATE_INPUT_REQUIRED` with a question that shows the call, and the
//! client's next message to the task approves it (with edited arguments, or
//! not) or denies it — over both bindings, blocking and streamed, for a
//! skill held back itself and for a chain skill's node; an operator's
//! decision ends the wait as well.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::a2a_sdk::{python, run_script, state};
use crate::mcp_conformance_support::{Server, start};

fn write(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `guarded` (a program skill), `cleanup` (a chain skill running `sh`),
/// and the rules that hold both back.
fn workspace(root: &Path) {
    write(
        root,
        "skills/guarded.md",
        r#"---
name: guarded
description: Answers with its arguments, once approved
command: [sh, -c, "read -r args; echo \"{\\\"result\\\": {\\\"got\\\": $args}}\""]
input_schema:
  type: object
  properties: { word: { type: string } }
  required: [word]
---
Echoes its arguments back.
"#,
    );
    write(
        root,
        "skills/cleanup.md",
        r#"---
name: cleanup
description: Runs a shell command, once approved
input_schema: { type: object }
---
Cleans up.

```chain
{
  "entry_node": "sweep",
  "nodes": [
    { "node_id": "sweep", "kind": "tool", "name": "run_command",
      "input": { "argv": ["sh", "-c", "echo swept"] } }
  ]
}
```
"#,
    );
    write(
        root,
        "a2e.toml",
        "[[approvals]]\nskill = \"guarded\"\n\n[[approvals]]\ntool = \"run_command\"\nprogram = \"sh\"\n",
    );
}

fn host(root: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--a2a", "127.0.0.1:0", "--allow-command", "sh"])
        .arg("--config")
        .arg(root.join("a2e.toml"))
        .arg("--root")
        .arg(root);
    start(cmd)
}

/// The text of a status's message.
fn said(status: &Value) -> String {
    status["message"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn an_a2a_client_decides_a_waiting_call_as_the_answer_to_its_task() {
    let test = "an_a2a_client_decides_a_waiting_call_as_the_answer_to_its_task";
    let Some(python) = python(test) else { return };
    let root = tempfile::tempdir().unwrap();
    workspace(root.path());
    let server = host(root.path());
    let root_arg = root.path().display().to_string();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let args = [env!("CARGO_BIN_EXE_a2e"), root_arg.as_str()];
        let seen = run_script(&python, "approve.py", &server.url, binding, &args);

        // A blocking send ends where the task waits; the question shows the call.
        let asked = &seen["asked"];
        assert_eq!(
            state(asked),
            "TASK_STATE_INPUT_REQUIRED",
            "{binding}: {asked}"
        );
        let question = said(&asked["status"]);
        assert!(
            question.contains("skill `guarded` waits for approval ([[approvals]] #1)"),
            "{binding}: {question}"
        );
        let notice = &asked["status"]["message"]["parts"][1]["data"];
        assert_eq!(notice["arguments"]["word"], "hi", "{binding}: {notice}");
        assert_eq!(state(&seen["get_waiting"]), "TASK_STATE_INPUT_REQUIRED");
        let listed = seen["listed_waiting"]["tasks"].as_array().unwrap();
        assert_eq!(listed.len(), 1, "{binding}: {listed:?}");
        assert_eq!(listed[0]["id"], asked["id"]);
        let unclear = seen["unclear"].to_string();
        assert!(
            unclear.contains("neither approve nor deny"),
            "{binding}: {unclear}"
        );

        // Approved by the client's answer: the call ran, the history holds both sides.
        let approved = &seen["approved"];
        assert_eq!(
            state(approved),
            "TASK_STATE_COMPLETED",
            "{binding}: {approved}"
        );
        assert_eq!(
            approved["artifacts"][0]["parts"][0]["data"]["got"]["word"],
            "hi"
        );
        let history: Vec<&str> = approved["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            history,
            ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"],
            "{binding}"
        );
        assert_eq!(approved["history"][2]["messageId"], "a-3");

        // Streamed: the stream ends at the question; denied over a new stream.
        let streamed = seen["streamed"].as_array().unwrap();
        let last = &streamed.last().unwrap()["statusUpdate"];
        assert_eq!(
            state(last),
            "TASK_STATE_INPUT_REQUIRED",
            "{binding}: {streamed:?}"
        );
        let denied = seen["denied"].as_array().unwrap();
        let last = &denied.last().unwrap()["statusUpdate"];
        assert_eq!(state(last), "TASK_STATE_FAILED", "{binding}: {denied:?}");
        let why = said(&last["status"]);
        assert!(
            why.contains("denied by client:a2a: not today"),
            "{binding}: {why}"
        );

        // A chain skill's node waits the same way; edited arguments run.
        let nested = &seen["nested_asked"];
        assert_eq!(
            state(nested),
            "TASK_STATE_INPUT_REQUIRED",
            "{binding}: {nested}"
        );
        assert!(
            said(&nested["status"]).contains("tool `run_command`"),
            "{binding}: {nested}"
        );
        let edited = &seen["edited"];
        assert_eq!(state(edited), "TASK_STATE_COMPLETED", "{binding}: {edited}");
        assert!(
            edited["artifacts"].to_string().contains("edited"),
            "{edited}"
        );

        // An operator's decision ends the wait too; an ended task takes no answer.
        assert_eq!(
            state(&seen["operator"]),
            "TASK_STATE_COMPLETED",
            "{binding}"
        );
        let ended = seen["ended"].to_string();
        assert!(ended.contains("has ended"), "{binding}: {ended}");
    }
}
