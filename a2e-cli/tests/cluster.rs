//! A cluster over the real binary: nats-server (JetStream on a free loopback
//! port, a temporary store) and three or four `a2e serve --stdio` hosts
//! sharing one root. Every node appends a line to `effects` (its side
//! effect), so the tests count how often each ran.
//!
//! - A worker is killed (SIGKILL) while it runs a node: the node is
//!   delivered again to another worker, the chain succeeds, every other
//!   node ran once.
//! - The coordinator is killed mid-run: another host takes the run over and
//!   completes it; an agent attached to another host gets every event once
//!   and the answer.
//! - A poison node (its worker dies on every delivery) fails with
//!   `worker_lost` after `max_deliver` deliveries.
//! - An agent attached to a host that runs no nodes follows a run whose
//!   coordinator and workers are the other hosts.
//! - nats-server is stopped for a second and started again while a node
//!   runs: the run pauses, then completes; no node runs twice.
//! - A run that times out while a node runs on a worker: the worker stops
//!   the node's process.
//! - Map items whose template sets a timeout longer than the hosts' tool
//!   default run to the end on the workers: the node's deadline goes with it.
//! - An ACMP DAG (`dag/req`) and an Ontheia skill call run on a coordinator
//!   that is killed mid-run: another host takes both over from JetStream.

use crate::cluster_support;

use std::process::Command;
use std::time::{Duration, Instant};

use a2e_host::proc::pids_with_arg;
use cluster_support::*;
use serde_json::{Value, json};

#[test]
fn a_killed_workers_node_is_delivered_again_and_every_other_node_runs_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    const MARK: &str = "30.0611";
    let mut coordinator = cluster.host("[]", 5);
    let mut workers = vec![cluster.host("[\"*\"]", 5), cluster.host("[\"*\"]", 5)];
    let c = format!(
        "echo c >> effects; if [ ! -e c.slept ]; then touch c.slept; exec sleep {MARK}; fi"
    );
    let nodes = [
        ("a", append("a")),
        ("b", append("b")),
        ("c", c),
        ("d", append("d")),
        ("e", append("e")),
    ];
    let req = chain("run-1", &nodes);
    coordinator
        .process
        .send(req.to_string().as_bytes())
        .unwrap();

    let victim = wait_marked(&workers, MARK, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("c never ran on a worker\n{}", cluster.logs()));
    let killed = workers.remove(victim);
    let killed_name = killed.name.clone();
    let at = Instant::now();
    drop(killed); // SIGKILL
    kill_marked(MARK);
    // The node is delivered again (after ack_wait) to the other worker.
    while count(&cluster.effects(), "c") < 2 {
        assert!(
            at.elapsed() < Duration::from_secs(30),
            "c was not delivered again\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let redelivered = at.elapsed();
    let (answer, events) = coordinator
        .process
        .answer("run-1", Duration::from_secs(60), |_| {})
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    assert_eq!(answer["success"], true, "{answer}\n{}", cluster.logs());
    assert_eq!(
        cluster.effects(),
        ["a", "b", "c", "c", "d", "e"],
        "{}",
        cluster.logs()
    );
    assert_eq!(seqs(&events), (0..events.len() as u64).collect::<Vec<_>>());
    eprintln!(
        "FIGURE worker SIGKILL ({killed_name}) to redelivery of its node: {} ms (ack_wait 2 s)",
        redelivered.as_millis()
    );
    drop(workers);
}

#[test]
fn a_killed_coordinators_run_is_completed_by_another_host() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    const MARK: &str = "3.0612";
    let mut coordinator = cluster.host("[]", 5);
    let workers = [cluster.host("[\"*\"]", 5), cluster.host("[\"*\"]", 5)];
    let nodes = [
        ("a", append("a")),
        ("b", format!("echo b >> effects; exec sleep {MARK}")),
        ("c", append("c")),
        ("d", append("d")),
    ];
    let req = chain("run-2", &nodes);
    coordinator
        .process
        .send(req.to_string().as_bytes())
        .unwrap();
    wait_marked(&workers, MARK, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("b never ran on a worker\n{}", cluster.logs()));
    let at = Instant::now();
    drop(coordinator); // SIGKILL while b runs

    // The same agent on another host attaches to the run by its request id.
    let mut other = cluster.host("[]", 5);
    let attach = json!({"type": "chain/attach", "id": "att", "chain_req_id": "run-2"});
    other.process.send(attach.to_string().as_bytes()).unwrap();
    let (answer, events) = other
        .process
        .answer("att", Duration::from_secs(60), |_| {})
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    assert_eq!(answer["type"], "chain/resp", "{answer}");
    assert_eq!(answer["success"], true, "{answer}\n{}", cluster.logs());
    eprintln!(
        "FIGURE coordinator SIGKILL to the run's answer on another host: {} ms (lease 2 s)",
        at.elapsed().as_millis()
    );
    assert_eq!(seqs(&events), (0..events.len() as u64).collect::<Vec<_>>());
    let last = events.last().unwrap();
    assert_eq!(last["node_id"], "d", "{events:?}");
    // No node ran twice because of the take-over.
    assert_eq!(
        cluster.effects(),
        ["a", "b", "c", "d"],
        "{}",
        cluster.logs()
    );
}

