//! Memory over the real binary (`a2e serve --stdio`): the three tools, their use
//! in a chain, isolation between agents, bad input, and durability of
//! acknowledged writes across a SIGKILL of the host.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use conformance::child::HostProcess;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

fn start(root: &Path, agent: &str) -> HostProcess {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--root"]).arg(root);
    let mut host = HostProcess::spawn(cmd).unwrap();
    let hs = json!({"type": "handshake/req", "id": "hs", "agent_id": agent});
    host.send(hs.to_string().as_bytes()).unwrap();
    let (resp, _) = host.answer("hs", WAIT, |_| {}).unwrap();
    assert_eq!(resp["ok"], true, "{resp}");
    host
}

fn call(host: &mut HostProcess, id: &str, tool: &str, arguments: Value) -> Value {
    let req = json!({"type": "tool/call/req", "id": id, "tool_name": tool, "arguments": arguments});
    host.send(req.to_string().as_bytes()).unwrap();
    host.answer(id, WAIT, |_| {}).unwrap().0
}

fn ok_data(answer: &Value) -> &Value {
    assert_eq!(answer["type"], "tool/call/resp", "{answer}");
    assert_eq!(answer["data"]["success"], true, "{answer}");
    &answer["data"]["data"]
}

#[test]
fn write_search_delete_and_isolation_between_agents() {
    let root = tempfile::tempdir().unwrap();
    let mut me = start(root.path(), "planner");
    let written = call(
        &mut me,
        "w1",
        "memory_write",
        json!({"namespace": "agent.planner.notes", "content": "The deploy window is Tuesday 14:00.",
               "metadata": {"source": "standup"}}),
    );
    let id = ok_data(&written)["id"].as_str().unwrap().to_owned();
    let found = call(
        &mut me,
        "s1",
        "memory_search",
        json!({"query": "when is the deploy", "namespaces": ["agent.planner.notes"]}),
    );
    let hits = &ok_data(&found)["hits"];
    assert_eq!(hits[0]["id"], id.as_str(), "{found}");
    assert_eq!(hits[0]["metadata"]["source"], "standup");
    assert_eq!(hits[0]["score"]["kind"], "bm25");

    // Another agent may not read or write the planner's namespace.
    let mut other = start(root.path(), "intruder");
    for (rid, tool, args) in [
        (
            "x1",
            "memory_search",
            json!({"query": "deploy", "namespaces": ["agent.planner.notes"]}),
        ),
        (
            "x2",
            "memory_write",
            json!({"namespace": "agent.planner.notes", "content": "mine now"}),
        ),
    ] {
        let refused = call(&mut other, rid, tool, args);
        assert_eq!(refused["type"], "error", "{refused}");
        assert_eq!(refused["code"], "unauthorized", "{refused}");
    }
    // Its own namespace works; the planner's memory is not there.
    let own = call(
        &mut other,
        "x3",
        "memory_search",
        json!({"query": "deploy", "namespaces": ["agent.intruder.notes"]}),
    );
    assert_eq!(ok_data(&own)["hits"], json!([]));

    let deleted = call(
        &mut me,
        "d1",
        "memory_delete",
        json!({"id": id, "namespace": "agent.planner.notes"}),
    );
    ok_data(&deleted);
    let gone = call(
        &mut me,
        "s2",
        "memory_search",
        json!({"query": "deploy", "namespaces": ["agent.planner.notes"]}),
    );
    assert_eq!(ok_data(&gone)["hits"], json!([]));
    // Both sessions are still served.
    for (host, rid) in [(&mut me, "p1"), (&mut other, "p2")] {
        host.send(json!({"type": "ping", "id": rid}).to_string().as_bytes())
            .unwrap();
        assert_eq!(host.answer(rid, WAIT, |_| {}).unwrap().0["type"], "pong");
    }
}

