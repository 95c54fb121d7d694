//! Recall@5 on the labelled set in `tests/data/recall.json`, with BM25
//! alone and with embeddings from the scripted server.

use crate::common;

use std::collections::HashMap;

use a2e_memory::{MemoryStore, NewMemory, ScoreKind, SearchQuery, SqliteStore, StoreOptions};
use serde::Deserialize;

#[derive(Deserialize)]
struct Set {
    notes: Vec<Note>,
    queries: Vec<Query>,
}

#[derive(Deserialize)]
struct Note {
    key: String,
    content: String,
}

#[derive(Deserialize)]
struct Query {
    query: String,
    answers: Vec<String>,
}

fn load() -> Set {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/recall.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

const NS: &str = "recall.notes";

/// Mean over the queries of the share of their answers in the top 5.
async fn recall_at_5(store: &SqliteStore, set: &Set, want_kind: ScoreKind) -> f64 {
    let ids: Vec<String> = store
        .write_batch(
            set.notes
                .iter()
                .map(|n| NewMemory::new(NS, n.content.clone()))
                .collect(),
        )
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    let key_of: HashMap<&str, &str> = ids
        .iter()
        .map(String::as_str)
        .zip(set.notes.iter().map(|n| n.key.as_str()))
        .collect();
    let mut total = 0.0;
    for q in &set.queries {
        let hits = store
            .search(SearchQuery::new(q.query.as_str(), [NS]).top_k(5))
            .await
            .unwrap();
        assert!(hits.len() <= 5);
        assert!(
            hits.iter().all(|h| h.score.kind == want_kind),
            "{}",
            q.query
        );
        let found = q
            .answers
            .iter()
            .filter(|a| {
                hits.iter()
                    .any(|h| key_of.get(h.id.as_str()) == Some(&a.as_str()))
            })
            .count();
        if found < q.answers.len() {
            eprintln!(
                "missed: {:?} → {:?}",
                q.query,
                hits.iter().map(|h| &h.content).collect::<Vec<_>>()
            );
        }
        total += found as f64 / q.answers.len() as f64;
    }
    total / set.queries.len() as f64
}

#[test]
fn the_set_is_what_it_claims() {
    let set = load();
    assert_eq!(set.notes.len(), 200);
    assert_eq!(set.queries.len(), 30);
    let keys: Vec<&str> = set.notes.iter().map(|n| n.key.as_str()).collect();
    for q in &set.queries {
        assert!(!q.answers.is_empty());
        assert!(
            q.answers.iter().all(|a| keys.contains(&a.as_str())),
            "{}",
            q.query
        );
    }
}

#[tokio::test]
async fn recall_with_bm25_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("m.db"), StoreOptions::default())
        .await
        .unwrap();
    let recall = recall_at_5(&store, &load(), ScoreKind::Bm25).await;
    eprintln!("recall@5 bm25 = {recall:.3}");
    assert!(recall >= BM25_MIN, "recall@5 with BM25 fell to {recall:.3}");
}

#[tokio::test]
async fn recall_with_embeddings() {
    let server = common::EmbeddingServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(
        dir.path().join("m.db"),
        StoreOptions::default().embedder(server.embedder()),
    )
    .await
    .unwrap();
    let recall = recall_at_5(&store, &load(), ScoreKind::Hybrid).await;
    eprintln!("recall@5 hybrid = {recall:.3}");
    assert!(
        recall >= HYBRID_MIN,
        "recall@5 with embeddings fell to {recall:.3}"
    );
    // 200 notes in batches of 64 plus one request per query.
    assert_eq!(
        server.seen.texts.load(std::sync::atomic::Ordering::SeqCst),
        200 + 30
    );
    assert_eq!(
        server
            .seen
            .requests
            .load(std::sync::atomic::Ordering::SeqCst),
        4 + 30
    );
}

/// Measured: 28 of 30 queries fully answered in the top 5 (0.933); the two
/// misses need a synonym (`nut` → `peanuts`, `vim` → `Neovim`).
const BM25_MIN: f64 = 0.93;
/// Measured: 0.967; the scripted model's synonyms find `Neovim` for `vim`.
const HYBRID_MIN: f64 = 0.96;
