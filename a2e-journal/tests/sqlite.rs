//! The SQLite journal over a real file: runs, nodes, events, subscriptions,
//! cancel markers, corrupt rows and retention.

use std::time::Duration;

use a2e_journal::{
    Journal, JournalError, NewRun, NodeKey, NodeOutcome, Retention, RunFilter, RunId, RunItem,
    RunKind, RunStatus, SqliteJournal, SqliteOptions,
};
use futures::StreamExt;
use serde_json::{Value, json};

fn new_run(id: &str, agent: &str) -> NewRun {
    NewRun {
        run_id: RunId::parse(id).unwrap(),
        kind: RunKind::Chain,
        agent: agent.into(),
        request: json!({"type": "chain/req", "id": id}),
    }
}

async fn open(dir: &tempfile::TempDir) -> SqliteJournal {
    SqliteJournal::open_in(dir.path(), SqliteOptions::default())
        .await
        .unwrap()
}

fn key(run: &str, node: &str, attempt: u32) -> NodeKey {
    NodeKey::new(RunId::parse(run).unwrap(), node, attempt).unwrap()
}

#[tokio::test]
async fn a_run_is_journaled_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let j = open(&dir).await;
    assert!(dir.path().join(".a2e/runs.db").is_file());
    j.create_run(new_run("r1", "alice")).await.unwrap();
    let e = j.create_run(new_run("r1", "alice")).await.unwrap_err();
    assert!(
        matches!(e, JournalError::DuplicateRun(ref id) if id == "r1"),
        "{e}"
    );

    j.node_started(&key("r1", "a", 1)).await.unwrap();
    assert!(
        j.node_finished(&key("r1", "a", 1), &NodeOutcome::output(json!(1)))
            .await
            .unwrap()
    );
    // The first result wins; a redelivered one is not applied.
    assert!(
        !j.node_finished(&key("r1", "a", 1), &NodeOutcome::output(json!(2)))
            .await
            .unwrap()
    );
    j.node_started(&key("r1", "b", 1)).await.unwrap();
    j.node_finished(
        &key("r1", "b", 1),
        &NodeOutcome::error("tool_error", "boom"),
    )
    .await
    .unwrap();
    j.node_started(&key("r1", "b", 2)).await.unwrap();
    for seq in 0..3 {
        j.append_event(&RunId::parse("r1").unwrap(), seq, &json!({"seq": seq}))
            .await
            .unwrap();
    }
    // A seq already journaled is ignored.
    j.append_event(&RunId::parse("r1").unwrap(), 1, &json!("again"))
        .await
        .unwrap();

    let state = j
        .show_run(&RunId::parse("r1").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.summary.status, RunStatus::Running);
    assert_eq!(state.summary.agent, "alice");
    assert_eq!(state.summary.next_seq, 3);
    assert_eq!(state.request, json!({"type": "chain/req", "id": "r1"}));
    assert_eq!(state.nodes.len(), 3);
    assert_eq!(
        state.result_of("a").unwrap().1,
        &NodeOutcome::output(json!(1))
    );
    // b's latest attempt has no result yet: it was interrupted.
    assert!(state.result_of("b").is_none());
    assert_eq!(state.latest("b").unwrap().attempt, 2);
    let interrupted: Vec<_> = state
        .interrupted()
        .map(|r| (r.node_id.as_str(), r.attempt))
        .collect();
    assert_eq!(interrupted, [("b", 2)]);
    let events = j.events(&RunId::parse("r1").unwrap(), 1, 10).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.event.clone()).collect::<Vec<_>>(),
        [json!({"seq": 1}), json!({"seq": 2})]
    );

    let unfinished = j.load_unfinished().await.unwrap();
    assert_eq!(unfinished.items.len(), 1);
    assert!(unfinished.corrupt.is_empty());

    j.finish_run(
        &RunId::parse("r1").unwrap(),
        RunStatus::Failed,
        &json!({"success": false}),
    )
    .await
    .unwrap();
    assert!(j.load_unfinished().await.unwrap().items.is_empty());
    let state = j
        .show_run(&RunId::parse("r1").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.summary.status, RunStatus::Failed);
    assert_eq!(state.answer, Some(json!({"success": false})));
    assert!(state.summary.finished_ms.is_some());
    assert!(
        j.show_run(&RunId::parse("nope").unwrap())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn writes_for_an_unknown_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let j = open(&dir).await;
    let e = j.node_started(&key("ghost", "a", 1)).await.unwrap_err();
    assert!(
        matches!(e, JournalError::UnknownRun(ref r) if r == "ghost"),
        "{e}"
    );
    assert_eq!(e.code(), "unknown_run");
    let e = j
        .finish_run(
            &RunId::parse("ghost").unwrap(),
            RunStatus::Succeeded,
            &Value::Null,
        )
        .await
        .unwrap_err();
    assert!(matches!(e, JournalError::UnknownRun(_)), "{e}");
    // A failed write does not fail the others queued with it.
    j.create_run(new_run("real", "a")).await.unwrap();
    let (bad, good) = (
        j.node_started(&key("ghost", "x", 1)),
        j.node_started(&key("real", "x", 1)),
    );
    assert!(bad.await.is_err());
    good.await.unwrap();
}

