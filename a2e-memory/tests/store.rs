//! The SQLite store on real files: round trips, filters, limits, handles
//! sharing a file, vectors kept in step across handles.

use crate::common;

use std::collections::HashSet;

use a2e_memory::{
    EmbedderConfig, Limits, MemoryStore, NewMemory, OpenAiEmbedder, ScoreKind, SearchQuery,
    SqliteStore, StoreError, StoreOptions,
};
use serde_json::{Map, Value, json};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

async fn open(dir: &tempfile::TempDir) -> SqliteStore {
    SqliteStore::open(dir.path().join("data/memory.db"), StoreOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn round_trip_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let a = store
        .write(
            NewMemory::new("u.1", "The printer only works over the wired network")
                .with_metadata(obj(json!({"source": "chat", "n": 1}))),
        )
        .await
        .unwrap();
    let b = store
        .write(NewMemory::new("u.2", "Network cables are in the drawer"))
        .await
        .unwrap();
    assert_ne!(a.id, b.id);
    assert_eq!(a.metadata["source"], "chat");
    assert!(!a.embedded);
    assert!(
        a.created_at.ends_with('Z') && a.created_at.len() == 24,
        "{}",
        a.created_at
    );
    drop(store);

    let store = open(&dir).await;
    assert_eq!(store.get(&a.id).await.unwrap().as_ref(), Some(&a));
    let names: Vec<(String, u64)> = store
        .namespaces()
        .await
        .unwrap()
        .into_iter()
        .map(|n| (n.name, n.count))
        .collect();
    assert_eq!(names, [("u.1".to_owned(), 1), ("u.2".to_owned(), 1)]);

    // Only the namespaces asked for are searched.
    let hits = store
        .search(SearchQuery::new("network", ["u.1"]))
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
        [a.id.as_str()]
    );
    assert_eq!(hits[0].score.kind, ScoreKind::Bm25);
    assert!(hits[0].score.value > 0.0);
    let both = store
        .search(SearchQuery::new("network", ["u.1", "u.2", "u.1"]))
        .await
        .unwrap();
    assert_eq!(both.len(), 2);

    assert!(store.delete(&a.id).await.unwrap());
    assert!(!store.delete(&a.id).await.unwrap());
    assert_eq!(store.get(&a.id).await.unwrap(), None);
    assert!(
        store
            .search(SearchQuery::new("printer", ["u.1"]))
            .await
            .unwrap()
            .is_empty()
    );
    let names: Vec<String> = store
        .namespaces()
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(names, ["u.2"]);
}

#[tokio::test]
async fn blank_query_lists_newest_and_recent_orders_by_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(
            store
                .write(NewMemory::new("n", format!("memory number {i}")))
                .await
                .unwrap()
                .id,
        );
    }
    let hits = store
        .search(SearchQuery::new("  ", ["n"]).top_k(3))
        .await
        .unwrap();
    let got: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(got, [ids[6].as_str(), ids[5].as_str(), ids[4].as_str()]);
    assert!(hits.iter().all(|h| h.score.kind == ScoreKind::Recent));
    let recent: Vec<String> = store
        .recent("n", 2)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(recent, [ids[6].clone(), ids[5].clone()]);
}

#[tokio::test]
async fn metadata_filter_matches_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let meta = [
        json!({"source": "debug", "level": 2, "pinned": true}),
        json!({"source": "chat", "level": 2}),
        json!({"source": "debug", "level": 3, "pinned": false}),
    ];
    let mut ids = Vec::new();
    for m in &meta {
        ids.push(
            store
                .write(NewMemory::new("f", "shared words here").with_metadata(obj(m.clone())))
                .await
                .unwrap()
                .id,
        );
    }
    let find = |filter: Value| {
        let store = store.clone();
        async move {
            let q = SearchQuery::new("shared words", ["f"]).filter(obj(filter));
            let mut got: Vec<String> = store
                .search(q)
                .await
                .unwrap()
                .into_iter()
                .map(|h| h.id)
                .collect();
            got.sort();
            got
        }
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        find(json!({"source": "debug"})).await,
        sorted(vec![ids[0].clone(), ids[2].clone()])
    );
    assert_eq!(
        find(json!({"source": "debug", "level": 3})).await,
        vec![ids[2].clone()]
    );
    assert_eq!(find(json!({"pinned": true})).await, vec![ids[0].clone()]);
    assert_eq!(find(json!({"pinned": null})).await, vec![ids[1].clone()]);
    assert!(find(json!({"source": "nope"})).await.is_empty());

    for bad in [
        json!({"a.b": 1}),
        json!({"$": 1}),
        json!({"": 1}),
        json!({"x\"] OR 1=1 --": 1}),
    ] {
        let q = SearchQuery::new("shared", ["f"]).filter(obj(bad.clone()));
        let err = store.search(q).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Invalid(ref m) if m.contains("filter key")),
            "{bad}: {err}"
        );
    }
}

