//! What the SQLite journal costs in commits (under `sync = "full"`, one disk
//! sync each): at most one per awaited write, whatever nobody awaits riding
//! the next commit, and runs that await at once sharing one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2e_journal::{
    Durability, Journal, NewRun, NodeKey, NodeOutcome, RunId, RunKind, RunStatus, SqliteJournal,
    SqliteOptions,
};
use serde_json::json;

async fn open_full(dir: &tempfile::TempDir) -> SqliteJournal {
    SqliteJournal::open_in(
        dir.path(),
        SqliteOptions {
            durability: Durability::PowerLoss,
            ..SqliteOptions::default()
        },
    )
    .await
    .unwrap()
}

fn new_run(id: &RunId) -> NewRun {
    NewRun {
        run_id: id.clone(),
        kind: RunKind::Chain,
        agent: "a".into(),
        request: json!({"type": "chain/req"}),
    }
}

/// How a chain journals its calls.
#[derive(Clone, Copy)]
enum Shape {
    /// A run that does not stream (what a host does on SQLite): the start is
    /// awaited, the result only queued, committed with the next start.
    Deferred,
    /// A run that streams its events: start and result both awaited.
    Streaming,
    /// A call of an idempotent tool: the start only queued, the result
    /// awaited.
    LazyStart,
}

/// Runs a linear chain of `nodes` calls, each taking about a millisecond,
/// journaled as `shape` says, with a `start` and a `done` event per node
/// (queued, never awaited); returns the writes it awaited.
async fn chain(j: &SqliteJournal, shape: Shape, nodes: usize) -> u64 {
    let run = RunId::generate();
    j.create_run(new_run(&run)).await.unwrap();
    let mut awaited = 1;
    let mut pending: Vec<a2e_journal::Ack<bool>> = Vec::new();
    let mut seq = 0;
    for i in 0..nodes {
        let key = NodeKey::new(run.clone(), &format!("n{i}"), 1).unwrap();
        let start = j.node_started(&key);
        if matches!(shape, Shape::LazyStart) {
            drop(start);
        } else {
            start.await.unwrap();
            awaited += 1;
            // Results queued before the start were committed with it.
            for r in pending.drain(..) {
                assert!(r.await.unwrap());
            }
        }
        drop(j.append_event(
            &run,
            seq,
            &json!({"node_id": key.node_id(), "phase": "start"}),
        ));
        seq += 1;
        // The tool.
        tokio::time::sleep(Duration::from_millis(1)).await;
        let result = j.node_finished(&key, &NodeOutcome::output(json!({"i": i})));
        if matches!(shape, Shape::Deferred) {
            pending.push(result);
        } else {
            assert!(result.await.unwrap());
            awaited += 1;
        }
        drop(j.append_event(
            &run,
            seq,
            &json!({"node_id": key.node_id(), "phase": "done"}),
        ));
        seq += 1;
    }
    j.finish_run(&run, RunStatus::Succeeded, &json!({"success": true}))
        .await
        .unwrap();
    awaited += 1;
    // The run's end holds every write queued before it.
    for r in pending {
        assert!(r.await.unwrap());
    }
    let state = j.show_run(&run).await.unwrap().unwrap();
    assert_eq!(state.nodes.len(), nodes);
    assert!(state.nodes.iter().all(|n| n.outcome.is_some()));
    assert_eq!(j.events(&run, 0, 1000).await.unwrap().len(), 2 * nodes);
    awaited
}

#[tokio::test]
async fn under_full_sync_a_chain_costs_at_most_one_commit_per_awaited_write() {
    let dir = tempfile::tempdir().unwrap();
    let j = open_full(&dir).await;
    for (shape, name) in [
        (Shape::Deferred, "not streaming"),
        (Shape::Streaming, "streaming"),
        (Shape::LazyStart, "start not awaited"),
    ] {
        let before = j.commit_stats().commits;
        let awaited = chain(&j, shape, 20).await;
        let commits = j.commit_stats().commits - before;
        // Before group commit covered what nobody awaits, each event, each
        // queued result and each queued start had a commit (a sync) of its
        // own: about twice as many.
        assert!(
            commits <= awaited,
            "{name}: {commits} commits for {awaited} awaited writes"
        );
    }
}

#[tokio::test]
async fn runs_that_await_at_once_share_their_commits() {
    let dir = tempfile::tempdir().unwrap();
    let j = Arc::new(open_full(&dir).await);
    let before = j.commit_stats().commits;
    let runs: Vec<_> = (0..8)
        .map(|_| {
            let j = Arc::clone(&j);
            tokio::spawn(async move { chain(&j, Shape::Streaming, 10).await })
        })
        .collect();
    let mut awaited = 0;
    for r in runs {
        awaited += r.await.unwrap();
    }
    let commits = j.commit_stats().commits - before;
    // Writes queued while a commit syncs go together in the next one.
    assert!(
        commits < awaited,
        "{commits} commits for {awaited} awaited writes of 8 concurrent runs"
    );
}

#[tokio::test]
async fn a_write_nobody_awaits_is_committed_on_its_own_soon() {
    for durability in [Durability::ProcessCrash, Durability::PowerLoss] {
        let dir = tempfile::tempdir().unwrap();
        let j = SqliteJournal::open_in(
            dir.path(),
            SqliteOptions {
                durability,
                ..SqliteOptions::default()
            },
        )
        .await
        .unwrap();
        let run = RunId::generate();
        j.create_run(new_run(&run)).await.unwrap();
        let before = j.commit_stats().commits;
        drop(j.append_event(&run, 0, &json!({"phase": "start"})));
        let t = Instant::now();
        while j.commit_stats().commits == before {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "{durability:?}: a queued event was never committed"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // A second handle on the file (another process) sees it.
        let other = SqliteJournal::open_in(dir.path(), SqliteOptions::default())
            .await
            .unwrap();
        assert_eq!(other.events(&run, 0, 10).await.unwrap().len(), 1);
    }
}
