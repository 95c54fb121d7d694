//! Durable ACMP DAG runs over the real binary: a session sends a 5-task DAG
//! (`dag/req`) to `a2e serve --stdio`; the host is killed with SIGKILL
//! while the third task sleeps and started again on the same root: the run
//! resumes from the journal and ends, the tasks that had finished do not
//! run again, the interrupted one (not idempotent) fails with
//! `interrupted`, and an agent that re-attaches with `chain/attach` gets
//! every event `seq` once, then the answer that `a2e runs show` has too.

use crate::durable_support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use a2e_host::proc::pids_with_arg;
use durable_support::{effects, first_run_id, handshake, kill_marked, phases, recv, serve};
use serde_json::{Value, json};

/// A marker argument of the third task's sleep, found through /proc.
const SLEEP_MARK: &str = "30.0535";
/// The same for the task the cancel test stops (the tests run side by side).
const CANCEL_MARK: &str = "30.0536";

fn a2e(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(args)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap()
}

/// task_a -> task_b -> … -> task_e, `run_command` tasks; each appends its
/// letter to `effects` (its side effect); task_c then sleeps (it is killed
/// there). `run_command` is not idempotent: after the crash task_c is not
/// run again but fails with `interrupted`, and its dependents are
/// cancelled.
/// `sleeper` names the task that sleeps and its sleep's marker.
fn dag(ids: &[&str], sleeper: Option<(&str, &str)>) -> Value {
    let tasks: Vec<Value> = ids
        .iter()
        .map(|id| {
            let script = if let Some((_, mark)) = sleeper.filter(|(s, _)| s == id) {
                format!("echo {id} >> effects; exec sleep {mark}")
            } else {
                format!("echo {id} >> effects")
            };
            json!({
                "task_id": format!("task_{id}"), "capability": "run_command",
                "input": {"type": "json", "data": {"argv": ["sh", "-c", script], "timeout": 120}},
                "timeout_ms": 120_000,
            })
        })
        .collect();
    let edges: Vec<Value> = ids
        .windows(2)
        .map(|w| json!({"from": format!("task_{}", w[0]), "to": format!("task_{}", w[1])}))
        .collect();
    json!({"dag_id": "durable_dag", "tasks": tasks, "edges": edges})
}