#[tokio::test]
async fn listing_filters_by_agent_and_status_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let j = open(&dir).await;
    for (id, agent) in [("a1", "alice"), ("b1", "bob"), ("a2", "alice")] {
        j.create_run(new_run(id, agent)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    j.finish_run(
        &RunId::parse("a1").unwrap(),
        RunStatus::Succeeded,
        &json!(null),
    )
    .await
    .unwrap();
    let ids = |l: a2e_journal::Loaded<a2e_journal::RunSummary>| {
        l.items
            .into_iter()
            .map(|s| s.run_id.to_string())
            .collect::<Vec<_>>()
    };
    let all = j.list_runs(&RunFilter::default()).await.unwrap();
    assert_eq!(ids(all), ["a2", "b1", "a1"]);
    let alice = RunFilter {
        agent: Some("alice".into()),
        ..RunFilter::default()
    };
    assert_eq!(ids(j.list_runs(&alice).await.unwrap()), ["a2", "a1"]);
    let running = RunFilter {
        agent: Some("alice".into()),
        status: Some(RunStatus::Running),
        ..RunFilter::default()
    };
    assert_eq!(ids(j.list_runs(&running).await.unwrap()), ["a2"]);
    let one = RunFilter {
        limit: 1,
        ..RunFilter::default()
    };
    assert_eq!(ids(j.list_runs(&one).await.unwrap()), ["a2"]);
}

#[tokio::test]
async fn a_subscriber_gets_missed_events_then_live_ones_each_once_then_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let j = open(&dir).await;
    let run = RunId::parse("live").unwrap();
    j.create_run(new_run("live", "a")).await.unwrap();
    for seq in 0..5 {
        drop(j.append_event(&run, seq, &json!({"n": seq})));
    }
    j.flush().await.unwrap();
    // Attaching from seq 2: 2, 3, 4 from the store, then what comes.
    let mut sub = j.subscribe(&run, 2);
    for want in 2..5 {
        match sub.next().await.unwrap().unwrap() {
            RunItem::Event(e) => assert_eq!((e.seq, e.event), (want, json!({"n": want}))),
            other => panic!("{other:?}"),
        }
    }
    let writer = {
        let j = j.clone();
        let run = run.clone();
        tokio::spawn(async move {
            for seq in 5..40 {
                drop(j.append_event(&run, seq, &json!({"n": seq})));
                // A duplicate of an earlier seq must not reach the subscriber.
                drop(j.append_event(&run, seq - 1, &json!("dup")));
                if seq % 7 == 0 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
            j.finish_run(&run, RunStatus::Succeeded, &json!({"answer": 42}))
                .await
                .unwrap();
        })
    };
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .expect("subscriber stalled")
        {
            Some(Ok(RunItem::Event(e))) => {
                assert_eq!(e.event, json!({"n": e.seq}));
                seen.push(e.seq);
            }
            Some(Ok(RunItem::Finished { status, answer })) => {
                assert_eq!(status, RunStatus::Succeeded);
                assert_eq!(answer, json!({"answer": 42}));
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen, (5..40).collect::<Vec<_>>());
    assert!(sub.next().await.is_none(), "nothing after the answer");
    writer.await.unwrap();

    // A late subscriber to the finished run gets everything, then the answer.
    let all: Vec<_> = j.subscribe(&run, 0).collect().await;
    assert_eq!(all.len(), 41);
    assert!(matches!(all.last(), Some(Ok(RunItem::Finished { .. }))));

    let unknown: Vec<_> = j
        .subscribe(&RunId::parse("nope").unwrap(), 0)
        .collect()
        .await;
    assert_eq!(unknown.len(), 1);
    assert!(matches!(&unknown[0], Err(JournalError::UnknownRun(r)) if r == "nope"));
}

#[tokio::test]
async fn a_second_handle_on_the_file_follows_and_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        poll_interval: Duration::from_millis(20),
        ..SqliteOptions::default()
    };
    let host = SqliteJournal::open_in(dir.path(), options.clone())
        .await
        .unwrap();
    // Another process on the same file (the CLI): its own connections.
    let cli = SqliteJournal::open_in(dir.path(), options).await.unwrap();
    let run = RunId::parse("shared").unwrap();
    host.create_run(new_run("shared", "a")).await.unwrap();
    let mut sub = cli.subscribe(&run, 0);
    assert!(!host.cancel_requested(&run).await.unwrap());
    assert!(cli.request_cancel(&run).await.unwrap());
    assert!(host.cancel_requested(&run).await.unwrap());
    host.append_event(&run, 0, &json!("e0")).await.unwrap();
    host.finish_run(&run, RunStatus::Cancelled, &json!("stopped"))
        .await
        .unwrap();
    let items: Vec<_> = tokio::time::timeout(Duration::from_secs(5), async {
        let mut items = Vec::new();
        while let Some(item) = sub.next().await {
            items.push(item.unwrap());
        }
        items
    })
    .await
    .expect("the poll must see the other handle's writes");
    assert_eq!(items.len(), 2);
    assert!(matches!(
        &items[1],
        RunItem::Finished {
            status: RunStatus::Cancelled,
            ..
        }
    ));
    // A finished run cannot be marked any more.
    assert!(!cli.request_cancel(&run).await.unwrap());
    assert!(
        !cli.request_cancel(&RunId::parse("nope").unwrap())
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn writes_survive_closing_and_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let j = open(&dir).await;
        j.create_run(new_run("keep", "a")).await.unwrap();
        // Not awaited: queued, and committed before the journal is dropped.
        drop(j.node_started(&key("keep", "n", 1)));
        drop(j.node_finished(&key("keep", "n", 1), &NodeOutcome::output(json!("x"))));
    }
    let j = open(&dir).await;
    let state = j
        .show_run(&RunId::parse("keep").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        state.result_of("n").unwrap().1,
        &NodeOutcome::output(json!("x"))
    );
}

