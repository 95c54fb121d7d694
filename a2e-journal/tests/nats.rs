//! The JetStream store, leases and work queue over a real nats-server
//! (`nats-server -js` on a free loopback port, a temporary store; under
//! `CI` a missing server fails the tests).

use crate::common;

use std::time::Duration;

use a2e_journal::nats::{
    Leases, NatsJournal, NatsOptions, WORKER_LOST, WorkConfig, WorkItem, WorkQueue,
};
use a2e_journal::{
    Journal, JournalError, NewRun, NodeKey, NodeOutcome, Retention, RunFilter, RunId, RunItem,
    RunKind, RunStatus,
};
use common::nats_server::NatsServer;
use futures::StreamExt;
use serde_json::json;

fn run_id(s: &str) -> RunId {
    RunId::parse(s).unwrap()
}

fn new_run(id: &str, agent: &str) -> NewRun {
    NewRun {
        run_id: run_id(id),
        kind: RunKind::Chain,
        agent: agent.into(),
        request: json!({"id": id}),
    }
}

fn key(run: &str, node: &str, attempt: u32) -> NodeKey {
    NodeKey::new(run_id(run), node, attempt).unwrap()
}

async fn journal(server: &NatsServer) -> NatsJournal {
    NatsJournal::connect(&server.url(), NatsOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_run_is_journaled_in_jetstream_and_read_back() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let j = journal(&server).await;
    j.create_run(new_run("r1", "alice")).await.unwrap();
    let e = j.create_run(new_run("r1", "alice")).await.unwrap_err();
    assert!(
        matches!(e, JournalError::DuplicateRun(ref r) if r == "r1"),
        "{e}"
    );
    j.node_started(&key("r1", "fetch [all]", 1)).await.unwrap();
    assert!(
        j.node_finished(&key("r1", "fetch [all]", 1), &NodeOutcome::output(json!(1)))
            .await
            .unwrap()
    );
    // A redelivered result is not applied.
    assert!(
        !j.node_finished(&key("r1", "fetch [all]", 1), &NodeOutcome::output(json!(2)))
            .await
            .unwrap()
    );
    j.node_started(&key("r1", "b", 1)).await.unwrap();
    for seq in 0..4 {
        drop(j.append_event(&run_id("r1"), seq, &json!({"n": seq})));
    }
    // The same seq again (a resumed host re-sending): dropped.
    drop(j.append_event(&run_id("r1"), 2, &json!("dup")));
    j.flush().await.unwrap();

    let state = j.show_run(&run_id("r1")).await.unwrap().unwrap();
    assert_eq!(state.summary.status, RunStatus::Running);
    assert_eq!(state.summary.next_seq, 4);
    assert_eq!(state.request, json!({"id": "r1"}));
    assert_eq!(
        state.result_of("fetch [all]").unwrap().1,
        &NodeOutcome::output(json!(1))
    );
    let interrupted: Vec<_> = state.interrupted().map(|n| n.node_id.clone()).collect();
    assert_eq!(interrupted, ["b"]);
    let events = j.events(&run_id("r1"), 1, 10).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.event.clone()).collect::<Vec<_>>(),
        [json!({"n": 1}), json!({"n": 2}), json!({"n": 3})]
    );
    let unfinished = j.load_unfinished().await.unwrap();
    assert_eq!(unfinished.items.len(), 1);

    assert!(j.request_cancel(&run_id("r1")).await.unwrap());
    assert!(j.cancel_requested(&run_id("r1")).await.unwrap());
    assert!(!j.request_cancel(&run_id("nope")).await.unwrap());
    j.finish_run(
        &run_id("r1"),
        RunStatus::Cancelled,
        &json!({"why": "asked"}),
    )
    .await
    .unwrap();
    assert!(j.load_unfinished().await.unwrap().items.is_empty());
    assert!(!j.request_cancel(&run_id("r1")).await.unwrap());
    let state = j.show_run(&run_id("r1")).await.unwrap().unwrap();
    assert_eq!(state.summary.status, RunStatus::Cancelled);
    assert!(state.summary.cancel_requested);
    assert_eq!(state.answer, Some(json!({"why": "asked"})));
    assert!(j.show_run(&run_id("nope")).await.unwrap().is_none());
    let e = j
        .finish_run(&run_id("nope"), RunStatus::Failed, &json!(null))
        .await
        .unwrap_err();
    assert!(matches!(e, JournalError::UnknownRun(_)), "{e}");

    j.create_run(new_run("r2", "bob")).await.unwrap();
    let bob = j
        .list_runs(&RunFilter {
            agent: Some("bob".into()),
            ..RunFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(bob.items.len(), 1);
    assert_eq!(bob.items[0].run_id.as_str(), "r2");
    assert_eq!(
        j.list_runs(&RunFilter::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}

#[tokio::test]
async fn a_follower_on_another_connection_gets_each_seq_once_then_the_answer() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    // Host B runs the run; an agent attached to host A follows it.
    let host_b = journal(&server).await;
    let host_a = journal(&server).await;
    let run = run_id("live");
    host_b.create_run(new_run("live", "a")).await.unwrap();
    for seq in 0..5 {
        drop(host_b.append_event(&run, seq, &json!({"n": seq})));
    }
    host_b.flush().await.unwrap();
    let mut sub = host_a.subscribe(&run, 3);
    let writer = tokio::spawn({
        let host_b = host_b.clone();
        let run = run.clone();
        async move {
            for seq in 5..30 {
                drop(host_b.append_event(&run, seq, &json!({"n": seq})));
                drop(host_b.append_event(&run, seq - 1, &json!("dup")));
                if seq % 5 == 0 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            host_b
                .finish_run(&run, RunStatus::Succeeded, &json!({"answer": 1}))
                .await
                .unwrap();
        }
    });
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .expect("follower stalled")
        {
            Some(Ok(RunItem::Event(e))) => {
                assert_eq!(e.event, json!({"n": e.seq}));
                seen.push(e.seq);
            }
            Some(Ok(RunItem::Finished { status, answer })) => {
                assert_eq!(status, RunStatus::Succeeded);
                assert_eq!(answer, json!({"answer": 1}));
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen, (3..30).collect::<Vec<_>>());
    assert!(sub.next().await.is_none());
    writer.await.unwrap();
    let unknown: Vec<_> = host_a.subscribe(&run_id("ghost"), 0).collect().await;
    assert!(matches!(&unknown[..], [Err(JournalError::UnknownRun(r))] if r == "ghost"));
}

#[tokio::test]
async fn a_corrupt_record_is_named_and_the_rest_still_loads() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let j = journal(&server).await;
    for id in ["good", "bad", "badnode"] {
        j.create_run(new_run(id, "a")).await.unwrap();
    }
    j.node_started(&key("good", "n", 1)).await.unwrap();
    let js = j.jetstream();
    let runs = js.get_key_value("a2e_runs").await.unwrap();
    runs.put("bad", "{not json".into()).await.unwrap();
    let nodes = js.get_key_value("a2e_nodes").await.unwrap();
    nodes.put("badnode.bg.1.r", "[1,".into()).await.unwrap();
    let loaded = j.load_unfinished().await.unwrap();
    let good: Vec<_> = loaded
        .items
        .iter()
        .map(|s| s.summary.run_id.to_string())
        .collect();
    assert_eq!(good, ["good"]);
    let mut corrupt: Vec<_> = loaded
        .corrupt
        .iter()
        .map(|c| (c.run_id.clone(), c.message.clone()))
        .collect();
    corrupt.sort();
    assert_eq!(corrupt.len(), 2, "{corrupt:?}");
    assert_eq!(corrupt[0].0, "bad");
    assert!(corrupt[0].1.starts_with("run record: "), "{corrupt:?}");
    assert_eq!(corrupt[1].0, "badnode");
    assert!(corrupt[1].1.contains("node `n` attempt 1"), "{corrupt:?}");
}

#[tokio::test]
async fn retention_prunes_finished_runs_and_their_records() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let j = journal(&server).await;
    for i in 0..6 {
        let id = format!("r{i}");
        j.create_run(new_run(&id, "a")).await.unwrap();
        drop(j.append_event(&run_id(&id), 0, &json!("e")));
        drop(j.node_started(&key(&id, "n", 1)));
        if i != 0 {
            j.finish_run(&run_id(&id), RunStatus::Succeeded, &json!(i))
                .await
                .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let report = j
        .prune(&Retention {
            max_age: None,
            max_runs: Some(2),
        })
        .await
        .unwrap();
    assert_eq!(report.runs, 3);
    let left: Vec<_> = j
        .list_runs(&RunFilter::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|s| s.run_id.to_string())
        .collect();
    assert_eq!(left, ["r5", "r4", "r0"]);
    // The pruned runs' events and nodes are gone from the streams too.
    assert!(j.events(&run_id("r1"), 0, 10).await.unwrap().is_empty());
    let events = j.jetstream().get_stream("A2E_EVENTS").await.unwrap();
    let info = events.cached_info();
    // r0's event, and r4's and r5's events and ends.
    assert_eq!(info.state.messages, 5);
}

#[tokio::test]
async fn a_lease_is_held_renewed_and_taken_over_when_its_holder_stops() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let client_a = async_nats::connect(server.url()).await.unwrap();
    let client_b = async_nats::connect(server.url()).await.unwrap();
    let ttl = Duration::from_secs(2);
    let a = Leases::open(&async_nats::jetstream::new(client_a), "a2e", "host-a", ttl)
        .await
        .unwrap();
    let b = Leases::open(&async_nats::jetstream::new(client_b), "a2e", "host-b", ttl)
        .await
        .unwrap();
    let run = run_id("leased");
    let lease = a.acquire(&run).await.unwrap();
    let e = b.acquire(&run).await.unwrap_err();
    assert!(
        matches!(&e, JournalError::Leased { holder, .. } if holder == "host-a"),
        "{e}"
    );
    assert_eq!(b.holder(&run).await.unwrap().as_deref(), Some("host-a"));
    // Kept alive past its time to live by renewals.
    let keeper = a.keep(lease);
    tokio::time::sleep(ttl + ttl / 2).await;
    assert!(!keeper.is_lost());
    assert!(b.acquire(&run).await.is_err());
    // Host A stops renewing (it died): the lease ages out and B takes over.
    let held_by_a = {
        let mut stale = a.acquire(&run).await.unwrap();
        drop(keeper);
        a.renew(&mut stale).await.unwrap();
        stale
    };
    let started = std::time::Instant::now();
    let mut lease_b = loop {
        match b.acquire(&run).await {
            Ok(l) => break l,
            Err(JournalError::Leased { .. }) => {
                assert!(started.elapsed() < ttl * 4, "the lease never expired");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert!(started.elapsed() >= ttl / 2, "taken over too early");
    assert_eq!(b.holder(&run).await.unwrap().as_deref(), Some("host-b"));
    // A, back from the dead, cannot renew what B holds.
    let mut stale = held_by_a;
    let e = a.renew(&mut stale).await.unwrap_err();
    assert!(
        matches!(e, JournalError::LeaseLost(ref r) if r == "leased"),
        "{e}"
    );
    b.renew(&mut lease_b).await.unwrap();
    b.release(lease_b).await.unwrap();
    assert_eq!(a.holder(&run).await.unwrap(), None);
    a.acquire(&run).await.unwrap();
}

fn item(run: &str, node: &str, toolkit: &str) -> WorkItem {
    WorkItem {
        key: key(run, node, 1),
        toolkit: toolkit.into(),
        tool: "t".into(),
        input: json!({"node": node}),
        agent: "agent-1".into(),
        chain_id: String::new(),
        deadline_unix_ms: None,
        approval: false,
    }
}

#[tokio::test]
async fn work_goes_to_the_hosts_of_its_toolkit_and_is_redelivered_when_a_worker_dies() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let j = journal(&server).await;
    j.create_run(new_run("w", "a")).await.unwrap();
    let config = WorkConfig {
        ack_wait: Duration::from_secs(1),
        max_deliver: 5,
        ..WorkConfig::default()
    };
    let queue = WorkQueue::open(j.jetstream(), "a2e", config.clone())
        .await
        .unwrap();
    assert!(queue.publish(&item("w", "gpu1", "gpu")).await.unwrap());
    // The same key again: dropped by the server.
    assert!(!queue.publish(&item("w", "gpu1", "gpu")).await.unwrap());
    assert!(queue.publish(&item("w", "page", "browser")).await.unwrap());

    // Worker A (its own connection) takes the gpu node and dies with it.
    {
        let client = async_nats::connect(server.url()).await.unwrap();
        let queue_a = WorkQueue::open(
            &async_nats::jetstream::new(client.clone()),
            "a2e",
            config.clone(),
        )
        .await
        .unwrap();
        let mut worker_a = queue_a.worker("gpu").await.unwrap();
        let job = worker_a.next().await.unwrap().unwrap();
        assert_eq!(job.item().key.node_id(), "gpu1");
        assert_eq!(job.delivered(), 1);
        drop(job);
        drop(worker_a);
        drop(client);
    }
    // Worker B serves gpu only: it never sees the browser node.
    let mut worker_b = queue.worker("gpu").await.unwrap();
    let started = std::time::Instant::now();
    let job = tokio::time::timeout(Duration::from_secs(10), worker_b.next())
        .await
        .expect("no redelivery")
        .unwrap()
        .unwrap();
    assert_eq!(job.item(), &item("w", "gpu1", "gpu"));
    assert_eq!(job.delivered(), 2);
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert!(
        job.complete(&j, &NodeOutcome::output(json!("ok")))
            .await
            .unwrap()
    );
    let state = j.show_run(&run_id("w")).await.unwrap().unwrap();
    assert_eq!(
        state.result_of("gpu1").unwrap().1,
        &NodeOutcome::output(json!("ok"))
    );
    // Acked: the gpu subject is empty; the browser node waits for its hosts.
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), worker_b.next())
            .await
            .is_err()
    );
    let mut browser = queue.worker("browser").await.unwrap();
    let job = browser.next().await.unwrap().unwrap();
    assert_eq!(job.item().key.node_id(), "page");
    // Its result was journaled already (a worker that was only slow): not applied twice.
    j.node_finished(&job.item().key, &NodeOutcome::output(json!("first")))
        .await
        .unwrap();
    assert!(
        !job.complete(&j, &NodeOutcome::output(json!("second")))
            .await
            .unwrap()
    );
    let state = j.show_run(&run_id("w")).await.unwrap().unwrap();
    assert_eq!(
        state.result_of("page").unwrap().1,
        &NodeOutcome::output(json!("first"))
    );
}

#[tokio::test]
async fn a_nodes_headers_reach_its_worker_and_the_depth_counts_waiting_nodes() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let j = journal(&server).await;
    j.create_run(new_run("h", "a")).await.unwrap();
    let queue = WorkQueue::open(j.jetstream(), "a2e", WorkConfig::default())
        .await
        .unwrap();
    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for node in ["n1", "n2"] {
        let headers = [("traceparent", PARENT), ("tracestate", "a2e=1")];
        assert!(
            queue
                .publish_with(&item("h", node, "kit"), &headers)
                .await
                .unwrap()
        );
    }
    // No host serves the toolkit yet: no consumer, depth 0.
    assert_eq!(queue.depth("kit").await.unwrap(), 0);
    let mut worker = queue.worker("kit").await.unwrap();
    assert_eq!(queue.depth("kit").await.unwrap(), 2);
    let job = worker.next().await.unwrap().unwrap();
    assert_eq!(job.header("traceparent"), Some(PARENT));
    assert_eq!(job.header("tracestate"), Some("a2e=1"));
    assert_eq!(job.header("missing"), None);
    // The node being run is not waiting any more.
    assert_eq!(queue.depth("kit").await.unwrap(), 1);
    job.complete(&j, &NodeOutcome::output(json!(1)))
        .await
        .unwrap();
    let job = worker.next().await.unwrap().unwrap();
    assert_eq!(queue.depth("kit").await.unwrap(), 0);
    job.complete(&j, &NodeOutcome::output(json!(2)))
        .await
        .unwrap();
    // A message published without them has no trace headers.
    queue.publish(&item("h", "n3", "kit")).await.unwrap();
    let job = worker.next().await.unwrap().unwrap();
    assert_eq!(job.header("traceparent"), None);
}

#[tokio::test]
async fn a_poison_node_ends_as_failed_after_max_deliver() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let j = journal(&server).await;
    j.create_run(new_run("p", "a")).await.unwrap();
    let config = WorkConfig {
        ack_wait: Duration::from_millis(500),
        max_deliver: 2,
        backoff: vec![Duration::from_millis(300)],
        ..WorkConfig::default()
    };
    let queue = WorkQueue::open(j.jetstream(), "a2e", config).await.unwrap();
    let mut dead = queue.dead_letters().await.unwrap();
    queue.publish(&item("p", "poison", "fs")).await.unwrap();
    let mut worker = queue.worker("fs").await.unwrap();
    // Every delivery "kills" its worker: never acknowledged.
    let mut deliveries = Vec::new();
    let dead_item = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            tokio::select! {
                job = worker.next() => {
                    let job = job.unwrap().unwrap();
                    deliveries.push(job.delivered());
                }
                d = dead.fail_in(&j) => break d.unwrap().unwrap(),
            }
        }
    })
    .await
    .expect("the poison node never ended");
    assert_eq!(deliveries, [1, 2]);
    assert_eq!(dead_item.item.key.node_id(), "poison");
    assert_eq!(dead_item.deliveries, 2);
    let state = j.show_run(&run_id("p")).await.unwrap().unwrap();
    match state.result_of("poison").unwrap().1 {
        NodeOutcome::Error { code, message } => {
            assert_eq!(code, WORKER_LOST);
            assert!(message.contains("stopped 2 times"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Not delivered again.
    assert!(
        tokio::time::timeout(Duration::from_secs(2), worker.next())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn the_journal_carries_on_after_the_server_restarts() {
    let Some(mut server) = NatsServer::start() else {
        return;
    };
    let j = journal(&server).await;
    let run = run_id("rs");
    j.create_run(new_run("rs", "a")).await.unwrap();
    j.append_event(&run, 0, &json!(0)).await.unwrap();
    j.node_finished(&key("rs", "a", 1), &NodeOutcome::output(json!(1)))
        .await
        .unwrap();
    server.restart();
    // The client reconnects; a write made while it does waits or fails,
    // and is retried as a host would.
    let mut tries = 0;
    loop {
        tries += 1;
        match j.append_event(&run, 1, &json!(1)).await {
            Ok(()) => break,
            Err(e) if tries < 50 => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    j.finish_run(&run, RunStatus::Succeeded, &json!("done"))
        .await
        .unwrap();
    let items: Vec<_> = j.subscribe(&run, 0).map(|i| i.unwrap()).collect().await;
    assert_eq!(items.len(), 3, "{items:?}");
    let state = j.show_run(&run).await.unwrap().unwrap();
    assert_eq!(
        state.result_of("a").unwrap().1,
        &NodeOutcome::output(json!(1))
    );
}

#[tokio::test]
async fn the_work_queue_drops_a_second_publish_within_its_configured_window_only() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let j = journal(&server).await;
    j.create_run(new_run("dw", "a")).await.unwrap();
    let config = WorkConfig {
        duplicate_window: Duration::from_secs(1),
        ..WorkConfig::default()
    };
    let queue = WorkQueue::open(j.jetstream(), "a2e", config).await.unwrap();
    let info = j
        .jetstream()
        .get_stream("A2E_WORK")
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .config
        .clone();
    assert_eq!(info.duplicate_window, Duration::from_secs(1));
    assert!(queue.publish(&item("dw", "n", "kit")).await.unwrap());
    assert!(!queue.publish(&item("dw", "n", "kit")).await.unwrap());
    // Past the window the server has forgotten the key.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(queue.publish(&item("dw", "n", "kit")).await.unwrap());
}
