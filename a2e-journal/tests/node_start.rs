//! What a node started with ([`Journal::node_started_with`]) and its span
//! ([`Journal::node_traced`]), kept with its record: in the SQLite file
//! (also one written by the previous schema, migrated when opened) and in
//! JetStream over a real nats-server.

use crate::common;

use a2e_journal::nats::{NatsJournal, NatsOptions};
use a2e_journal::{
    Journal, MAX_START_INPUT_BYTES, NewRun, NodeKey, NodeOutcome, NodeStart, RunId, RunKind,
    SqliteJournal, SqliteOptions,
};
use common::nats_server::NatsServer;
use serde_json::{Value, json};

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const SPAN: &str = "b7ad6b7169203331";

fn key(run: &str, node: &str, attempt: u32) -> NodeKey {
    NodeKey::new(RunId::parse(run).unwrap(), node, attempt).unwrap()
}

fn new_run(id: &str) -> NewRun {
    NewRun {
        run_id: RunId::parse(id).unwrap(),
        kind: RunKind::Chain,
        agent: "alice".into(),
        request: json!({"id": id}),
    }
}

/// Starts with detail, a span, a plain start, a cut input and a result,
/// then reads them back: the same for every store.
async fn starts_are_kept(j: &dyn Journal) {
    j.create_run(new_run("r1")).await.unwrap();
    let start = NodeStart::with_input(json!({"q": "resolved", "n": 3}));
    j.node_started_with(&key("r1", "a", 1), &start)
        .await
        .unwrap();
    j.node_traced(&key("r1", "a", 1), TRACE, SPAN)
        .await
        .unwrap();
    j.node_finished(&key("r1", "a", 1), &NodeOutcome::output(json!(1)))
        .await
        .unwrap();
    j.node_started(&key("r1", "plain", 1)).await.unwrap();
    let big = json!({"text": "x".repeat(3 * MAX_START_INPUT_BYTES)});
    j.node_started_with(&key("r1", "big", 1), &NodeStart::with_input(big))
        .await
        .unwrap();
    // A span for a node that never started: nothing to join, no error.
    j.node_traced(&key("r1", "ghost", 1), TRACE, SPAN)
        .await
        .unwrap();
    j.flush().await.unwrap();

    let state = j
        .show_run(&RunId::parse("r1").unwrap())
        .await
        .unwrap()
        .unwrap();
    let a = state.latest("a").unwrap();
    let got = a.start.as_ref().unwrap();
    assert_eq!(got.input, Some(json!({"q": "resolved", "n": 3})));
    assert_eq!(got.trace_id.as_deref(), Some(TRACE));
    assert_eq!(got.span_id.as_deref(), Some(SPAN));
    assert!(a.outcome.is_some());
    assert_eq!(state.latest("plain").unwrap().start, None);
    let big = state.latest("big").unwrap().start.as_ref().unwrap();
    let text = big.input.as_ref().and_then(Value::as_str).unwrap();
    assert!(text.len() <= MAX_START_INPUT_BYTES, "{}", text.len());
    assert_eq!(big.input_bytes, Some(3 * MAX_START_INPUT_BYTES as u64 + 11));
    assert!(state.latest("ghost").is_none());
    // The detail goes out with the record (`a2e runs show`, the view).
    let v = serde_json::to_value(a).unwrap();
    assert_eq!(v["start"]["span_id"], SPAN);
}

#[tokio::test]
async fn sqlite_keeps_what_a_node_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let j = SqliteJournal::open_in(dir.path(), SqliteOptions::default())
        .await
        .unwrap();
    starts_are_kept(&j).await;
}

#[tokio::test]
async fn a_file_of_the_previous_schema_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    {
        // Version 1, as the previous release wrote it, with a run in it.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE runs (run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, agent TEXT NOT NULL,
                 request TEXT NOT NULL, status TEXT NOT NULL, created_ms INTEGER NOT NULL,
                 finished_ms INTEGER, cancel_requested INTEGER NOT NULL DEFAULT 0, answer TEXT)
                 WITHOUT ROWID;
             CREATE TABLE nodes (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
                 node_id TEXT NOT NULL, attempt INTEGER NOT NULL, started_ms INTEGER NOT NULL,
                 finished_ms INTEGER, outcome TEXT, PRIMARY KEY (run_id, node_id, attempt))
                 WITHOUT ROWID;
             CREATE TABLE events (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
                 seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (run_id, seq))
                 WITHOUT ROWID;
             INSERT INTO runs (run_id, kind, agent, request, status, created_ms)
                 VALUES ('old', 'chain', 'bob', '{}', 'running', 1);
             INSERT INTO nodes (run_id, node_id, attempt, started_ms, finished_ms, outcome)
                 VALUES ('old', 'n', 1, 2, 3, '{\"ok\":\"true\",\"output\":7}');
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let j = SqliteJournal::open(&path, SqliteOptions::default())
        .await
        .unwrap();
    let old = j
        .show_run(&RunId::parse("old").unwrap())
        .await
        .unwrap()
        .unwrap();
    let n = old.latest("n").unwrap();
    assert_eq!(n.outcome, Some(NodeOutcome::output(json!(7))));
    assert_eq!(n.start, None);
    // The old run's next node starts with its detail.
    let start = NodeStart::with_input(json!({"k": "v"}));
    j.node_started_with(&key("old", "m", 1), &start)
        .await
        .unwrap();
    let old = j
        .show_run(&RunId::parse("old").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(old.latest("m").unwrap().start, Some(start));
    drop(j);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 3);
    // Schema 3: `runs` has rowids (its foreign keys still hold).
    let runs_sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'runs'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!runs_sql.contains("WITHOUT ROWID"), "{runs_sql}");
    let fk_errors: i64 = conn
        .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(fk_errors, 0);
    // Opened again: already migrated, nothing to do.
    drop(conn);
    let j = SqliteJournal::open(&path, SqliteOptions::default())
        .await
        .unwrap();
    starts_are_kept(&j).await;
}

#[tokio::test]
async fn jetstream_keeps_what_a_node_started_with() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let j = NatsJournal::connect(&server.url(), NatsOptions::default())
        .await
        .unwrap();
    starts_are_kept(&j).await;
}