#[tokio::test]
async fn hostile_queries_are_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let m = store
        .write(NewMemory::new("q", "content near the column"))
        .await
        .unwrap();
    for q in [
        "\"",
        "content:*",
        "NEAR(content column)",
        "col* OR 1=1; DROP TABLE memories; --",
        "'",
        "^content",
        "*",
    ] {
        let hits = store.search(SearchQuery::new(q, ["q"])).await.unwrap();
        assert!(hits.iter().all(|h| h.id == m.id), "{q}");
    }
    assert!(store.get(&m.id).await.unwrap().is_some());
}

fn invalid<T>(r: Result<T, StoreError>, want: &str) {
    match r {
        Err(e) if e.is_invalid_input() && e.to_string().contains(want) => {}
        other => panic!(
            "expected invalid input with {want:?}, got {:?}",
            other.map(|_| ())
        ),
    }
}

#[tokio::test]
async fn input_over_limits_or_out_of_grammar_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_content_bytes: 100,
        max_metadata_bytes: 50,
        max_query_bytes: 30,
        max_search_namespaces: 2,
        max_filter_keys: 1,
    };
    let store = SqliteStore::open(
        dir.path().join("m.db"),
        StoreOptions::default().limits(limits),
    )
    .await
    .unwrap();
    invalid(
        store.write(NewMemory::new("n", "x".repeat(101))).await,
        "content is 101 bytes (at most 100)",
    );
    invalid(
        store.write(NewMemory::new("n", " \n ")).await,
        "content is empty",
    );
    invalid(
        store
            .write(NewMemory::new("n", "ok").with_metadata(obj(json!({"k": "v".repeat(60)}))))
            .await,
        "metadata is",
    );
    for ns in ["", "a..b", "a.*", "../etc", "a/b", "a b", "%"] {
        invalid(
            store.write(NewMemory::new(ns, "ok")).await,
            "invalid namespace",
        );
        invalid(
            store.search(SearchQuery::new("ok", [ns])).await,
            "invalid namespace",
        );
    }
    invalid(
        store
            .search(SearchQuery::new("ok", Vec::<String>::new()))
            .await,
        "namespaces is empty",
    );
    invalid(
        store.search(SearchQuery::new("ok", ["a", "b", "c"])).await,
        "3 namespaces (at most 2)",
    );
    invalid(
        store.search(SearchQuery::new("ok", ["a"]).top_k(0)).await,
        "top_k is 0",
    );
    invalid(
        store.search(SearchQuery::new("q".repeat(31), ["a"])).await,
        "query is 31 bytes",
    );
    invalid(
        store
            .search(SearchQuery::new("ok", ["a"]).filter(obj(json!({"a": 1, "b": 2}))))
            .await,
        "filter has 2 keys",
    );
    invalid(store.recent("bad..ns", 3).await, "invalid namespace");
    // Nothing was stored; a big top_k is clamped, not refused.
    assert!(store.namespaces().await.unwrap().is_empty());
    let m = store
        .write(NewMemory::new("a", "x".repeat(100)))
        .await
        .unwrap();
    for i in 0..25 {
        store
            .write(NewMemory::new("a", format!("x {i}")))
            .await
            .unwrap();
    }
    assert_eq!(
        store
            .search(SearchQuery::new("x", ["a"]).top_k(1000))
            .await
            .unwrap()
            .len(),
        20
    );
    assert!(store.get(&m.id).await.unwrap().is_some());
    assert_eq!(store.get("no-such-id").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_handles_and_many_tasks_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let (a, b) = tokio::join!(
        SqliteStore::open(&path, StoreOptions::default()),
        SqliteStore::open(&path, StoreOptions::default())
    );
    let handles = [a.unwrap(), b.unwrap()];
    let mut tasks = Vec::new();
    for (h, store) in handles.iter().enumerate() {
        for t in 0..4 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                for i in 0..25 {
                    let m = store
                        .write(NewMemory::new(
                            "team.log",
                            format!("handle {h} task {t} entry {i}"),
                        ))
                        .await
                        .unwrap();
                    ids.push(m.id);
                }
                ids
            }));
        }
    }
    let mut all = HashSet::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    assert_eq!(all.len(), 200);
    let fresh = SqliteStore::open(&path, StoreOptions::default())
        .await
        .unwrap();
    for id in &all {
        assert!(fresh.get(id).await.unwrap().is_some(), "{id} lost");
    }
    assert_eq!(fresh.namespaces().await.unwrap()[0].count, 200);
    assert_eq!(fresh.recent("team.log", 1000).await.unwrap().len(), 200);
}

