//! Durable runs over the real binary: `a2e serve --stdio` killed with
//! SIGKILL while the third node of a 5-node chain runs, started again on the
//! same root: the run resumes from the journal and finishes, the nodes that
//! had finished do not run again, and an agent that re-attaches with
//! `chain/attach` gets every event `seq` once, then the final answer.

use crate::durable_support;

use std::process::Command;
use std::time::{Duration, Instant};

use durable_support::{effects, first_run_id, handshake, kill_marked, recv, serve};
use serde_json::{Value, json};

/// A marker argument of the third node's sleep, found through /proc.
const SLEEP_MARK: &str = "30.0533";

/// a -> b -> c -> d -> e; each appends its id to `effects` (its side
/// effect); `c` then sleeps (it is killed there). `run_command` is not
/// idempotent, so `c` is not run again after the crash: it fails with
/// `interrupted`, and its `on_error: skip` lets the chain go on.
fn chain() -> Value {
    let ids = ["a", "b", "c", "d", "e"];
    let nodes: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let script = if *id == "c" {
                format!("echo c >> effects; exec sleep {SLEEP_MARK}")
            } else {
                format!("echo {id} >> effects")
            };
            let mut node = json!({
                "node_id": id, "kind": "tool", "name": "run_command",
                "input": {"argv": ["sh", "-c", script], "timeout": 120},
            });
            if let Some(next) = ids.get(i + 1) {
                node["next_node"] = json!(next);
            }
            if *id == "c" {
                node["on_error"] = json!("skip");
            }
            node
        })
        .collect();
    json!({
        "type": "chain/req", "id": "chain-1", "chain_id": "durable",
        "entry_node": "a", "nodes": nodes, "streaming": true, "timeout": 300,
    })
}

#[test]
fn a_chain_killed_mid_run_resumes_and_a_reattached_agent_gets_every_event_once() {
    let root = tempfile::tempdir().unwrap();
    let mut host = serve(root.path());
    handshake(&mut host, "durable-agent");
    host.send(chain().to_string().as_bytes()).unwrap();

    // Events until c has started and written its effect.
    let mut seen = Vec::new();
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let msg = recv(&host);
        assert_eq!(msg["type"], "chain/event", "{msg}");
        seen.push(msg["seq"].as_u64().unwrap());
        if msg["node_id"] == "c" && msg["phase"] == "start" {
            break;
        }
    }
    while effects(root.path()).len() < 3 {
        assert!(Instant::now() < end, "c never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(seen, [0, 1, 2, 3, 4]);
    // SIGKILL: nothing of the host runs after this.
    drop(host);
    kill_marked(SLEEP_MARK);
    assert_eq!(effects(root.path()), ["a", "b", "c"]);

    // The journal says the run is unfinished.
    let list = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "list", "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    assert!(list.status.success());
    let listed = String::from_utf8(list.stdout).unwrap();
    assert!(listed.contains("running"), "{listed}");
    let run_id = first_run_id(&listed);

    // Started again: the run resumes (d runs without any agent asking);
    // the agent re-attaches.
    let restarted = Instant::now();
    let mut host = serve(root.path());
    while effects(root.path()).len() < 4 {
        assert!(
            restarted.elapsed() < Duration::from_secs(30),
            "the run did not resume"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    eprintln!(
        "FIGURE host restart (process start included) to the resumed run's next node: {} ms",
        restarted.elapsed().as_millis()
    );
    handshake(&mut host, "durable-agent");
    // An unknown run is refused.
    host.send(br#"{"type":"chain/attach","id":"x","run_id":"nope"}"#)
        .unwrap();
    let (refused, _) = host.answer("x", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["code"], "unknown_run", "{refused}");

    host.send(br#"{"type":"chain/attach","id":"att","chain_req_id":"chain-1"}"#)
        .unwrap();
    let (answer, events) = host.answer("att", Duration::from_secs(60), |_| {}).unwrap();
    assert_eq!(answer["type"], "chain/resp", "{answer}");
    assert_eq!(answer["req_id"], "att");
    assert_eq!(answer["success"], true, "{answer}");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "{events:?}"
    );
    let phases: Vec<String> = events
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["node_id"].as_str().unwrap(),
                e["phase"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        phases[..5],
        ["a:start", "a:done", "b:start", "b:done", "c:start"]
    );
    assert_eq!(phases.last().unwrap(), "e:done", "{phases:?}");
    // c may have run when the host died and is not idempotent: interrupted.
    let c_end = events
        .iter()
        .find(|e| e["node_id"] == "c" && e["phase"] != "start")
        .unwrap();
    assert!(
        c_end["error"].as_str().unwrap().contains("not idempotent"),
        "{c_end}"
    );
    // a and b ran once, c was not repeated, d and e ran once.
    assert_eq!(effects(root.path()), ["a", "b", "c", "d", "e"]);

    // The journal has it finished.
    let show = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "show", &run_id, "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    assert!(show.status.success());
    let state: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(state["summary"]["status"], "succeeded", "{state}");
    assert_eq!(state["summary"]["agent"], "durable-agent");
    let c = state["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node_id"] == "c")
        .unwrap();
    assert_eq!(c["outcome"]["code"], "interrupted", "{c}");
}

#[test]
fn another_agents_run_is_refused_and_runs_cancel_stops_a_run() {
    let root = tempfile::tempdir().unwrap();
    let mut host = serve(root.path());
    handshake(&mut host, "owner");
    let req = json!({
        "type": "chain/req", "id": "slow", "entry_node": "s", "streaming": true,
        "nodes": [{"node_id": "s", "kind": "tool", "name": "run_command",
                   "input": {"argv": ["sh", "-c", "exec sleep 30.0534"], "timeout": 120}}],
    });
    host.send(req.to_string().as_bytes()).unwrap();
    let started = recv(&host);
    assert_eq!(started["phase"], "start", "{started}");
    let list = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "list", "--status", "running", "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    let listed = String::from_utf8(list.stdout).unwrap();
    let run_id = first_run_id(&listed);

    // Another agent on another host process over the same root.
    let mut other = serve(root.path());
    handshake(&mut other, "intruder");
    let attach = json!({"type": "chain/attach", "id": "steal", "run_id": run_id});
    other.send(attach.to_string().as_bytes()).unwrap();
    let (refused, events) = other
        .answer("steal", Duration::from_secs(30), |_| {})
        .unwrap();
    assert!(events.is_empty());
    assert_eq!(refused["code"], "unauthorized", "{refused}");
    drop(other);

    // `a2e runs cancel` stops it; the owner gets a cancelled answer.
    let cancel = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "cancel", &run_id, "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    assert!(
        cancel.status.success(),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    let (answer, _) = host
        .answer("slow", Duration::from_secs(30), |_| {})
        .unwrap();
    assert_eq!(answer["success"], false);
    assert_eq!(answer["error"]["code"], "cancelled", "{answer}");
    let again = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "cancel", &run_id, "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
}