#[test]
fn a_run_pauses_while_nats_server_restarts_and_then_completes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    const MARK: &str = "3.0614";
    let mut coordinator = cluster.host("[]", 5);
    let workers = [cluster.host("[\"*\"]", 5)];
    let nodes = [
        ("a", append("a")),
        ("b", format!("echo b >> effects; exec sleep {MARK}")),
        ("c", append("c")),
        ("d", append("d")),
    ];
    let req = chain("run-4", &nodes);
    coordinator
        .process
        .send(req.to_string().as_bytes())
        .unwrap();
    wait_marked(&workers, MARK, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("b never ran on a worker\n{}", cluster.logs()));
    // The server goes away for a second while b runs (same port, same store).
    cluster.nats.stop();
    std::thread::sleep(Duration::from_secs(1));
    cluster.nats.restart();
    let (answer, events) = coordinator
        .process
        .answer("run-4", Duration::from_secs(90), |_| {})
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    assert_eq!(answer["success"], true, "{answer}\n{}", cluster.logs());
    assert_eq!(seqs(&events), (0..events.len() as u64).collect::<Vec<_>>());
    // Nothing lost, nothing run again.
    assert_eq!(
        cluster.effects(),
        ["a", "b", "c", "d"],
        "{}",
        cluster.logs()
    );
}

#[test]
fn a_timed_out_run_stops_its_node_on_the_worker() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    const MARK: &str = "60.0615";
    let mut coordinator = cluster.host("[]", 5);
    let workers = [cluster.host("[\"*\"]", 5)];
    let nodes = [
        ("a", append("a")),
        ("b", format!("echo b >> effects; exec sleep {MARK}")),
        ("c", append("c")),
    ];
    let mut req = chain("run-5", &nodes);
    req["timeout"] = json!(4);
    coordinator
        .process
        .send(req.to_string().as_bytes())
        .unwrap();
    wait_marked(&workers, MARK, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("b never ran on a worker\n{}", cluster.logs()));
    let (answer, _) = coordinator
        .process
        .answer("run-5", Duration::from_secs(60), |_| {})
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    assert_eq!(answer["success"], false, "{answer}");
    // The worker stops b's process when the coordinator gives up on it.
    let end = Instant::now() + Duration::from_secs(15);
    while !pids_with_arg(MARK).is_empty() {
        assert!(
            Instant::now() < end,
            "b still runs on its worker after the run timed out\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(cluster.effects(), ["a", "b"], "{}", cluster.logs());
}

#[test]
fn a_poison_node_fails_after_max_deliver() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    const MARK: &str = "30.0613";
    let mut coordinator = cluster.host("[]", 2);
    let mut workers = vec![cluster.host("[\"*\"]", 2), cluster.host("[\"*\"]", 2)];
    let nodes = [("p", format!("echo p >> effects; exec sleep {MARK}"))];
    let req = chain("run-3", &nodes);
    coordinator
        .process
        .send(req.to_string().as_bytes())
        .unwrap();
    // Whichever worker runs the node dies; a new worker replaces it.
    let end = Instant::now() + Duration::from_secs(90);
    let answer = loop {
        assert!(Instant::now() < end, "no answer\n{}", cluster.logs());
        if let Ok(line) = coordinator.process.recv_line(Duration::from_millis(50)) {
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg["type"] == "chain/resp" {
                break msg;
            }
        }
        if let Some(i) = pids_with_arg(MARK)
            .into_iter()
            .find_map(|p| owner(&workers, p))
        {
            drop(workers.remove(i));
            kill_marked(MARK);
            workers.push(cluster.host("[\"*\"]", 2));
        }
    };
    kill_marked(MARK);
    assert_eq!(answer["success"], false, "{answer}");
    assert!(
        answer.to_string().contains("worker_lost"),
        "{answer}\n{}",
        cluster.logs()
    );
    // Delivered max_deliver (2) times, not more.
    assert_eq!(cluster.effects(), ["p", "p"], "{}", cluster.logs());
}