#[tokio::test]
async fn a_corrupt_row_is_named_and_the_rest_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let j = open(&dir).await;
    for id in ["good1", "badreq", "badnode", "badkind", "good2"] {
        j.create_run(new_run(id, "a")).await.unwrap();
    }
    j.node_started(&key("badnode", "n", 1)).await.unwrap();
    j.node_started(&key("good2", "n", 1)).await.unwrap();
    j.node_finished(&key("good2", "n", 1), &NodeOutcome::output(json!(7)))
        .await
        .unwrap();
    j.append_event(&RunId::parse("good1").unwrap(), 0, &json!("ok0"))
        .await
        .unwrap();
    j.append_event(&RunId::parse("good1").unwrap(), 1, &json!("ok1"))
        .await
        .unwrap();
    j.append_event(&RunId::parse("good1").unwrap(), 2, &json!("ok2"))
        .await
        .unwrap();
    // Damage rows behind the journal's back, as a bad disk or a hand edit would.
    {
        let db = rusqlite::Connection::open(dir.path().join(".a2e/runs.db")).unwrap();
        db.execute(
            "UPDATE runs SET request = '{not json' WHERE run_id = 'badreq'",
            [],
        )
        .unwrap();
        db.execute(
            "UPDATE nodes SET outcome = '[1,' WHERE run_id = 'badnode'",
            [],
        )
        .unwrap();
        db.execute("UPDATE runs SET kind = 'dag?' WHERE run_id = 'badkind'", [])
            .unwrap();
        db.execute(
            "UPDATE events SET event = 'oops' WHERE run_id = 'good1' AND seq = 1",
            [],
        )
        .unwrap();
    }
    let loaded = j.load_unfinished().await.unwrap();
    let good: Vec<_> = loaded
        .items
        .iter()
        .map(|s| s.summary.run_id.to_string())
        .collect();
    assert_eq!(good, ["good1", "good2"]);
    assert_eq!(
        loaded.items[1].result_of("n").unwrap().1,
        &NodeOutcome::output(json!(7))
    );
    let mut corrupt: Vec<_> = loaded
        .corrupt
        .iter()
        .map(|c| (c.run_id.as_str(), c.message.as_str()))
        .collect();
    corrupt.sort();
    assert_eq!(corrupt.len(), 3, "{corrupt:?}");
    assert_eq!(corrupt[0].0, "badkind");
    assert!(corrupt[0].1.contains("unknown kind `dag?`"), "{corrupt:?}");
    assert_eq!(corrupt[1].0, "badnode");
    assert!(
        corrupt[1].1.contains("node `n` attempt 1: result"),
        "{corrupt:?}"
    );
    assert_eq!(corrupt[2].0, "badreq");
    assert!(corrupt[2].1.starts_with("request: "), "{corrupt:?}");

    // Showing a corrupt run names it; listing skips only the undecodable headline.
    let e = j
        .show_run(&RunId::parse("badreq").unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, JournalError::Corrupt { run_id, .. } if run_id == "badreq"),
        "{e}"
    );
    let listed = j.list_runs(&RunFilter::default()).await.unwrap();
    assert_eq!(listed.items.len(), 4);
    assert_eq!(listed.corrupt.len(), 1);
    assert_eq!(listed.corrupt[0].run_id, "badkind");

    // A corrupt event is an error naming run and seq; the events after it still come.
    let mut sub = j.subscribe(&RunId::parse("good1").unwrap(), 0);
    assert!(matches!(sub.next().await, Some(Ok(RunItem::Event(e))) if e.seq == 0));
    match sub.next().await {
        Some(Err(JournalError::Corrupt { run_id, message })) => {
            assert_eq!(run_id, "good1");
            assert!(message.starts_with("event seq 1: "), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(sub.next().await, Some(Ok(RunItem::Event(e))) if e.seq == 2));
}

#[tokio::test]
async fn retention_prunes_by_age_and_count_and_keeps_unfinished_runs() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        retention: None,
        ..SqliteOptions::default()
    };
    let j = SqliteJournal::open_in(dir.path(), options).await.unwrap();
    for i in 0..10 {
        let id = format!("r{i}");
        j.create_run(new_run(&id, "a")).await.unwrap();
        if i != 3 {
            j.finish_run(&RunId::parse(&id).unwrap(), RunStatus::Succeeded, &json!(i))
                .await
                .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let by_count = Retention {
        max_age: None,
        max_runs: Some(4),
    };
    assert_eq!(j.prune(&by_count).await.unwrap().runs, 5);
    let left: Vec<_> = j
        .list_runs(&RunFilter::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|s| s.run_id.to_string())
        .collect();
    assert_eq!(left, ["r9", "r8", "r7", "r6", "r3"]);
    tokio::time::sleep(Duration::from_millis(30)).await;
    let by_age = Retention {
        max_age: Some(Duration::from_millis(10)),
        max_runs: None,
    };
    assert_eq!(j.prune(&by_age).await.unwrap().runs, 4);
    let left = j.list_runs(&RunFilter::default()).await.unwrap().items;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].status, RunStatus::Running);
}

