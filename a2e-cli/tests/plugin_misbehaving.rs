//! A `[[plugins]]` process that breaks the protocol never hangs the host: a
//! result of the wrong shape, a line that is not JSON, or the plugin's exit
//! fails the call at once with an error naming the plugin and what it did,
//! and a plugin that stays silent is ended by the tool timeout — in a chain
//! run by `a2e run` as on the wire.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use a2e_client::Client;
use serde_json::{Value, json};

fn plugin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/misbehaving_plugin.py")
}

/// A workspace whose configuration mounts the plugin in `mode` with a tool
/// timeout of `tool_secs`, and a one-node chain calling its tool.
fn workspace(mode: &str, tool_secs: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a2e.toml"),
        format!(
            "[timeouts]\ntool_secs = {tool_secs}\n\n[[plugins]]\nname = \"loud\"\n\
             command = [\"python3\", {:?}]\nenv = {{ MODE = \"{mode}\" }}\n",
            plugin().display().to_string()
        ),
    )
    .unwrap();
    let chain = json!({
        "type": "chain/req", "chain_id": "shout", "entry_node": "a",
        "nodes": [{"node_id": "a", "kind": "tool", "name": "shout", "input": {}}]
    });
    std::fs::write(dir.path().join("chain.json"), chain.to_string()).unwrap();
    dir
}

/// `a2e run chain.json` in the workspace: its exit code, the chain's error
/// message, and how long it took.
fn run_chain(dir: &Path) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .current_dir(dir)
        .args(["--config", "a2e.toml", "--root", ".", "run", "chain.json"])
        .output()
        .unwrap();
    let took = started.elapsed();
    let resp: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let message = resp["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (out.status.code(), message, took)
}

#[test]
fn a_chain_fails_at_once_when_its_plugin_breaks_the_protocol() {
    // The timeout is far: each of these must fail long before it.
    for (mode, said) in [
        (
            "malformed",
            "answered with a `tool/call/resp` that does not decode",
        ),
        (
            "nonjson",
            "wrote a line that is not an A2E message: `HELLO`",
        ),
        ("die", "plugin `loud` closed the connection"),
    ] {
        let dir = workspace(mode, 120);
        let (code, message, took) = run_chain(dir.path());
        assert_eq!(code, Some(1), "{mode}: {message}");
        assert!(
            message.contains("plugin `loud`") && message.contains(said),
            "{mode}: {message}"
        );
        assert!(!message.contains("the host"), "{mode}: {message}");
        assert!(took < Duration::from_secs(60), "{mode} took {took:?}");
    }
}

#[test]
fn a_silent_plugin_is_ended_by_the_tool_timeout_in_a_chain() {
    let dir = workspace("silent", 2);
    let (code, message, took) = run_chain(dir.path());
    assert_eq!(code, Some(1), "{message}");
    assert!(message.contains("timed out after 2 s"), "{message}");
    // Far below the chain's own default of 300 s.
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[tokio::test]
async fn a_wire_call_fails_at_once_with_the_plugins_name() {
    let dir = workspace("malformed", 120);
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.current_dir(dir.path())
        .args(["--config", "a2e.toml", "--root", ".", "serve", "--stdio"]);
    let client = Client::connect_stdio(cmd).await.unwrap();
    let started = Instant::now();
    let result = client.tools().call("shout", json!({})).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(!result.success);
    let error = result.error.unwrap_or_default();
    assert!(
        error.contains("plugin `loud`") && error.contains("does not decode"),
        "{error}"
    );
}
