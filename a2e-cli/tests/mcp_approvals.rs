//! Approvals decided by the MCP client's user: a call over `a2e serve
//! --mcp-stdio` that an `[[approvals]]` rule holds back is asked of the
//! client (`elicitation/create`) — the official MCP Python SDK
//! (`.ci/install-mcp.sh`, `tests/mcp/client_approve.py`) — and runs once
//! approved, fails `denied` with the user's reason otherwise.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::mcp_client_model::python;

const RULE: &str = "[commands]\nallow = [\"sh\"]\n\n[[approvals]]\ntool = \"run_command\"\n\
    program = \"sh\"\ndeciders = [\"client\"]\ntimeout_secs = 60\n";

/// Calls `run_command` appending `word` to `effects` over MCP stdio, the
/// client's user answering as `mode` says; the client's report.
fn call(python: &Path, root: &Path, mode: &str, word: &str) -> Value {
    let config = root.join("a2e.toml");
    std::fs::write(&config, RULE).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client_approve.py");
    let args = serde_json::json!({"argv": ["sh", "-c", format!("echo {word} >> effects")]});
    let out = Command::new(python)
        .arg(script)
        .args([mode, "run_command", &args.to_string()])
        .arg(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--mcp-stdio", "--config"])
        .arg(&config)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_mcp_clients_user_approves_or_denies_a_waiting_call() {
    let test = "the_mcp_clients_user_approves_or_denies_a_waiting_call";
    let Some(python) = python(test) else { return };
    let root = tempfile::tempdir().unwrap();
    let effects = || std::fs::read_to_string(root.path().join("effects")).unwrap_or_default();

    let approved = call(&python, root.path(), "approve", "yes");
    assert_eq!(approved["is_error"], false, "{approved}");
    assert_eq!(effects(), "yes\n", "the approved call ran once");
    let form = &approved["forms"][0];
    let message = form["message"].as_str().unwrap();
    assert!(
        message.contains("run_command") && message.contains("echo yes"),
        "{form}"
    );
    assert_eq!(
        form["requestedSchema"]["properties"]["approve"]["type"],
        "boolean"
    );

    let denied = call(&python, root.path(), "deny", "no");
    assert_eq!(denied["is_error"], true, "{denied}");
    let text = denied["text"].as_str().unwrap();
    assert!(text.contains("too risky"), "{denied}");
    let declined = call(&python, root.path(), "decline", "no");
    assert_eq!(declined["is_error"], true, "{declined}");
    assert_eq!(effects(), "yes\n", "the denied calls did not run");
}