/// Runs of 200 events each, finished one after another under a retention
/// of 20 runs: the row count and the file stay bounded however many runs
/// went through.
#[tokio::test]
async fn the_journal_does_not_grow_without_bound() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        retention: Some(Retention {
            max_age: None,
            max_runs: Some(20),
        }),
        prune_every: 5,
        ..SqliteOptions::default()
    };
    let j = SqliteJournal::open_in(dir.path(), options).await.unwrap();
    let db = dir.path().join(".a2e/runs.db");
    // The database file once the WAL is folded into it: the WAL's own size
    // depends on when SQLite's automatic checkpoints ran, the file's does not.
    let size = || {
        let conn = rusqlite::Connection::open(&db).unwrap();
        for _ in 0..50 {
            let busy: i64 = conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))
                .unwrap();
            if busy == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let wal = dir.path().join(".a2e/runs.db-wal");
        std::fs::metadata(&db).unwrap().len() + std::fs::metadata(wal).map_or(0, |m| m.len())
    };
    let payload = json!({"text": "x".repeat(400)});
    let mut sizes = Vec::new();
    for round in 0..8 {
        for i in 0..50 {
            let id = format!("r{round}x{i}");
            let run = RunId::parse(&id).unwrap();
            drop(j.create_run(new_run(&id, "a")));
            for seq in 0..200 {
                drop(j.append_event(&run, seq, &payload));
            }
            drop(j.node_finished(&key(&id, "n", 1), &NodeOutcome::output(json!(1))));
            j.finish_run(&run, RunStatus::Succeeded, &json!(null))
                .await
                .unwrap();
        }
        j.flush().await.unwrap();
        let listed = j
            .list_runs(&RunFilter {
                limit: 1000,
                ..RunFilter::default()
            })
            .await
            .unwrap();
        assert!(
            listed.items.len() <= 20 + 5,
            "round {round}: {} runs kept",
            listed.items.len()
        );
        sizes.push(size());
    }
    // 400 runs of ~100 KB went through; the file holds about 25 of them.
    let (early, late) = (sizes[1], *sizes.last().unwrap());
    assert!(
        late <= early + early / 2,
        "the file grew from {early} to {late} bytes: {sizes:?}"
    );
    assert!(late < 40 * 1024 * 1024, "{sizes:?}");
}
