//! `a2e runs` for people, over the real binary: the list's header row and
//! columns (the chain id, the request id), a `running` run whose host died
//! marked orphaned, `runs show`'s nodes in start order with `ok` a boolean,
//! a missing journal named, and in a cluster the journal found from
//! `--cluster` or `A2E_CLUSTER` (for `runs` and `graph --run`), the host
//! of each node shown, and a take-over logged without `A2E_LOG`.

use crate::cluster_support::{Cluster, SERIAL, chain_named, wait_marked};
use crate::durable_support::{handshake, kill_marked, recv, serve};

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn a2e(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(args)
        .arg("--root")
        .arg(root)
        .env_remove("A2E_CLUSTER")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A marker argument of the sleeping node, found through /proc.
const ORPHAN_MARK: &str = "30.0711";

#[test]
fn runs_list_has_a_header_and_ids_and_marks_a_run_whose_host_died() {
    let root = tempfile::tempdir().unwrap();
    let mut host = serve(root.path());
    handshake(&mut host, "list-agent");
    let req = json!({
        "type": "chain/req", "id": "req-7", "chain_id": "orphan_chain",
        "entry_node": "a", "streaming": true, "timeout": 300,
        "nodes": [
            {"node_id": "a", "kind": "tool", "name": "list_dir", "input": {}, "next_node": "b"},
            {"node_id": "b", "kind": "tool", "name": "run_command",
             "input": {"argv": ["sh", "-c", format!("exec sleep {ORPHAN_MARK}")], "timeout": 120}}
        ]
    });
    host.send(req.to_string().as_bytes()).unwrap();
    loop {
        let event = recv(&host);
        if event["node_id"] == "b" && event["phase"] == "start" {
            break;
        }
    }

    // A live host runs it: not orphaned.
    let out = a2e(root.path(), &["runs", "list"]);
    let listed = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut lines = listed.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "RUN", "KIND", "STATUS", "AGE", "EVENTS", "AGENT", "CHAIN", "REQUEST"
        ]
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[1..3], ["chain", "running"], "{listed}");
    assert_eq!(
        row[5..8],
        ["list-agent", "orphan_chain", "req-7"],
        "{listed}"
    );
    assert!(!listed.contains("orphaned"), "{listed}");
    let run_id = row[0].to_owned();
    let out = a2e(root.path(), &["runs", "list", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["run_id"], run_id.as_str());
    assert_eq!(json["chain_id"], "orphan_chain");
    assert_eq!(json["request_id"], "req-7");
    assert_eq!(json["orphaned"], false);

    // SIGKILL: the run stays `running` with no host.
    drop(host);
    kill_marked(ORPHAN_MARK);
    let out = a2e(root.path(), &["runs", "list"]);
    let listed = text(&out.stdout);
    let row = listed.lines().nth(1).unwrap();
    assert!(
        row.contains("running") && row.contains("orphaned since "),
        "{listed}"
    );
    let out = a2e(root.path(), &["runs", "list", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["orphaned"], true, "{json}");
    assert!(json["orphaned_since_ms"].as_u64().is_some(), "{json}");

    // `runs show`: nodes in start order, `ok` a boolean, the run orphaned.
    let out = a2e(root.path(), &["runs", "show", &run_id]);
    let state: Value = serde_json::from_slice(&out.stdout).unwrap();
    let nodes: Vec<&str> = state["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node_id"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["a", "b"], "{state}");
    assert_eq!(state["nodes"][0]["outcome"]["ok"], true, "{state}");
    assert_eq!(state["orphaned"], true, "{state}");
}

#[test]
fn runs_on_a_root_without_a_journal_say_where_they_looked() {
    let root = tempfile::tempdir().unwrap();
    for args in [&["runs", "list"][..], &["runs", "list", "--json"]] {
        let out = a2e(root.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("no run journal at") && err.contains("A2E_CLUSTER"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
}

/// A cluster of one host: a chain it ran, then `runs` and `graph --run`
/// pointed at the cluster by flag and by variable, with no configuration.
#[test]
fn runs_and_graph_find_the_cluster_from_the_flag_or_the_environment() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    let mut host = cluster.host("[\"*\"]", 5);
    let nodes = [("x", "echo x >> effects".to_owned())];
    let req = chain_named("req-c", "in_cluster", &nodes);
    host.process.send(req.to_string().as_bytes()).unwrap();
    let (answer, _) = host
        .process
        .answer("req-c", Duration::from_secs(60), |_| {})
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    assert_eq!(answer["success"], true, "{answer}");
    let url = cluster.nats.url();
    let root = cluster.root.path();

    let by_flag = a2e(root, &["runs", "list", "--cluster", &url]);
    let listed = text(&by_flag.stdout);
    assert!(by_flag.status.success(), "{}", text(&by_flag.stderr));
    let row = listed
        .lines()
        .find(|l| l.contains("in_cluster"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        row.contains("req-c") && row.contains("succeeded"),
        "{listed}"
    );
    let run_id = row.split_whitespace().next().unwrap().to_owned();

    let by_env = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "show", &run_id, "--root"])
        .arg(root)
        .env("A2E_CLUSTER", &url)
        .output()
        .unwrap();
    assert!(by_env.status.success(), "{}", text(&by_env.stderr));
    let state: Value = serde_json::from_slice(&by_env.stdout).unwrap();
    assert_eq!(state["summary"]["run_id"], run_id.as_str());
    // The host that ran the node is named, and so is the one that
    // coordinated the run, though it finished and holds no lease.
    assert_eq!(
        state["nodes"][0]["start"]["host"],
        host.name.as_str(),
        "{state}"
    );
    assert_eq!(state["coordinator"], host.name.as_str(), "{state}");

    let file = cluster.logs.path().join("chain.json");
    std::fs::write(&file, req.to_string()).unwrap();
    let graph = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args([
            "graph",
            file.to_str().unwrap(),
            "--format",
            "dot",
            "--run",
            &run_id,
        ])
        .arg("--root")
        .arg(root)
        .env("A2E_CLUSTER", &url)
        .output()
        .unwrap();
    assert!(graph.status.success(), "{}", text(&graph.stderr));
    assert!(text(&graph.stdout).contains("digraph"));
}

const TAKEOVER_MARK: &str = "30.0712";

/// The coordinator of a run is killed; the host that takes the run over
/// says so on stderr with the default log filter.
#[test]
fn a_take_over_is_logged_without_a2e_log() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    let mut hosts = Vec::new();
    for serve in ["[]", "[\"*\"]"] {
        let (mut cmd, name) = cluster.command(serve, 5);
        cmd.env_remove("A2E_LOG");
        let mut process = conformance::child::HostProcess::spawn(cmd).unwrap();
        handshake(&mut process, "cluster-agent");
        hosts.push(crate::cluster_support::Host { process, name });
    }
    let nodes = [
        ("s", format!("exec sleep {TAKEOVER_MARK}")),
        ("t", "echo t >> effects".to_owned()),
    ];
    let req = chain_named("req-t", "taken", &nodes);
    hosts[0].process.send(req.to_string().as_bytes()).unwrap();
    assert!(
        wait_marked(&hosts, TAKEOVER_MARK, Duration::from_secs(60)).is_some(),
        "{}",
        cluster.logs()
    );
    let coordinator = hosts.remove(0);
    drop(coordinator); // SIGKILL
    let log = cluster.logs.path().join(format!("{}.log", hosts[0].name));
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("taking the run over") {
            assert!(text.contains(" INFO "), "{text}");
            break;
        }
        assert!(Instant::now() < end, "{}", cluster.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
    kill_marked(TAKEOVER_MARK);
}