#[test]
fn an_agent_on_one_host_follows_a_run_executing_on_the_others() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    // A runs nothing; B coordinates and runs nodes with C.
    let mut a = cluster.host("[]", 5);
    let mut b = cluster.host("[\"*\"]", 5);
    let _c = cluster.host("[\"*\"]", 5);
    let nodes: Vec<(String, String)> = (1..=6)
        .map(|i| {
            let id = format!("n{i}");
            let script = format!("echo {id} >> effects; sleep 0.3");
            (id, script)
        })
        .collect();
    let nodes: Vec<(&str, String)> = nodes.iter().map(|(i, s)| (i.as_str(), s.clone())).collect();
    let req = chain("run-4", &nodes);
    b.process.send(req.to_string().as_bytes()).unwrap();
    // Once the run is under way, the agent attaches on A.
    let first = b.process.recv_line(Duration::from_secs(30)).unwrap();
    assert!(first.contains("chain/event"), "{first}");
    let attach = json!({"type": "chain/attach", "id": "att", "chain_req_id": "run-4"});
    a.process.send(attach.to_string().as_bytes()).unwrap();
    let (followed, followed_events) = a
        .process
        .answer("att", Duration::from_secs(60), |_| {})
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    let (answer, mut events) = b
        .process
        .answer("run-4", Duration::from_secs(60), |_| {})
        .unwrap();
    events.insert(0, serde_json::from_str(&first).unwrap());
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(followed["success"], true, "{followed}");
    assert_eq!(followed["outputs"], answer["outputs"]);
    // Every event once, in order, the same as the coordinator's agent saw.
    assert_eq!(seqs(&followed_events), seqs(&events));
    let phases = |evs: &[Value]| -> Vec<String> {
        evs.iter()
            .map(|e| format!("{}:{}", e["node_id"], e["phase"]))
            .collect()
    };
    assert_eq!(phases(&followed_events), phases(&events));
    assert_eq!(cluster.effects().len(), 6);
    // The nodes ran on the workers B and C (A serves no toolkit).
    let ran = |name: &str| {
        std::fs::read_to_string(cluster.logs.path().join(format!("{name}.log")))
            .unwrap_or_default()
            .matches("running a node")
            .count()
    };
    assert_eq!(ran("host1"), 0, "{}", cluster.logs());
    assert_eq!(ran("host2") + ran("host3"), 6, "{}", cluster.logs());

    // The same from a2e-client, on a fourth host.
    let (cmd, _) = cluster.command("[]", 5);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (resp, client_events) = rt.block_on(async {
        let client = a2e_client::Client::builder()
            .agent_id("cluster-agent")
            .connect_stdio(cmd)
            .await
            .unwrap();
        let call = client
            .chains()
            .attach(
                a2e_client::AttachTarget::ChainRequest("run-4".into()),
                0,
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        let mut got = Vec::new();
        let resp = call.finish_with(|e| got.push(e.seq)).await.unwrap();
        (resp, got)
    });
    assert!(resp.success, "{resp:?}");
    assert_eq!(client_events, seqs(&events));
    // An unknown run is refused with its code.
    let (cmd, _) = cluster.command("[]", 5);
    let refused = rt.block_on(async {
        let client = a2e_client::Client::builder()
            .agent_id("cluster-agent")
            .connect_stdio(cmd)
            .await
            .unwrap();
        client
            .chains()
            .attach(
                a2e_client::AttachTarget::Run("0123456789abcdef0123456789abcdef".into()),
                0,
                Duration::from_secs(30),
            )
            .await
            .unwrap()
            .finish()
            .await
            .unwrap_err()
    });
    assert!(refused.to_string().contains("unknown_run"), "{refused}");
}

