//! Forks and replays over the real binary: a chain run journaled by `a2e
//! serve --stdio`, forked with `a2e runs fork` from a middle node — the
//! nodes upstream of it (and beside it) keep their journaled outputs, the
//! same bytes, and are not called again; it and what follows run — and
//! replayed with `a2e runs replay`, which prints what the agent saw.

use crate::durable_support;

use std::path::Path;
use std::process::{Command, Output};

use durable_support::{effects, handshake, serve};
use serde_json::{Value, json};

fn a2e(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(args)
        .args(["--allow-command", "sh", "--root"])
        .arg(root)
        .output()
        .unwrap()
}

/// A run_command node running `script` (which records its id in
/// `effects`).
fn node(id: &str, script: &str) -> Value {
    json!({"node_id": id, "kind": "tool", "name": "run_command",
           "input": {"argv": ["sh", "-c", script]}})
}

/// `stamp` prints a fresh value (its output must be copied, not made
/// again); `use` reads it; `last` follows; `side` runs beside them.
fn chain() -> Value {
    let mut stamp = node(
        "stamp",
        "echo stamp >> effects; cat /proc/sys/kernel/random/uuid",
    );
    stamp["next_node"] = json!("use");
    let mut used = json!({"node_id": "use", "kind": "tool", "name": "run_command",
        "input_map": {"argv": "['sh', '-c', 'echo use >> effects; echo used $0', stamp.output.stdout]"}});
    used["next_node"] = json!("last");
    json!({"type": "chain/req", "id": "chain-f", "chain_id": "forkable", "entry_node": "stamp",
           "streaming": true, "timeout": 120,
           "nodes": [stamp, used, node("last", "echo last >> effects; echo done"),
                     node("side", "echo side >> effects; echo beside")]})
}

/// The fields of a message that say what happened (not its envelope's id
/// and time, which each copy of a message takes anew).
fn what(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(fields) = v.as_object_mut() {
        fields.remove("id");
        fields.remove("ts");
        fields.remove("created_at");
    }
    v
}

#[test]
fn a_fork_keeps_upstream_outputs_and_runs_the_rest_and_a_replay_repeats_the_run() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let mut host = serve(dir);
    handshake(&mut host, "fork-agent");
    host.send(chain().to_string().as_bytes()).unwrap();
    let (answer, events) = host
        .answer("chain-f", std::time::Duration::from_secs(60), |_| {})
        .unwrap();
    assert_eq!(answer["success"], true, "{answer}");
    let run_id = answer["run_id"].as_str().unwrap().to_owned();
    drop(host);
    let mut before = effects(dir);
    before.sort();
    assert_eq!(before, ["last", "side", "stamp", "use"]);

    // Replay: the same events and answer, nothing called.
    let replayed = a2e(dir, &["runs", "replay", &run_id]);
    assert!(replayed.status.success(), "{replayed:?}");
    let lines: Vec<Value> = String::from_utf8(replayed.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<Value> = events.iter().chain([&answer]).map(what).collect();
    let again: Vec<Value> = lines.iter().map(what).collect();
    assert_eq!(again, seen, "the replay is what the agent saw");
    assert_eq!(effects(dir).len(), 4, "a replay calls nothing");

    // Fork from `use`: `stamp` and `side` keep their outputs; `use`, `last` run.
    std::fs::remove_file(dir.join("effects")).unwrap();
    let forked = a2e(dir, &["runs", "fork", &run_id, "--from", "use"]);
    assert!(forked.status.success(), "{forked:?}");
    let resp: Value = serde_json::from_slice(&forked.stdout).unwrap();
    assert_eq!(resp["success"], true, "{resp}");
    let child = resp["run_id"].as_str().unwrap().to_owned();
    assert_ne!(child, run_id);
    assert_eq!(
        effects(dir),
        ["use", "last"],
        "upstream and beside: not called"
    );

    let show = |id: &str| -> Value {
        serde_json::from_slice(&a2e(dir, &["runs", "show", id]).stdout).unwrap()
    };
    let output_of = |state: &Value, node: &str| -> Value {
        state["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node_id"] == node)
            .map(|n| n["outcome"]["output"].clone())
            .unwrap()
    };
    let (parent, fork) = (show(&run_id), show(&child));
    assert_eq!(
        fork["request"]["forked_from"],
        json!({"run_id": run_id, "node_id": "use"})
    );
    for copied in ["stamp", "side"] {
        assert_eq!(
            output_of(&fork, copied).to_string(),
            output_of(&parent, copied).to_string(),
            "`{copied}` keeps the same bytes"
        );
    }
    let stamp = output_of(&parent, "stamp")["stdout"]
        .as_str()
        .unwrap()
        .trim()
        .to_owned();
    let used = output_of(&fork, "use")["stdout"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(used.contains(&stamp), "`use` read the copied stamp: {used}");

    // A fork with a new input for its node; an unknown node is named.
    std::fs::remove_file(dir.join("effects")).unwrap();
    let input = json!({"argv": ["sh", "-c", "echo last-edited >> effects"]}).to_string();
    let edited = a2e(
        dir,
        &["runs", "fork", &run_id, "--from", "last", "--input", &input],
    );
    assert!(edited.status.success(), "{edited:?}");
    assert_eq!(effects(dir), ["last-edited"]);
    let unknown = a2e(dir, &["runs", "fork", &run_id, "--from", "nope"]);
    assert!(!unknown.status.success());
    let said = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        said.contains("no node `nope`") && said.contains("stamp"),
        "{said}"
    );
}