#[tokio::test]
async fn vectors_follow_writes_and_deletes_of_other_handles() {
    let server = common::EmbeddingServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.db");
    let reader = SqliteStore::open(&path, StoreOptions::default().embedder(server.embedder()))
        .await
        .unwrap();
    let writer = SqliteStore::open(&path, StoreOptions::default().embedder(server.embedder()))
        .await
        .unwrap();
    assert_eq!(reader.embedding_model(), Some("hash-512"));

    let first = writer
        .write(NewMemory::new("v", "The cat sleeps on the sofa"))
        .await
        .unwrap();
    assert!(first.embedded);
    let hits = reader
        .search(SearchQuery::new("cat sofa", ["v"]))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].score.kind, ScoreKind::Hybrid);
    assert!(hits[0].score.cosine.unwrap() > 0.5);
    assert!(hits[0].score.bm25.is_some());

    // Written after the reader loaded its vectors: found by vector alone.
    let second = writer
        .write(NewMemory::new("v", "Sofa cushions were washed"))
        .await
        .unwrap();
    let hits = reader
        .search(SearchQuery::new("sofa", ["v"]))
        .await
        .unwrap();
    assert_eq!(hits.len(), 2);
    assert!(writer.delete(&first.id).await.unwrap());
    let hits = reader
        .search(SearchQuery::new("cat sofa", ["v"]))
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
        [second.id.as_str()]
    );

    // Memories written without an embedder still rank by BM25 in a hybrid search.
    let plain = SqliteStore::open(&path, StoreOptions::default())
        .await
        .unwrap();
    let third = plain
        .write(NewMemory::new("v", "A zebra crossing"))
        .await
        .unwrap();
    assert!(!third.embedded);
    let hits = reader
        .search(SearchQuery::new("zebra", ["v"]))
        .await
        .unwrap();
    assert_eq!(hits.first().map(|h| h.id.as_str()), Some(third.id.as_str()));
    assert_eq!(hits[0].score.cosine, None);
}

#[tokio::test]
async fn embedding_failures_fail_writes_and_degrade_searches() {
    let server = common::EmbeddingServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.db");
    let plain = SqliteStore::open(&path, StoreOptions::default())
        .await
        .unwrap();
    plain
        .write(NewMemory::new("e", "kept by the plain handle"))
        .await
        .unwrap();

    let broken = OpenAiEmbedder::new(EmbedderConfig::new(server.url("/not-json"), "m")).unwrap();
    let store = SqliteStore::open(&path, StoreOptions::default().embedder(broken))
        .await
        .unwrap();
    let err = store
        .write(NewMemory::new("e", "never stored"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Embed(_)), "{err}");
    assert!(!err.is_invalid_input());
    let hits = store
        .search(SearchQuery::new("plain stored", ["e"]))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].score.kind, ScoreKind::Bm25);
    assert_eq!(plain.namespaces().await.unwrap()[0].count, 1);
}

#[tokio::test]
async fn common_words_do_not_crowd_out_rare_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    // 2,500 memories that all say "the note"; a few also say something rare.
    let mut items: Vec<NewMemory> = (0..2500)
        .map(|i| NewMemory::new("big", format!("the note number {i}")))
        .collect();
    items[10] = NewMemory::new("big", "the note about the zeppelin");
    items[20] = NewMemory::new("big", "the note about the harpsichord");
    items[30] = NewMemory::new("big", "another harpsichord note");
    let ids: Vec<String> = store
        .write_batch(items)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();

    // One rare match: fewer than top_k, so every term is used and the rest
    // of the list is filled by the common words.
    let hits = store
        .search(SearchQuery::new("the zeppelin note", ["big"]))
        .await
        .unwrap();
    assert_eq!(hits.len(), 5);
    assert_eq!(hits[0].id, ids[10]);
    // Enough rare matches: they alone are ranked.
    let hits = store
        .search(SearchQuery::new("the harpsichord", ["big"]).top_k(2))
        .await
        .unwrap();
    let mut got: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    got.sort();
    let mut want = vec![ids[20].as_str(), ids[30].as_str()];
    want.sort();
    assert_eq!(got, want);
    // Only common words: ranked as usual.
    assert_eq!(
        store
            .search(SearchQuery::new("the note", ["big"]))
            .await
            .unwrap()
            .len(),
        5
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_handles_opening_one_fresh_file_at_once_all_open() {
    // The switch to WAL and the schema's creation race between the handles;
    // each must wait or retry, never fail with "database is locked".
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fresh.db");
        let opens: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                tokio::spawn(async move { SqliteStore::open(&path, StoreOptions::default()).await })
            })
            .collect();
        for open in opens {
            let store = open.await.unwrap();
            assert!(store.is_ok(), "round {round}: {:?}", store.err());
        }
    }
}