#[test]
fn a_detached_run_is_taken_by_a_host_and_followed_with_runs_attach() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    let _b = cluster.host("[\"*\"]", 5);
    let config = cluster.logs.path().join("host1.toml");
    let file = cluster.logs.path().join("chain.json");
    let nodes = [("x", append("x")), ("y", append("y"))];
    std::fs::write(&file, chain("run-5", &nodes).to_string()).unwrap();
    let a2e = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_a2e"))
            .args(args)
            .arg("--config")
            .arg(&config)
            .arg("--root")
            .arg(cluster.root.path())
            .output()
            .unwrap()
    };
    let detached = a2e(&["run", file.to_str().unwrap(), "--detach"]);
    assert!(
        detached.status.success(),
        "{}",
        String::from_utf8_lossy(&detached.stderr)
    );
    let run_id = String::from_utf8(detached.stdout)
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(run_id.len(), 32, "{run_id}");

    let attached = a2e(&["runs", "attach", &run_id]);
    let out = String::from_utf8(attached.stdout).unwrap();
    assert!(attached.status.success(), "{out}\n{}", cluster.logs());
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answer = lines.last().unwrap();
    assert_eq!(answer["type"], "chain/resp", "{answer}");
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(seqs(&lines[..lines.len() - 1]), [0, 1, 2, 3]);
    assert_eq!(cluster.effects(), ["x", "y"]);

    let listed = a2e(&["runs", "list"]);
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(
        listed.contains(&run_id) && listed.contains("succeeded"),
        "{listed}"
    );
    // Without a cluster, --detach is refused with a clear message.
    let alone = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["run", file.to_str().unwrap(), "--detach", "--root"])
        .arg(cluster.root.path())
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("[cluster] nats_url"));
}

/// Steps (or tasks) `{prefix}a` … `{prefix}d` of `run_command`, each
/// appending its id to `effects`; `{prefix}c` then sleeps with `mark`.
fn scripts(prefix: &str, mark: &str) -> Vec<(String, String)> {
    ["a", "b", "c", "d"]
        .iter()
        .map(|id| {
            let id = format!("{prefix}{id}");
            let script = if id.ends_with('c') {
                format!("echo {id} >> effects; exec sleep {mark}")
            } else {
                append(&id)
            };
            (id, script)
        })
        .collect()
}

