//! Approvals over the real binary: a call that needs a person's decision
//! waits journaled, survives a SIGKILL of its host, and runs once when
//! `a2e runs approve` approves it; denial, edited arguments and both kinds
//! of timeout.

use crate::durable_support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use conformance::child::HostProcess;
use durable_support::{effects, handshake};
use serde_json::{Value, json};

/// `a2e serve --stdio` on `root` with `config` (TOML), allowed to run `sh`.
fn serve(root: &Path, config: &str) -> HostProcess {
    let file = root.join("a2e.toml");
    std::fs::write(&file, config).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--allow-command", "sh", "--config"])
        .arg(&file)
        .arg("--root")
        .arg(root);
    HostProcess::spawn(cmd).unwrap()
}

/// `a2e runs ARGS… --root ROOT`.
fn runs(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2e"))
        .arg("runs")
        .args(args)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap()
}

/// The calls that wait, as `a2e runs waiting --json` lists them.
fn waiting(root: &Path) -> Vec<Value> {
    let out = runs(root, &["waiting", "--json"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Polls until `a2e runs waiting` lists a call of `node`; returns it.
fn until_waiting(root: &Path, node: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = waiting(root).into_iter().find(|w| w["node_id"] == node) {
            return found;
        }
        assert!(Instant::now() < end, "`{node}` never waited");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A run_command node appending `id` to `effects`.
fn node(id: &str) -> Value {
    json!({"node_id": id, "kind": "tool", "name": "run_command",
           "input": {"argv": ["sh", "-c", format!("echo {id} >> effects")]}})
}

#[test]
fn a_waiting_call_survives_a_sigkill_and_runs_once_when_approved() {
    let root = tempfile::tempdir().unwrap();
    let mut host = serve(root.path(), "");
    handshake(&mut host, "approver-test");
    let mut b = node("b");
    b["approval"] = json!("required");
    let mut a = node("a");
    a["next_node"] = json!("b");
    b["next_node"] = json!("c");
    let chain = json!({"type": "chain/req", "id": "chain-1", "chain_id": "guarded",
        "entry_node": "a", "nodes": [a, b, node("c")], "streaming": true, "timeout": 600});
    host.send(chain.to_string().as_bytes()).unwrap();

    let held = until_waiting(root.path(), "b");
    // The agent was told, in its chain's events: b waits, for what.
    let waits = loop {
        let event = durable_support::recv(&host);
        if event["node_id"] == "b" && event["phase"] == "waiting" {
            break event;
        }
    };
    assert_eq!(waits["output"]["name"], "run_command", "{waits}");
    assert_eq!(waits["output"]["arguments"]["argv"][2], "echo b >> effects");
    assert_eq!(waits["output"]["run_id"], held["run_id"]);
    assert_eq!(held["waiting"]["name"], "run_command", "{held}");
    assert_eq!(held["waiting"]["args"]["argv"][2], "echo b >> effects");
    assert_eq!(held["waiting"]["reason"], "the node asks for approval");
    let run_id = held["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        effects(root.path()),
        ["a"],
        "b waits, so nothing after a ran"
    );
    let listed = runs(root.path(), &["list", "--status", "waiting"]);
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(
        listed.contains(&run_id) && listed.contains("waiting"),
        "{listed}"
    );

    // SIGKILL while b waits, then a fresh host on the same root: the run
    // resumes and b waits again (it never ran, so it is not `interrupted`).
    drop(host);
    let _host = serve(root.path(), "");
    let again = until_waiting(root.path(), "b");
    assert_eq!(again["run_id"], run_id.as_str());
    assert_eq!(
        again["since_ms"], held["since_ms"],
        "the same wait, not a new one"
    );
    assert_eq!(effects(root.path()), ["a"]);

    let approved = runs(root.path(), &["approve", &run_id, "--node", "b"]);
    assert!(approved.status.success(), "{approved:?}");
    let said = String::from_utf8(approved.stdout).unwrap();
    assert!(
        said.contains("approved") && said.contains("operator:"),
        "{said}"
    );
    // A second decision comes late.
    let late = runs(
        root.path(),
        &["deny", &run_id, "--node", "b", "--reason", "no"],
    );
    assert!(!late.status.success());
    assert!(
        String::from_utf8_lossy(&late.stderr).contains("decided already"),
        "{late:?}"
    );

    let end = Instant::now() + Duration::from_secs(30);
    let state = loop {
        let shown = runs(root.path(), &["show", &run_id]);
        let state: Value = serde_json::from_slice(&shown.stdout).unwrap();
        if state["summary"]["status"] != "running" {
            break state;
        }
        assert!(Instant::now() < end, "the run did not finish: {state}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(state["summary"]["status"], "succeeded", "{state}");
    assert_eq!(effects(root.path()), ["a", "b", "c"], "b ran once");
    let decision = state["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node_id"] == "@decision/b")
        .expect("the decision is journaled");
    assert_eq!(
        decision["outcome"]["output"]["approved"], true,
        "{decision}"
    );
    assert!(waiting(root.path()).is_empty());
}

/// The rules of the next test: `sh` commands wait for a decision (30 s);
/// `write_file` waits one second and is denied; `list_dir` waits one second
/// and runs.
const RULES: &str = r#"
[[approvals]]
tool = "run_command"
program = "sh"
timeout_secs = 30

[[approvals]]
tool = "write_file"
timeout_secs = 1

[[approvals]]
tool = "list_dir"
timeout_secs = 1
on_timeout = "approve"
deciders = ["operator"]
"#;

/// A streaming `tool/call`.
fn call(id: &str, tool: &str, arguments: Value) -> Vec<u8> {
    json!({"type": "tool/call/req", "id": id, "tool_name": tool, "arguments": arguments,
           "streaming": true})
    .to_string()
    .into_bytes()
}

/// The answer to `id`, running `decide` with the run id when the call says
/// it waits.
fn answer_deciding(host: &HostProcess, id: &str, decide: impl Fn(&str)) -> (Value, Vec<Value>) {
    let (resp, events) = host
        .answer(id, Duration::from_secs(60), |line| {
            let msg: Value = serde_json::from_str(line).unwrap();
            if msg["type"] == "tool/event" && msg["data"]["status"] == "waiting_for_approval" {
                decide(msg["data"]["run_id"].as_str().unwrap());
            }
        })
        .unwrap();
    (resp, events)
}

#[test]
fn denied_edited_and_timed_out_calls() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let audit = dir.join("audit.log");
    let config = format!(
        "[audit]\npath = \"{}\"\ninclude_arguments = true\n{RULES}",
        audit.display()
    );
    let mut host = serve(dir, &config);
    handshake(&mut host, "rules-test");

    // Denied: the call fails with `denied` and the reason; nothing ran.
    host.send(&call(
        "c1",
        "run_command",
        json!({"argv": ["sh", "-c", "echo x >> effects"]}),
    ))
    .unwrap();
    let (resp, events) = answer_deciding(&host, "c1", |run| {
        let out = runs(dir, &["deny", run, "--reason", "not on a Friday"]);
        assert!(out.status.success(), "{out:?}");
    });
    assert_eq!(resp["data"]["success"], false, "{resp}");
    assert_eq!(resp["data"]["error_code"], "denied", "{resp}");
    let error = resp.to_string();
    assert!(error.contains("not on a Friday"), "{error}");
    let notice = &events[0]["data"];
    assert_eq!(notice["name"], "run_command");
    assert_eq!(notice["arguments"]["argv"][0], "sh");
    assert!(effects(dir).is_empty());

    // Approved with edited arguments: the edited call runs.
    host.send(&call(
        "c2",
        "run_command",
        json!({"argv": ["sh", "-c", "echo asked >> effects"]}),
    ))
    .unwrap();
    let (resp, _) = answer_deciding(&host, "c2", |run| {
        let args = json!({"argv": ["sh", "-c", "echo edited >> effects"]}).to_string();
        let out = runs(dir, &["approve", run, "--args", &args]);
        assert!(out.status.success(), "{out:?}");
    });
    assert_eq!(resp["data"]["success"], true, "{resp}");
    assert_eq!(effects(dir), ["edited"]);

    // Edited arguments that break the tool's schema are refused.
    host.send(&call(
        "c3",
        "run_command",
        json!({"argv": ["sh", "-c", "echo z >> effects"]}),
    ))
    .unwrap();
    let (resp, _) = answer_deciding(&host, "c3", |run| {
        let out = runs(dir, &["approve", run, "--args", r#"{"argv": 5}"#]);
        assert!(out.status.success(), "{out:?}");
    });
    assert_eq!(resp["type"], "error", "{resp}");
    assert_eq!(resp["code"], "schema_violation", "{resp}");
    assert_eq!(effects(dir), ["edited"]);

    // Nobody decides: denied after its second, or run if the rule says so.
    host.send(&call(
        "w",
        "write_file",
        json!({"path": "out.txt", "content": "x"}),
    ))
    .unwrap();
    let (resp, _) = host.answer("w", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(resp["data"]["error_code"], "approval_timeout", "{resp}");
    assert!(!dir.join("out.txt").exists());
    host.send(&call("l", "list_dir", json!({}))).unwrap();
    let (resp, _) = host.answer("l", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(resp["data"]["success"], true, "{resp}");

    // A call no rule matches does not wait.
    host.send(&call("t", "text_stats", json!({"text": "a b"})))
        .unwrap();
    let (resp, events) = host.answer("t", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(resp["data"]["success"], true, "{resp}");
    assert!(events.is_empty(), "{events:?}");

    // A denied chain node fails with `denied`; its `on_error` goes on.
    let mut x = json!({"node_id": "x", "kind": "tool", "name": "run_command",
        "input": {"argv": ["sh", "-c", "echo x >> effects"]}, "on_error": "skip",
        "next_node": "y"});
    x["approval"] = json!("required");
    let chain = json!({"type": "chain/req", "id": "ch", "entry_node": "x", "streaming": true,
        "timeout": 60, "nodes": [x, {"node_id": "y", "kind": "tool", "name": "text_stats",
        "input": {"text": "still here"}}]});
    host.send(chain.to_string().as_bytes()).unwrap();
    let (resp, events) = host
        .answer("ch", Duration::from_secs(60), |line| {
            let msg: Value = serde_json::from_str(line).unwrap();
            if msg["type"] == "chain/event" && msg["phase"] == "waiting" {
                let run = msg["output"]["run_id"].as_str().unwrap();
                let out = runs(dir, &["deny", run, "--node", "x", "--reason", "no shell"]);
                assert!(out.status.success(), "{out:?}");
            }
        })
        .unwrap();
    assert_eq!(resp["success"], true, "{resp}");
    let x_error = events
        .iter()
        .find(|e| e["node_id"] == "x" && e["phase"] == "error")
        .expect("x failed");
    assert!(
        x_error["error"].as_str().unwrap().contains("no shell"),
        "{x_error}"
    );
    assert_eq!(resp["outputs"]["y"]["words"], 2, "{resp}");
    assert_eq!(effects(dir), ["edited"]);

    // Each decision is an audit line: who, when, what, the arguments approved.
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &Value| l["type"] == "approval")
        .collect();
    let denied = &lines[0];
    assert_eq!(denied["success"], false, "{lines:?}");
    assert_eq!(denied["error_code"], "denied");
    assert!(
        denied["name"]
            .as_str()
            .unwrap()
            .starts_with("run_command by operator:")
    );
    assert!(denied["ts"].as_f64().unwrap() > 0.0);
    let edited = &lines[1];
    assert_eq!(edited["success"], true, "{lines:?}");
    assert_eq!(edited["arguments"]["argv"][2], "echo edited >> effects");

    // Every decision is in the journal: who, what, with which arguments.
    let listed = runs(dir, &["list", "--json"]);
    let approvals: Vec<Value> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "approval")
        .collect();
    assert_eq!(approvals.len(), 5, "{approvals:?}");
}
