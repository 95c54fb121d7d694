//! The in-memory journal: the same records as the durable stores, live
//! subscriptions, and its bounds (finished runs, events per run).

use std::time::Duration;

use a2e_journal::{
    Journal, JournalError, MemoryJournal, MemoryOptions, NewRun, NodeKey, NodeOutcome, NodeStart,
    Retention, RunFilter, RunId, RunItem, RunKind, RunStatus,
};
use futures::StreamExt;
use serde_json::json;

fn id(s: &str) -> RunId {
    RunId::parse(s).unwrap()
}

fn new_run(run: &str) -> NewRun {
    NewRun {
        run_id: id(run),
        kind: RunKind::Chain,
        agent: "alice".into(),
        request: json!({"chain_id": run}),
    }
}

fn key(run: &str, node: &str, attempt: u32) -> NodeKey {
    NodeKey::new(id(run), node, attempt).unwrap()
}

#[tokio::test]
async fn runs_nodes_and_events_are_kept_and_followed() {
    let j = MemoryJournal::default();
    j.create_run(new_run("r1")).await.unwrap();
    let e = j.create_run(new_run("r1")).await.unwrap_err();
    assert!(matches!(e, JournalError::DuplicateRun(_)), "{e}");
    let start = NodeStart::with_input(json!({"q": 1}));
    j.node_started_with(&key("r1", "a", 1), &start)
        .await
        .unwrap();
    j.node_traced(
        &key("r1", "a", 1),
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
    )
    .await
    .unwrap();
    assert!(
        j.node_finished(&key("r1", "a", 1), &NodeOutcome::output(json!(2)))
            .await
            .unwrap()
    );
    assert!(
        !j.node_finished(&key("r1", "a", 1), &NodeOutcome::output(json!(3)))
            .await
            .unwrap()
    );
    let e = j.node_started(&key("ghost", "a", 1)).await.unwrap_err();
    assert!(matches!(e, JournalError::UnknownRun(_)), "{e}");
    j.append_event(&id("r1"), 0, &json!({"n": 0}))
        .await
        .unwrap();
    j.append_event(&id("r1"), 0, &json!("again")).await.unwrap();

    // A subscription gets what is there, then what comes, then the end.
    let mut items = j.subscribe(&id("r1"), 0);
    assert_eq!(
        items.next().await.unwrap().unwrap(),
        RunItem::Event(a2e_journal::StoredEvent {
            seq: 0,
            event: json!({"n": 0})
        })
    );
    let writer = j.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        writer
            .append_event(&id("r1"), 1, &json!({"n": 1}))
            .await
            .unwrap();
        writer
            .finish_run(&id("r1"), RunStatus::Succeeded, &json!({"ok": true}))
            .await
            .unwrap();
    });
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(5), items.collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert!(matches!(
        &rest[1],
        Ok(RunItem::Finished {
            status: RunStatus::Succeeded,
            ..
        })
    ));

    let state = j.show_run(&id("r1")).await.unwrap().unwrap();
    assert_eq!(state.summary.next_seq, 2);
    let a = state.latest("a").unwrap();
    assert_eq!(a.outcome, Some(NodeOutcome::output(json!(2))));
    let got = a.start.as_ref().unwrap();
    assert_eq!(got.input, Some(json!({"q": 1})));
    assert_eq!(got.span_id.as_deref(), Some("b7ad6b7169203331"));
    let unknown: Vec<_> = j.subscribe(&id("nope"), 0).collect().await;
    assert!(matches!(&unknown[..], [Err(JournalError::UnknownRun(_))]));
    assert!(!j.request_cancel(&id("r1")).await.unwrap());
}

#[tokio::test]
async fn finished_runs_and_events_stay_within_bounds() {
    let j = MemoryJournal::new(MemoryOptions {
        retention: Retention {
            max_age: None,
            max_runs: Some(3),
        },
        max_events: 5,
    });
    j.create_run(new_run("running")).await.unwrap();
    for i in 0..10 {
        let run = format!("r{i}");
        j.create_run(new_run(&run)).await.unwrap();
        for seq in 0..8 {
            j.append_event(&id(&run), seq, &json!(seq)).await.unwrap();
        }
        j.finish_run(&id(&run), RunStatus::Succeeded, &json!(null))
            .await
            .unwrap();
    }
    let listed = j.list_runs(&RunFilter::default()).await.unwrap().items;
    let ids: Vec<&str> = listed.iter().map(|s| s.run_id.as_str()).collect();
    // The newest three finished, and the one still running.
    assert_eq!(ids, ["r9", "r8", "r7", "running"]);
    assert_eq!(j.events(&id("r9"), 0, 100).await.unwrap().len(), 5);
    assert!(j.request_cancel(&id("running")).await.unwrap());
    assert!(j.cancel_requested(&id("running")).await.unwrap());
    let unfinished = j.load_unfinished().await.unwrap().items;
    assert_eq!(unfinished.len(), 1);
    let report = j
        .prune(&Retention {
            max_age: None,
            max_runs: Some(0),
        })
        .await
        .unwrap();
    assert_eq!(report.runs, 3);
}

#[tokio::test]
async fn finished_runs_past_the_age_are_dropped_as_runs_finish() {
    let j = MemoryJournal::new(MemoryOptions {
        retention: Retention {
            max_age: Some(Duration::from_millis(50)),
            max_runs: None,
        },
        max_events: 10,
    });
    j.create_run(new_run("old")).await.unwrap();
    j.finish_run(&id("old"), RunStatus::Failed, &json!(null))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert!(
        j.show_run(&id("old")).await.unwrap().is_some(),
        "kept until a run finishes"
    );
    j.create_run(new_run("new")).await.unwrap();
    j.finish_run(&id("new"), RunStatus::Succeeded, &json!(null))
        .await
        .unwrap();
    assert!(j.show_run(&id("old")).await.unwrap().is_none());
    assert!(j.show_run(&id("new")).await.unwrap().is_some());
}
