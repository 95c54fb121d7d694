//! A plugin written in Python (the repository's `examples/plugins/wordcount.py`,
//! standard library only) mounted with a `[[plugins]]` entry: `a2e tools`
//! lists its tool under the plugin's toolkit, `a2e run` calls it in a chain,
//! and a wire call gets its answer and its event, and its refusals.

use std::path::{Path, PathBuf};
use std::process::Command;

use a2e_client::{Client, ToolCall};
use a2e_proto::ErrorCode;
use serde_json::{Value, json};

use crate::skip;

/// `examples/plugins/wordcount.py` of the workspace.
fn plugin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins/wordcount.py")
}

/// Whether `python3` runs; when it does not, the test says it skipped.
fn python3(test: &str) -> bool {
    let runs = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !runs {
        skip::skipped(&format!("{test} needs python3"));
    }
    runs
}

/// A workspace whose configuration mounts the plugin as `words`.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a2e.toml"),
        format!(
            "[[plugins]]\nname = \"words\"\ncommand = [\"python3\", {:?}]\n",
            plugin().display().to_string()
        ),
    )
    .unwrap();
    dir
}

/// `a2e --config a2e.toml --root . ARGS…` in `dir`: its exit code and stdout.
fn a2e(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .current_dir(dir)
        .args(["--config", "a2e.toml", "--root", "."])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "a2e {args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), stdout)
}

#[test]
fn the_python_plugin_is_listed_and_called_in_a_chain() {
    if !python3("the_python_plugin_is_listed_and_called_in_a_chain") {
        return;
    }
    let dir = workspace();
    // One definition a line.
    let (_, listed) = a2e(dir.path(), &["tools", "--json"]);
    let wordcount = listed
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|t| t["name"] == "wordcount")
        .unwrap_or_else(|| panic!("no wordcount in {listed}"));
    assert_eq!(wordcount["toolkit"], "words", "{wordcount}");
    assert_eq!(wordcount["input_parameters"][0]["name"], "text");

    let chain = json!({
        "type": "chain/req", "chain_id": "count", "entry_node": "a",
        "nodes": [{"node_id": "a", "kind": "tool", "name": "wordcount",
                   "input": {"text": "one two three four"}}]
    });
    std::fs::write(dir.path().join("chain.json"), chain.to_string()).unwrap();
    let (code, out) = a2e(dir.path(), &["run", "chain.json"]);
    assert_eq!(code, Some(0), "{out}");
    let resp: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(resp["success"], true, "{out}");
    assert_eq!(resp["final_output"], json!({"words": 4}), "{out}");
}

#[tokio::test]
async fn a_wire_call_gets_the_plugins_answer_event_and_refusal() {
    if !python3("a_wire_call_gets_the_plugins_answer_event_and_refusal") {
        return;
    }
    let dir = workspace();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.current_dir(dir.path())
        .args(["--config", "a2e.toml", "--root", ".", "serve", "--stdio"]);
    let client = Client::connect_stdio(cmd).await.unwrap();

    let mut events = Vec::new();
    let call = ToolCall::new("wordcount", json!({"text": "a b c"}));
    let result = client
        .tools()
        .call_with_events(call, |e| events.push(e))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    assert_eq!(result.data, json!({"words": 3}));
    assert_eq!(events.len(), 1, "the plugin's progress event: {events:?}");
    assert_eq!(events[0].data["message"], "counting");

    // The host validates the arguments against the plugin's parameters.
    let err = client
        .tools()
        .call("wordcount", json!({"text": 5}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::SCHEMA_VIOLATION), "{err:?}");
    client.shutdown(5).await.unwrap();
}