#[test]
fn bad_input_is_refused_with_a_specific_code_and_the_host_keeps_serving() {
    let root = tempfile::tempdir().unwrap();
    let mut host = start(root.path(), "a1");
    let big = "x".repeat(17 * 1024);
    let cases = [
        (
            "b1",
            "memory_write",
            json!({"namespace": "agent.a1.n", "content": big}),
            "schema_violation",
        ),
        (
            "b2",
            "memory_write",
            json!({"namespace": "agent.a1.*", "content": "x"}),
            "schema_violation",
        ),
        (
            "b3",
            "memory_write",
            json!({"namespace": "../../etc", "content": "x"}),
            "schema_violation",
        ),
        (
            "b4",
            "memory_write",
            json!({"namespace": "agent.a1.n' OR 1=1 --", "content": "x"}),
            "schema_violation",
        ),
        (
            "b5",
            "memory_search",
            json!({"query": "x", "namespaces": ["agent.a1.n"], "top_k": 0}),
            "schema_violation",
        ),
        (
            "b6",
            "memory_write",
            json!({"namespace": "agent.a1.n"}),
            "schema_violation",
        ),
        (
            "b7",
            "memory_search",
            json!({"query": "x", "namespaces": "agent.a1.n"}),
            "schema_violation",
        ),
    ];
    for (rid, tool, args, code) in cases {
        let answer = call(&mut host, rid, tool, args);
        assert_eq!(answer["type"], "error", "{rid}: {answer}");
        assert_eq!(answer["code"], code, "{rid}: {answer}");
    }
    // top_k 1000 is clamped to 20, not refused.
    for i in 0..25 {
        let w = call(
            &mut host,
            &format!("w{i}"),
            "memory_write",
            json!({"namespace": "agent.a1.many", "content": format!("note number {i} about cats")}),
        );
        ok_data(&w);
    }
    let many = call(
        &mut host,
        "s",
        "memory_search",
        json!({"query": "cats", "namespaces": ["agent.a1.many"], "top_k": 1000}),
    );
    assert_eq!(ok_data(&many)["hits"].as_array().unwrap().len(), 20);
    host.send(br#"{"type":"ping","id":"alive"}"#).unwrap();
    assert_eq!(
        host.answer("alive", WAIT, |_| {}).unwrap().0["type"],
        "pong"
    );
}

#[test]
fn acknowledged_writes_survive_a_sigkill_of_the_host() {
    let root = tempfile::tempdir().unwrap();
    let mut host = start(root.path(), "a1");
    let mut ids = Vec::new();
    for i in 0..40 {
        let w = call(
            &mut host,
            &format!("w{i}"),
            "memory_write",
            json!({"namespace": "agent.a1.log", "content": format!("entry {i} of the durable log")}),
        );
        ids.push(ok_data(&w)["id"].as_str().unwrap().to_owned());
    }
    // No shutdown: the process dies the moment the last write was acknowledged.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(host.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(host.wait_exit(WAIT).is_some());
    let mut again = start(root.path(), "a1");
    let found = call(
        &mut again,
        "s",
        "memory_search",
        json!({"query": "durable log", "namespaces": ["agent.a1.log"], "top_k": 20}),
    );
    assert_eq!(ok_data(&found)["hits"].as_array().unwrap().len(), 20);
    // Every acknowledged id is there (searched in pages of the newest 20 by id).
    for id in &ids {
        let d = call(
            &mut again,
            &format!("d-{id}"),
            "memory_delete",
            json!({"id": id}),
        );
        ok_data(&d);
    }
}

#[test]
fn a_chain_writes_and_searches_memory() {
    let root = tempfile::tempdir().unwrap();
    let mut host = start(root.path(), "chainer");
    let chain = json!({
        "type": "chain/req", "id": "c1", "entry_node": "write", "streaming": false,
        "initial_input": {"fact": "The office plant is called Gerald."},
        "nodes": [
            {"node_id": "write", "kind": "tool", "name": "memory_write",
             "input": {"namespace": "agent.chainer.facts"},
             "input_map": {"content": "input.fact"}, "next_node": "search"},
            {"node_id": "search", "kind": "tool", "name": "memory_search",
             "input": {"query": "plant name", "namespaces": ["agent.chainer.facts"]}}
        ]
    });
    host.send(chain.to_string().as_bytes()).unwrap();
    let (resp, _) = host.answer("c1", WAIT, |_| {}).unwrap();
    assert_eq!(resp["type"], "chain/resp", "{resp}");
    assert_eq!(resp["success"], true, "{resp}");
    let hits = &resp["outputs"]["search"]["hits"];
    assert_eq!(
        hits[0]["content"], "The office plant is called Gerald.",
        "{resp}"
    );
}

#[test]
fn the_command_line_writes_searches_and_lists_memory() {
    let root = tempfile::tempdir().unwrap();
    let a2e = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
            .args(args)
            .arg("--root")
            .arg(root.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let written = a2e(&[
        "memory",
        "write",
        "agent.ops.notes",
        "The backup runs at 02:00.",
        "--metadata",
        r#"{"source":"cli"}"#,
    ]);
    let id = written["id"].as_str().unwrap().to_owned();
    // Every namespace is searched when none is named: the command line is for people.
    let found = a2e(&["memory", "search", "backup"]);
    assert_eq!(found["hits"][0]["id"], id.as_str(), "{found}");
    assert_eq!(found["hits"][0]["metadata"]["source"], "cli");
    let listed = a2e(&["memory", "list"]);
    assert_eq!(
        listed,
        json!([{"namespace": "agent.ops.notes", "count": 1}])
    );
    // An agent's session sees the same store under its own namespaces.
    let mut host = start(root.path(), "ops");
    let hit = call(
        &mut host,
        "s",
        "memory_search",
        json!({"query": "backup", "namespaces": ["agent.ops.notes"]}),
    );
    assert_eq!(ok_data(&hit)["hits"][0]["id"], id.as_str());
}
