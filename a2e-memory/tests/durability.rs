//! Acknowledged writes survive SIGKILL; writer processes sharing a file
//! lose nothing.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use a2e_memory::{MemoryStore, SqliteStore, StoreOptions};

const WRITER: &str = env!("CARGO_BIN_EXE_a2e-memory-writer");

#[tokio::test]
async fn acknowledged_writes_survive_sigkill() {
    kill_and_reopen("full").await;
}

#[tokio::test]
async fn acknowledged_writes_survive_sigkill_with_normal_sync() {
    kill_and_reopen("normal").await;
}

async fn kill_and_reopen(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kill.db");
    let mut child = Command::new(WRITER)
        .args([db.to_str().unwrap(), "durable.notes", "0", mode])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked = Vec::new();
    while acked.len() < 40 {
        acked.push(lines.next().expect("writer stopped early").unwrap());
    }
    // SIGKILL while it is in the middle of further writes.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    // Ids printed after the last one read were acknowledged too.
    acked.extend(lines.map_while(Result::ok));

    let store = SqliteStore::open(&db, StoreOptions::default())
        .await
        .unwrap();
    for id in &acked {
        assert!(
            store.get(id).await.unwrap().is_some(),
            "acknowledged {id} lost"
        );
    }
    let count = store.namespaces().await.unwrap()[0].count;
    assert!(count >= acked.len() as u64, "{count} < {}", acked.len());
    assert!(
        count <= acked.len() as u64 + 1,
        "{count} rows for {} acknowledgements",
        acked.len()
    );
}

#[tokio::test]
async fn concurrent_writer_processes_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let children: Vec<_> = (0..3)
        .map(|i| {
            Command::new(WRITER)
                .args([db.to_str().unwrap(), &format!("proc.w{i}"), "60"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ids = HashSet::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.lines().count(), 60);
        ids.extend(text.lines().map(str::to_owned));
    }
    assert_eq!(ids.len(), 180);
    let store = SqliteStore::open(&db, StoreOptions::default())
        .await
        .unwrap();
    for id in &ids {
        assert!(store.get(id).await.unwrap().is_some(), "{id} lost");
    }
    let counts: Vec<u64> = store
        .namespaces()
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.count)
        .collect();
    assert_eq!(counts, [60, 60, 60]);
}