#[test]
fn a_killed_coordinators_dag_and_skill_runs_are_completed_by_another_host() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    const SKILL_MARK: &str = "3.0631";
    const DAG_MARK: &str = "3.0632";
    let steps: Vec<Value> = scripts("s", SKILL_MARK)
        .into_iter()
        .map(|(id, script)| {
            json!({"id": id, "type": "tool", "server": "a2e", "tool": "run_command",
                   "args": {"argv": ["sh", "-c", script], "timeout": 120}})
        })
        .collect();
    std::fs::create_dir_all(cluster.root.path().join("skills")).unwrap();
    std::fs::write(
        cluster.root.path().join("skills/steps.md"),
        format!(
            "---\nname: steps\ndescription: Four steps\n---\nFour steps.\n\n```ontheia\n{}\n```\n",
            json!({ "steps": steps })
        ),
    )
    .unwrap();
    let tasks: Vec<Value> = scripts("d", DAG_MARK)
        .into_iter()
        .map(|(id, script)| {
            json!({"task_id": id, "capability": "run_command", "timeout_ms": 120_000,
                   "input": {"type": "json", "data": {"argv": ["sh", "-c", script], "timeout": 120}}})
        })
        .collect();
    let edges: Vec<Value> = ["da", "db", "dc", "dd"]
        .windows(2)
        .map(|w| json!({"from": w[0], "to": w[1]}))
        .collect();
    let dag = json!({"type": "dag/req", "id": "dag-1", "streaming": true,
                     "dag": {"dag_id": "cluster_dag", "tasks": tasks, "edges": edges}});
    let skill = json!({"type": "skill/call/req", "id": "skill-1", "name": "steps",
                       "arguments": {"input": "go"}, "timeout": 300});

    let mut coordinator = cluster.host("[]", 5);
    let mut taker = cluster.host("[\"*\"]", 5);
    coordinator
        .process
        .send(dag.to_string().as_bytes())
        .unwrap();
    coordinator
        .process
        .send(skill.to_string().as_bytes())
        .unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    while pids_with_arg(SKILL_MARK).is_empty() || pids_with_arg(DAG_MARK).is_empty() {
        assert!(
            Instant::now() < end,
            "the sleeps never ran\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(coordinator); // SIGKILL while both sleep
    kill_marked(SKILL_MARK);
    kill_marked(DAG_MARK);

    // The same agent, on the host that takes the runs over.
    for (req_id, kind) in [("skill-1", "steps"), ("dag-1", "cluster_dag")] {
        let attach =
            json!({"type": "chain/attach", "id": format!("att-{req_id}"), "chain_req_id": req_id});
        taker.process.send(attach.to_string().as_bytes()).unwrap();
        let (answer, events) = taker
            .process
            .answer(&format!("att-{req_id}"), Duration::from_secs(60), |_| {})
            .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
        assert_eq!(answer["type"], "chain/resp", "{answer}");
        assert_eq!(answer["chain_id"], kind, "{answer}");
        // The sleeping step may have run and is not idempotent: it failed
        // `interrupted` on the host that took the run over.
        assert_eq!(answer["success"], false, "{answer}\n{}", cluster.logs());
        assert_eq!(seqs(&events), (0..events.len() as u64).collect::<Vec<_>>());
        let interrupted = events.iter().any(|e| {
            e["phase"] == "error" && e["error"].as_str().unwrap_or("").contains("not idempotent")
        });
        assert!(interrupted, "{events:?}");
    }
    let effects = cluster.effects();
    // No step ran twice; the document went on after the failed step, the
    // DAG cancelled the failed task's dependent.
    for id in ["sa", "sb", "sc", "sd", "da", "db", "dc"] {
        assert_eq!(
            count(&effects, id),
            1,
            "{id}: {effects:?}\n{}",
            cluster.logs()
        );
    }
    assert_eq!(count(&effects, "dd"), 0, "{effects:?}");
}

#[test]
fn a_map_items_timeout_longer_than_the_tool_default_holds_on_the_workers() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    // Every host's tool default is 1 s; each item sleeps 3 s under its
    // template's timeout of 60 s.
    let short = "\n[timeouts]\ntool_secs = 1\n";
    let mut coordinator = cluster.host_with("[]", 5, short);
    let _workers = [
        cluster.host_with("[\"*\"]", 5, short),
        cluster.host_with("[\"*\"]", 5, short),
    ];
    let req = json!({
        "type": "chain/req", "id": "run-long", "chain_id": "long-items",
        "entry_node": "all", "timeout": 120,
        "initial_input": {"items": ["x", "y"]},
        "nodes": [
            {"node_id": "all", "kind": "map", "items_path": "input.items", "map_node": "slow"},
            {"node_id": "slow", "kind": "tool", "name": "run_command",
             "input": {"argv": ["sh", "-c", "sleep 3; echo slow >> effects"], "timeout": 60}}
        ]
    });
    coordinator
        .process
        .send(req.to_string().as_bytes())
        .unwrap();
    let (answer, _) = coordinator
        .process
        .answer("run-long", Duration::from_secs(90), |_| {})
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    assert_eq!(answer["success"], true, "{answer}\n{}", cluster.logs());
    assert_eq!(cluster.effects(), ["slow", "slow"], "{}", cluster.logs());
}
