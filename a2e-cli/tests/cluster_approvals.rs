//! Approvals in a cluster: a node that asks for a decision waits on the
//! worker that took it, journaled in the cluster; its coordinator is killed
//! and another host takes the run over; `a2e runs approve`, run on none of
//! the hosts, approves it; the node runs once and the run completes.

use crate::cluster_support;

use std::process::Command;
use std::time::{Duration, Instant};

use cluster_support::{Cluster, SERIAL, append, chain, count};
use serde_json::{Value, json};

#[test]
fn a_node_waiting_in_a_cluster_survives_its_coordinator_and_is_approved_from_anywhere() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    let coordinator = cluster.host("[]", 5);
    let _workers = [cluster.host("[\"*\"]", 5), cluster.host("[\"*\"]", 5)];
    let mut req = chain(
        "run-approve",
        &[("a", append("a")), ("b", append("b")), ("c", append("c"))],
    );
    req["nodes"][1]["approval"] = json!("required");
    let mut coordinator = coordinator;
    coordinator
        .process
        .send(req.to_string().as_bytes())
        .unwrap();

    // `a2e runs` on the cluster's journal, from no host of it.
    let config = cluster.logs.path().join("host2.toml");
    let root = cluster.root.path().to_owned();
    let a2e = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_a2e"))
            .arg("runs")
            .args(args)
            .arg("--config")
            .arg(&config)
            .arg("--root")
            .arg(&root)
            .output()
            .unwrap()
    };
    let waiting_b = || -> Option<Value> {
        let out = a2e(&["waiting", "--json"]);
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|w| w["node_id"] == "b")
    };
    let end = Instant::now() + Duration::from_secs(60);
    let held = loop {
        if let Some(found) = waiting_b() {
            break found;
        }
        assert!(Instant::now() < end, "b never waited\n{}", cluster.logs());
        std::thread::sleep(Duration::from_millis(100));
    };
    let run_id = held["run_id"].as_str().unwrap().to_owned();
    assert_eq!(cluster.effects(), ["a"]);

    // The coordinator dies; another host takes the run over, b still waits.
    drop(coordinator);
    let _other = cluster.host("[]", 5);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        waiting_b().map(|w| w["since_ms"].clone()),
        Some(held["since_ms"].clone()),
        "{}",
        cluster.logs()
    );

    let approved = a2e(&["approve", &run_id, "--node", "b"]);
    assert!(approved.status.success(), "{approved:?}");
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let shown = a2e(&["show", &run_id]);
        let state: Value = serde_json::from_slice(&shown.stdout).unwrap();
        if state["summary"]["status"] == "succeeded" {
            break;
        }
        assert!(
            Instant::now() < end,
            "the run did not finish: {state}\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let effects = cluster.effects();
    assert_eq!(count(&effects, "b"), 1, "b ran once: {effects:?}");
    assert_eq!(effects, ["a", "b", "c"], "{}", cluster.logs());
}
