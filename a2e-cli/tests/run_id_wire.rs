//! The agent learns its durable run's id: `run_id` on the run's first
//! `chain/event` and on its `chain/resp` (a wire extension), the same id
//! that `chain/attach` and `a2e runs show` take. An answer replayed by
//! `chain/attach` names it too.

use std::process::Command;
use std::time::Duration;

use crate::durable_support::{handshake, serve};
use serde_json::{Value, json};

fn chain(req_id: &str, streaming: bool) -> Value {
    json!({
        "type": "chain/req", "id": req_id, "chain_id": "named", "entry_node": "a",
        "streaming": streaming,
        "nodes": [
            {"node_id": "a", "kind": "tool", "name": "write_file",
             "input": {"path": "a.txt", "content": "a"}, "next_node": "b"},
            {"node_id": "b", "kind": "tool", "name": "read_file", "input": {"path": "a.txt"}}
        ]
    })
}

#[test]
fn a_durable_chain_names_its_run_on_its_first_event_and_its_answer() {
    let root = tempfile::tempdir().unwrap();
    let mut host = serve(root.path());
    handshake(&mut host, "run-id-agent");
    host.send(chain("c1", true).to_string().as_bytes()).unwrap();
    let (resp, events) = host.answer("c1", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(resp["success"], true, "{resp}");
    let run_id = resp["run_id"]
        .as_str()
        .expect("run_id on chain/resp")
        .to_owned();
    assert!(!run_id.is_empty());
    let events: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "chain/event")
        .collect();
    assert!(events.len() >= 4, "{events:?}");
    assert_eq!(events[0]["seq"], 0);
    assert_eq!(events[0]["run_id"], run_id.as_str(), "{:?}", events[0]);
    assert!(
        events[1..].iter().all(|e| e.get("run_id").is_none()),
        "only the first event names the run"
    );

    // The id is the one the journal and chain/attach know.
    let attach = json!({"type": "chain/attach", "id": "at", "run_id": run_id});
    host.send(attach.to_string().as_bytes()).unwrap();
    let (replayed, _) = host.answer("at", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(replayed["run_id"], run_id.as_str(), "{replayed}");
    drop(host);
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["--root"])
        .arg(root.path())
        .args(["runs", "show", &run_id])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_chain_that_does_not_stream_still_gets_its_run_id_in_the_answer() {
    let root = tempfile::tempdir().unwrap();
    let mut host = serve(root.path());
    handshake(&mut host, "run-id-agent");
    host.send(chain("c2", false).to_string().as_bytes())
        .unwrap();
    let (resp, _) = host.answer("c2", Duration::from_secs(30), |_| {}).unwrap();
    assert!(
        resp["run_id"].as_str().is_some_and(|id| !id.is_empty()),
        "{resp}"
    );
}