#[test]
fn a_dag_run_forks_from_a_task() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let task = |id: &str| {
        json!({"task_id": id, "capability": "run_command",
               "input": {"type": "json", "data": {"argv": ["sh", "-c", format!("echo {id} >> effects")]}}})
    };
    let dag = json!({"dag_id": "forked_dag",
        "tasks": [task("x"), task("y"), task("z"), task("w")],
        "edges": [{"from": "x", "to": "y"}, {"from": "y", "to": "z"}]});
    let mut host = serve(dir);
    handshake(&mut host, "dag-fork-agent");
    let req = json!({"type": "dag/req", "id": "d1", "dag": dag});
    host.send(req.to_string().as_bytes()).unwrap();
    let (answer, _) = host
        .answer("d1", std::time::Duration::from_secs(60), |_| {})
        .unwrap();
    assert_eq!(answer["success"], true, "{answer}");
    let run_id = answer["run_id"].as_str().unwrap().to_owned();
    drop(host);
    std::fs::remove_file(dir.join("effects")).unwrap();

    let forked = a2e(dir, &["runs", "fork", &run_id, "--from", "y"]);
    assert!(forked.status.success(), "{forked:?}");
    assert_eq!(effects(dir), ["y", "z"], "x and w keep their results");
    let resp: Value = serde_json::from_slice(&forked.stdout).unwrap();
    assert_eq!(resp["success"], true, "{resp}");
    let listed = a2e(dir, &["runs", "list", "--json"]);
    let kinds: Vec<Value> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["run_id"] == resp["run_id"])
        .collect();
    assert_eq!(kinds[0]["kind"], "acmp_dag", "{kinds:?}");
}

#[test]
fn an_ontheia_skill_run_forks_from_a_step() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let steps: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|id| {
            json!({"id": id, "type": "tool", "server": "a2e", "tool": "run_command",
                   "args": {"argv": ["sh", "-c", format!("echo {id} >> effects")]}})
        })
        .collect();
    let text = format!(
        "---\nname: stepped\ndescription: Three steps with side effects\n---\nSteps.\n\n```ontheia\n{}\n```\n",
        json!({ "steps": steps })
    );
    std::fs::create_dir_all(dir.join("skills")).unwrap();
    std::fs::write(dir.join("skills/stepped.md"), text).unwrap();
    let mut host = serve(dir);
    handshake(&mut host, "step-agent");
    let call = json!({"type": "skill/call/req", "id": "s1", "name": "stepped",
                      "arguments": {"input": "go"}});
    host.send(call.to_string().as_bytes()).unwrap();
    let (answer, _) = host
        .answer("s1", std::time::Duration::from_secs(60), |_| {})
        .unwrap();
    assert_eq!(answer["data"]["success"], true, "{answer}");
    drop(host);
    assert_eq!(effects(dir), ["a", "b", "c"]);
    let listed = a2e(dir, &["runs", "list", "--json"]);
    let run: Value = serde_json::from_str(
        String::from_utf8(listed.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(run["kind"], "ontheia", "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    std::fs::remove_file(dir.join("effects")).unwrap();

    let forked = a2e(dir, &["runs", "fork", &run_id, "--from", "b"]);
    assert!(forked.status.success(), "{forked:?}");
    let resp: Value = serde_json::from_slice(&forked.stdout).unwrap();
    assert_eq!(resp["success"], true, "{resp}");
    assert_eq!(
        effects(dir),
        ["b", "c"],
        "step a keeps its journaled result"
    );
}

#[test]
fn a_fork_inside_a_chain_skill_runs_only_what_follows_its_node() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let inner: Vec<Value> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut n = node(id, &format!("echo {id} >> effects; echo {id}"));
            if let Some(next) = ["a", "b", "c"].get(i + 1) {
                n["next_node"] = json!(next);
            }
            n
        })
        .collect();
    let body = json!({"entry_node": "a", "nodes": inner});
    std::fs::create_dir_all(dir.join("skills")).unwrap();
    std::fs::write(
        dir.join("skills/inner.md"),
        format!(
            "---\nname: inner\ndescription: Three steps\n---\nSteps.\n\n```chain\n{body}\n```\n"
        ),
    )
    .unwrap();
    let mut first = node("n1", "echo n1 >> effects");
    first["next_node"] = json!("s");
    let chain = json!({"type": "chain/req", "id": "outer", "chain_id": "outer", "entry_node": "n1",
        "nodes": [first,
                  {"node_id": "s", "kind": "skill", "name": "inner", "next_node": "n3"},
                  node("n3", "echo n3 >> effects")]});
    let mut host = serve(dir);
    handshake(&mut host, "nest-agent");
    host.send(chain.to_string().as_bytes()).unwrap();
    let (answer, _) = host
        .answer("outer", std::time::Duration::from_secs(60), |_| {})
        .unwrap();
    assert_eq!(answer["success"], true, "{answer}");
    drop(host);
    assert_eq!(effects(dir), ["n1", "a", "b", "c", "n3"]);
    let run_id = answer["run_id"].as_str().unwrap().to_owned();
    let shown: Value =
        serde_json::from_slice(&a2e(dir, &["runs", "show", &run_id]).stdout).unwrap();
    let ids: Vec<&str> = shown["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"s/a") && ids.contains(&"s/@chain"), "{ids:?}");

    std::fs::remove_file(dir.join("effects")).unwrap();
    let forked = a2e(dir, &["runs", "fork", &run_id, "--from", "s/b"]);
    assert!(forked.status.success(), "{forked:?}");
    assert_eq!(
        effects(dir),
        ["b", "c", "n3"],
        "n1 and the skill's a are not called"
    );
    let resp: Value = serde_json::from_slice(&forked.stdout).unwrap();
    assert_eq!(resp["success"], true, "{resp}");
    assert_eq!(resp["outputs"]["s"], answer["outputs"]["s"]);
}
