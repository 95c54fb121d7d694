//! A plugin written in Python (the repository's `examples/plugins/wordcount.py`,
//! standard library only) mounted with a `[[plugins]]` entry: `a2e tools`
//! lists its tool under the plugin's toolkit, `a2e run` calls it in a chain,
//! and a wire call gets its answer and its event, and its refusals. A plugin
//! that takes one call at a time gets one at a time.

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

/// A plugin that takes one call at a time (`max_parallel: 1`) but would run
/// any number at once (a thread each): each call holds a while and answers
/// how many calls it ever held together.
const ONE_AT_A_TIME: &str = r#"
import json, sys, threading, time, uuid
held, out = threading.Lock(), threading.Lock()
state = {"now": 0, "peak": 0}
def send(msg):
    msg.update(id=uuid.uuid4().hex, version="1.0", ts=time.time())
    with out:
        print(json.dumps(msg), flush=True)
def hold(rid):
    with held:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
    time.sleep(0.3)
    with held:
        state["now"] -= 1
        peak = state["peak"]
    send({"type": "tool/call/resp", "req_id": rid, "data": {"success": True,
          "tool_name": "hold", "data": {"peak": peak}, "duration_ms": 300}})
for line in sys.stdin:
    req = json.loads(line)
    kind, rid = req.get("type"), req.get("id", "")
    if kind == "handshake/req":
        send({"type": "handshake/resp", "req_id": rid, "session_id": uuid.uuid4().hex,
              "ok": True, "max_parallel": 1,
              "accepted_caps": [{"capability": "tools", "enabled": True}]})
    elif kind == "ping":
        send({"type": "pong", "req_id": rid})
    elif kind == "tool/list/req":
        send({"type": "tool/list/resp", "req_id": rid, "tools": [{"name": "hold",
              "description": "Holds a while", "input_parameters": []}]})
    elif kind == "tool/call/req":
        threading.Thread(target=hold, args=(rid,), daemon=True).start()
    elif kind == "shutdown":
        break
"#;

#[tokio::test]
async fn a_plugin_gets_no_more_calls_at_once_than_its_max_parallel() {
    if !python3("a_plugin_gets_no_more_calls_at_once_than_its_max_parallel") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("one.py"), ONE_AT_A_TIME).unwrap();
    std::fs::write(
        dir.path().join("a2e.toml"),
        "[[plugins]]\nname = \"one\"\ncommand = [\"python3\", \"one.py\"]\n",
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.current_dir(dir.path())
        .args(["--config", "a2e.toml", "--root", ".", "serve", "--stdio"]);
    let client = Client::connect_stdio(cmd).await.unwrap();
    let tools = client.tools();
    let (a, b, c) = tokio::join!(
        tools.call("hold", json!({})),
        tools.call("hold", json!({})),
        tools.call("hold", json!({})),
    );
    for result in [a, b, c] {
        let result = result.unwrap();
        assert!(result.success, "{result:?}");
        assert_eq!(result.data, json!({"peak": 1}), "one call at a time");
    }
    client.shutdown(5).await.unwrap();
}
