//! The audit log follows one agent turn: each request's `correlation_id` is in
//! its audit record.

use std::process::Command;
use std::time::Duration;

use conformance::child::HostProcess;
use serde_json::{Value, json};

#[test]
fn audit_records_carry_the_requests_correlation_id() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "hello").unwrap();
    let log = root.path().join("audit.jsonl");
    let config = root.path().join("a2e.toml");
    std::fs::write(&config, format!("[audit]\npath = \"{}\"\n", log.display())).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--root"])
        .arg(root.path())
        .arg("--config")
        .arg(&config);
    let mut host = HostProcess::spawn(cmd).unwrap();
    let wait = Duration::from_secs(20);
    host.send(br#"{"type":"handshake/req","id":"hs","agent_id":"auditor"}"#)
        .unwrap();
    host.answer("hs", wait, |_| {}).unwrap();
    let req = json!({"type": "tool/call/req", "id": "r1", "tool_name": "read_file",
                     "arguments": {"path": "a.txt"}, "correlation_id": "turn-42"});
    host.send(req.to_string().as_bytes()).unwrap();
    let (resp, _) = host.answer("r1", wait, |_| {}).unwrap();
    assert_eq!(resp["data"]["success"], true, "{resp}");
    host.send(br#"{"type":"tool/call/req","id":"r2","tool_name":"read_file","arguments":{"path":"a.txt"}}"#)
        .unwrap();
    host.answer("r2", wait, |_| {}).unwrap();
    // The audit line is written when the answer goes out; give the writer a moment.
    let mut records: Vec<Value> = Vec::new();
    for _ in 0..100 {
        records = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if records.len() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let turn: Vec<&Value> = records
        .iter()
        .filter(|r| r["correlation_id"] == "turn-42")
        .collect();
    assert_eq!(turn.len(), 1, "{records:?}");
    assert_eq!(turn[0]["name"], "read_file");
    assert_eq!(turn[0]["agent"], "auditor");
    assert!(
        records.iter().any(|r| r.get("correlation_id").is_none()),
        "{records:?}"
    );
}