#[test]
fn a_dag_killed_mid_run_resumes_and_its_finished_tasks_do_not_run_again() {
    let root = tempfile::tempdir().unwrap();
    let mut host = serve(root.path());
    handshake(&mut host, "dag-agent");
    let req = json!({
        "type": "dag/req", "id": "dag-1", "streaming": true,
        "dag": dag(&["a", "b", "c", "d", "e"], Some(("c", SLEEP_MARK))),
    });
    host.send(req.to_string().as_bytes()).unwrap();

    // Events until task_c has started, then its effect.
    let mut seen = Vec::new();
    loop {
        let msg = recv(&host);
        assert_eq!(msg["type"], "chain/event", "{msg}");
        assert_eq!(msg["req_id"], "dag-1", "{msg}");
        seen.push(msg);
        let last = seen.last().unwrap();
        if last["node_id"] == "task_c" && last["phase"] == "start" {
            break;
        }
    }
    assert_eq!(
        phases(&seen),
        [
            "task_a:start",
            "task_a:done",
            "task_b:start",
            "task_b:done",
            "task_c:start"
        ]
    );
    let end = Instant::now() + Duration::from_secs(30);
    while effects(root.path()).len() < 3 {
        assert!(Instant::now() < end, "task_c never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: nothing of the host runs after this.
    drop(host);
    kill_marked(SLEEP_MARK);
    assert_eq!(effects(root.path()), ["a", "b", "c"]);

    // The journal has the run unfinished, as an ACMP DAG of the agent.
    let list = a2e(root.path(), &["runs", "list"]);
    assert!(list.status.success());
    let listed = String::from_utf8(list.stdout).unwrap();
    assert!(listed.contains("acmp_dag"), "{listed}");
    assert!(listed.contains("running"), "{listed}");
    assert!(listed.contains("dag-agent"), "{listed}");
    let run_id = first_run_id(&listed);

    // Started again: the run resumes without any agent asking; the agent
    // re-attaches by the id of its dag/req.
    let mut host = serve(root.path());
    handshake(&mut host, "dag-agent");
    host.send(br#"{"type":"chain/attach","id":"att","chain_req_id":"dag-1"}"#)
        .unwrap();
    let (answer, events) = host.answer("att", Duration::from_secs(60), |_| {}).unwrap();
    assert_eq!(answer["type"], "chain/resp", "{answer}");
    assert_eq!(answer["req_id"], "att");
    assert_eq!(answer["chain_id"], "durable_dag");
    assert_eq!(answer["success"], false, "{answer}");
    assert_eq!(answer["error"]["code"], "chain_node_error", "{answer}");
    assert_eq!(answer["error"]["node_id"], "task_c", "{answer}");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "{events:?}"
    );
    // Each transition once: the resumed run did not report task_c's start
    // again; task_c failed, its dependents were cancelled.
    assert_eq!(
        phases(&events),
        [
            "task_a:start",
            "task_a:done",
            "task_b:start",
            "task_b:done",
            "task_c:start",
            "task_c:error",
            "task_d:skip",
            "task_e:skip"
        ]
    );
    let c_end = &events[5];
    assert!(
        c_end["error"].as_str().unwrap().contains("not idempotent"),
        "{c_end}"
    );
    // task_a and task_b ran once, task_c was not repeated, nothing after it ran.
    assert_eq!(effects(root.path()), ["a", "b", "c"]);

    // The journal has it finished, with its answer.
    let show = a2e(root.path(), &["runs", "show", &run_id]);
    assert!(show.status.success());
    let state: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(state["summary"]["status"], "failed", "{state}");
    assert_eq!(state["summary"]["kind"], "acmp_dag", "{state}");
    assert_eq!(state["summary"]["agent"], "dag-agent");
    assert_eq!(state["request"]["id"], "dag-1");
    let node = |id: &str| {
        state["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node_id"] == id)
            .cloned()
    };
    assert_eq!(node("task_c").unwrap()["outcome"]["code"], "interrupted");
    assert_eq!(node("task_a").unwrap()["outcome"]["ok"], true);
    assert!(node("task_d").is_none(), "task_d never ran: {state}");
    let answer = &state["answer"];
    assert_eq!(answer["final_output"]["status"], "failed", "{answer}");
    assert_eq!(answer["outputs"]["task_a"]["exit_code"], 0, "{answer}");
    assert_eq!(answer["outputs"]["task_b"]["exit_code"], 0, "{answer}");
}

#[test]
fn a_dag_run_over_a_session_is_journaled_and_answered() {
    let root = tempfile::tempdir().unwrap();
    let mut host = serve(root.path());
    handshake(&mut host, "dag-agent");
    // A DAG that is not one is refused before anything runs.
    host.send(br#"{"type":"dag/req","id":"bad","dag":{"dag_id":"x"}}"#)
        .unwrap();
    let (refused, _) = host.answer("bad", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["code"], "schema_violation", "{refused}");

    let req = json!({"type": "dag/req", "id": "ok", "dag": dag(&["x", "y"], None)});
    host.send(req.to_string().as_bytes()).unwrap();
    let (answer, events) = host.answer("ok", Duration::from_secs(60), |_| {}).unwrap();
    assert!(events.is_empty(), "no events without streaming: {events:?}");
    assert_eq!(answer["type"], "chain/resp", "{answer}");
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["final_output"]["status"], "completed", "{answer}");
    assert_eq!(effects(root.path()), ["x", "y"]);

    let list = a2e(root.path(), &["runs", "list"]);
    let listed = String::from_utf8(list.stdout).unwrap();
    assert!(listed.contains("acmp_dag"), "{listed}");
    assert!(listed.contains("succeeded"), "{listed}");
    let run_id = first_run_id(&listed);
    let attach = json!({"type": "chain/attach", "id": "att", "run_id": run_id});
    host.send(attach.to_string().as_bytes()).unwrap();
    let (again, events) = host.answer("att", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(again["success"], true, "{again}");
    assert_eq!(
        phases(&events),
        ["task_x:start", "task_x:done", "task_y:start", "task_y:done"]
    );
}

#[test]
fn runs_cancel_stops_a_dag_run() {
    let root = tempfile::tempdir().unwrap();
    let mut host = serve(root.path());
    handshake(&mut host, "dag-agent");
    let req = json!({
        "type": "dag/req", "id": "slow", "streaming": true,
        "dag": dag(&["s", "t"], Some(("s", CANCEL_MARK))),
    });
    host.send(req.to_string().as_bytes()).unwrap();
    let started = recv(&host);
    assert_eq!(started["phase"], "start", "{started}");
    let list = a2e(root.path(), &["runs", "list", "--status", "running"]);
    let listed = String::from_utf8(list.stdout).unwrap();
    let run_id = first_run_id(&listed);

    let cancel = a2e(root.path(), &["runs", "cancel", &run_id]);
    assert!(
        cancel.status.success(),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    let (answer, _) = host
        .answer("slow", Duration::from_secs(30), |_| {})
        .unwrap();
    assert_eq!(answer["success"], false, "{answer}");
    assert_eq!(answer["error"]["code"], "cancelled", "{answer}");
    // The sleeping task's process group went with it; the next task never ran.
    let end = Instant::now() + Duration::from_secs(10);
    while !pids_with_arg(CANCEL_MARK).is_empty() {
        assert!(
            Instant::now() < end,
            "the cancelled task's sleep still runs"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(effects(root.path()), ["s"]);
    let show = a2e(root.path(), &["runs", "show", &run_id]);
    let state: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(state["summary"]["status"], "cancelled", "{state}");
}
