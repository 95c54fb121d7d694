//! Durable skill runs over the real binary: `a2e serve --stdio` killed with
//! SIGKILL during an Ontheia skill's document and during an LLM skill's
//! agentic loop (against a scripted model server that counts its requests),
//! started again on the same root: the run resumes from the journal and
//! finishes, the steps and tool calls that had finished do not run again, no
//! model turn is asked twice, and an agent that re-attaches with
//! `chain/attach` gets every event `seq` once, then the final answer.

use crate::durable_support;
use crate::llm_support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use conformance::child::HostProcess;
use durable_support::{effects, first_run_id, handshake, kill_marked, serve};
use serde_json::{Value, json};

/// The events and answer of re-attaching to the run started by `req_id`.
fn reattach(host: &mut HostProcess, req_id: &str) -> (Value, Vec<Value>) {
    let attach = json!({"type": "chain/attach", "id": "att", "chain_req_id": req_id});
    host.send(attach.to_string().as_bytes()).unwrap();
    host.answer("att", Duration::from_secs(60), |_| {}).unwrap()
}

/// `node:phase` of each event, after checking the `seq`s are 0, 1, 2, … once.
fn phases(events: &[Value]) -> Vec<String> {
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "{events:?}"
    );
    durable_support::phases(events)
}

/// Waits until `root/effects` has `n` lines.
fn wait_effects(root: &Path, n: usize, what: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    while effects(root).len() < n {
        assert!(Instant::now() < end, "{what}: {:?}", effects(root));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The run's state as `a2e runs show` prints it (the only run on `root`).
fn only_run(root: &Path) -> Value {
    let list = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "list", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let listed = String::from_utf8(list.stdout).unwrap();
    let run_id = first_run_id(&listed);
    let show = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "show", &run_id, "--root"])
        .arg(root)
        .output()
        .unwrap();
    serde_json::from_slice(&show.stdout).unwrap()
}

const DOC_MARK: &str = "30.0611";

/// An Ontheia skill: tool steps a..e each append their id to `effects`; c
/// then sleeps (it is killed there).
fn ontheia_skill(root: &Path) {
    let steps: Vec<Value> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|id| {
            let script = if *id == "c" {
                format!("echo c >> effects; exec sleep {DOC_MARK}")
            } else {
                format!("echo {id} >> effects")
            };
            json!({"id": id, "type": "tool", "server": "a2e", "tool": "run_command",
                   "args": {"argv": ["sh", "-c", script], "timeout": 120}})
        })
        .collect();
    let text = format!(
        "---\nname: durable_doc\ndescription: Five steps with side effects\n---\nRuns five steps.\n\n```ontheia\n{}\n```\n",
        json!({ "steps": steps })
    );
    std::fs::create_dir_all(root.join("skills")).unwrap();
    std::fs::write(root.join("skills/durable_doc.md"), text).unwrap();
}

#[test]
fn an_ontheia_skill_killed_mid_document_resumes_without_repeating_its_steps() {
    let root = tempfile::tempdir().unwrap();
    ontheia_skill(root.path());
    let mut host = serve(root.path());
    handshake(&mut host, "doc-agent");
    let call = json!({"type": "skill/call/req", "id": "doc-1", "name": "durable_doc",
                      "arguments": {"input": "go"}, "timeout": 300});
    host.send(call.to_string().as_bytes()).unwrap();
    wait_effects(root.path(), 3, "c never ran");
    // SIGKILL: nothing of the host runs after this.
    drop(host);
    kill_marked(DOC_MARK);
    assert_eq!(effects(root.path()), ["a", "b", "c"]);
    assert_eq!(only_run(root.path())["summary"]["status"], "running");

    // Started again: the run resumes without an agent; the agent re-attaches.
    let mut host = serve(root.path());
    wait_effects(root.path(), 5, "the run did not resume");
    handshake(&mut host, "doc-agent");
    let (answer, events) = reattach(&mut host, "doc-1");
    assert_eq!(answer["type"], "chain/resp", "{answer}");
    assert_eq!(answer["chain_id"], "durable_doc");
    // c may have run and run_command is not idempotent: it failed
    // `interrupted`, the document went on, and its answer names the failure.
    assert_eq!(answer["success"], false, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("c:") && message.contains("not idempotent"),
        "{answer}"
    );
    let phases = phases(&events);
    assert_eq!(
        phases,
        [
            "a:start", "a:done", "b:start", "b:done", "c:start", "c:error", "d:start", "d:done",
            "e:start", "e:done"
        ]
    );
    // a and b ran once, c was not repeated, d and e ran once.
    assert_eq!(effects(root.path()), ["a", "b", "c", "d", "e"]);
    let state = only_run(root.path());
    assert_eq!(state["summary"]["kind"], "ontheia", "{state}");
    assert_eq!(state["summary"]["agent"], "doc-agent");
    let c = state["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node_id"] == "c")
        .unwrap();
    assert_eq!(c["outcome"]["code"], "interrupted", "{c}");
}

const LOOP_MARK: &str = "30.0622";

#[test]
fn an_llm_skill_killed_mid_loop_resumes_without_asking_a_turn_twice() {
    use llm_support::{Server, Workspace, provider, text, tool};
    let server = Server::start(vec![
        tool(
            "call_one",
            "run_command",
            json!({"argv": ["sh", "-c", "echo one >> effects"], "timeout": 60}),
        ),
        tool(
            "call_two",
            "run_command",
            json!({"argv": ["sh", "-c", format!("echo two >> effects; exec sleep {LOOP_MARK}")], "timeout": 120}),
        ),
        text("Both steps are done."),
    ]);
    let ws = Workspace::new();
    ws.skill(
        "helper",
        "---\nname: helper\ndescription: Runs two commands\ntools: [run_command]\nmax_turns: 5\n---\nRun the commands you are asked to.\n",
    );
    let config = ws.config(&provider("scripted", "openai", &server, ""));
    let root = ws.root();
    let serve_llm = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
        cmd.args(["serve", "--stdio", "--allow-command", "sh", "--config"])
            .arg(&config);
        HostProcess::spawn(cmd).unwrap()
    };
    let mut host = serve_llm();
    handshake(&mut host, "loop-agent");
    let call = json!({"type": "skill/call/req", "id": "loop-1", "name": "helper",
                      "arguments": {"task": "run both"}, "timeout": 300});
    host.send(call.to_string().as_bytes()).unwrap();
    wait_effects(&root, 2, "the second command never ran");
    drop(host);
    kill_marked(LOOP_MARK);
    assert_eq!(effects(&root), ["one", "two"]);
    assert_eq!(
        server.received().len(),
        2,
        "two turns asked before the kill"
    );

    let mut host = serve_llm();
    handshake(&mut host, "loop-agent");
    let (answer, events) = reattach(&mut host, "loop-1");
    assert_eq!(answer["type"], "chain/resp", "{answer}");
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(
        answer["final_output"]["data"], "Both steps are done.",
        "{answer}"
    );
    // Turns 1 and 2 were answered before the kill and not asked again: the
    // model saw three requests in all.
    let received = server.received();
    assert_eq!(received.len(), 3, "{received:?}");
    // The third request holds the whole conversation: the first command's
    // result, and the second one's `interrupted` (it may have run, and
    // run_command is not idempotent).
    let third = received[2].body["messages"].to_string();
    assert!(third.contains("interrupted"), "{third}");
    assert_eq!(effects(&root), ["one", "two"]);
    assert_eq!(
        phases(&events),
        [
            "turn-1:start",
            "turn-1:done",
            "turn-1/call_one:start",
            "turn-1/call_one:done",
            "turn-2:start",
            "turn-2:done",
            "turn-2/call_two:start",
            "turn-2/call_two:error",
            "turn-3:start",
            "turn-3:done"
        ]
    );
    let state = only_run(&root);
    assert_eq!(state["summary"]["kind"], "llm_skill", "{state}");
    assert_eq!(state["summary"]["status"], "succeeded", "{state}");
}
