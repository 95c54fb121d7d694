//! The three tools against a real store and a policy: results, isolation,
//! and bad input refused with the right code.

use std::sync::Arc;

use a2e_memory::{
    DynMemoryStore, Limits, MemoryTools, NamespacePolicy, Principal, SqliteStore, StoreOptions,
    ToolError, tool_specs,
};
use serde_json::{Value, json};

type Tools = MemoryTools<Arc<dyn DynMemoryStore>>;

async fn tools(dir: &tempfile::TempDir) -> Tools {
    let limits = Limits {
        max_content_bytes: 1000,
        ..Limits::default()
    };
    let store = SqliteStore::open(
        dir.path().join("m.db"),
        StoreOptions::default().limits(limits),
    )
    .await
    .unwrap();
    let policy = NamespacePolicy::new([
        "vector.user.${user_id}.*",
        "agent.${agent_id}",
        "shared.team",
    ])
    .unwrap();
    MemoryTools::new(Arc::new(store) as Arc<dyn DynMemoryStore>, policy)
}

fn alice() -> Principal {
    Principal::new("planner", "alice")
}

fn bob() -> Principal {
    Principal::new("writer", "bob")
}

fn refused(err: ToolError, code: &str, text: &str) {
    assert!(err.is_refusal(), "{err}");
    assert_eq!(err.code().as_str(), code, "{err}");
    assert!(err.to_string().contains(text), "{err} lacks {text:?}");
}

#[tokio::test]
async fn write_search_delete() {
    let dir = tempfile::tempdir().unwrap();
    let t = tools(&dir).await;
    let ns = "vector.user.alice.memory";
    let w = t
        .call(&alice(), "memory_write", json!({"namespace": ns, "content": "Alice likes hiking in the Alps", "metadata": {"source": "chat"}}))
        .await
        .unwrap();
    let id = w["id"].as_str().unwrap().to_owned();
    assert_eq!(w["namespace"], ns);
    assert_eq!(w["embedded"], false);
    t.call(&alice(), "memory_write", json!({"namespace": ns, "content": "Alice owns a red bicycle", "metadata": {"source": "form"}}))
        .await
        .unwrap();

    let s = t
        .call(
            &alice(),
            "memory_search",
            json!({"query": "hiking", "namespaces": [ns]}),
        )
        .await
        .unwrap();
    assert_eq!(s["count"], 1);
    assert_eq!(s["top_k"], 5);
    let hit = &s["hits"][0];
    assert_eq!(hit["id"], id.as_str());
    assert_eq!(hit["content"], "Alice likes hiking in the Alps");
    assert_eq!(hit["metadata"], json!({"source": "chat"}));
    assert_eq!(hit["score"]["kind"], "bm25");
    assert!(hit["created_at"].is_string());

    let f = t
        .call(
            &alice(),
            "memory_search",
            json!({"query": "Alice", "namespaces": [ns], "filter": {"source": "form"}}),
        )
        .await
        .unwrap();
    assert_eq!(f["count"], 1);
    assert_eq!(f["hits"][0]["content"], "Alice owns a red bicycle");

    // The Ontheia example's step has no query: newest first.
    let r = t
        .call(
            &alice(),
            "memory_search",
            json!({"namespaces": [ns], "top_k": 5}),
        )
        .await
        .unwrap();
    assert_eq!(r["hits"][0]["content"], "Alice owns a red bicycle");
    assert_eq!(r["hits"][0]["score"]["kind"], "recent");

    let d = t
        .call(
            &alice(),
            "memory_delete",
            json!({"id": id, "namespace": ns}),
        )
        .await
        .unwrap();
    assert_eq!(d, json!({"id": id, "namespace": ns, "deleted": true}));
    let again = t
        .call(&alice(), "memory_delete", json!({"id": id}))
        .await
        .unwrap_err();
    assert!(!again.is_refusal());
    assert_eq!(again.code().as_str(), "tool_error");
    assert!(matches!(again, ToolError::NotFound { .. }));
}

#[tokio::test]
async fn sessions_only_touch_their_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let t = tools(&dir).await;
    let secret = t
        .call(
            &alice(),
            "memory_write",
            json!({"namespace": "vector.user.alice.memory", "content": "alice secret plan"}),
        )
        .await
        .unwrap();
    t.call(
        &alice(),
        "memory_write",
        json!({"namespace": "agent.planner", "content": "planner note"}),
    )
    .await
    .unwrap();
    t.call(
        &bob(),
        "memory_write",
        json!({"namespace": "shared.team", "content": "team secret plan"}),
    )
    .await
    .unwrap();

    for ns in [
        "vector.user.alice.memory",
        "agent.planner",
        "vector.user.bob",
    ] {
        let e = t
            .call(
                &bob(),
                "memory_write",
                json!({"namespace": ns, "content": "x"}),
            )
            .await
            .unwrap_err();
        refused(e, "unauthorized", ns);
    }
    // One forbidden namespace refuses the whole search, nothing is dropped silently.
    let e = t
        .call(
            &bob(),
            "memory_search",
            json!({"query": "secret", "namespaces": ["shared.team", "vector.user.alice.memory"]}),
        )
        .await
        .unwrap_err();
    refused(e, "unauthorized", "vector.user.alice.memory");
    let own = t
        .call(
            &bob(),
            "memory_search",
            json!({"query": "secret plan", "namespaces": ["shared.team"]}),
        )
        .await
        .unwrap();
    assert_eq!(own["count"], 1);
    assert_eq!(own["hits"][0]["content"], "team secret plan");

    // Deleting someone else's memory looks exactly like deleting nothing.
    let id = secret["id"].as_str().unwrap();
    let e = t
        .call(&bob(), "memory_delete", json!({"id": id}))
        .await
        .unwrap_err();
    assert!(matches!(e, ToolError::NotFound { .. }), "{e}");
    let e = t
        .call(
            &bob(),
            "memory_delete",
            json!({"id": id, "namespace": "shared.team"}),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, ToolError::NotFound { .. }), "{e}");
    let e = t
        .call(
            &bob(),
            "memory_delete",
            json!({"id": id, "namespace": "vector.user.alice.memory"}),
        )
        .await
        .unwrap_err();
    refused(e, "unauthorized", "alice");
    assert_eq!(
        t.store().get_dyn(id).await.unwrap().unwrap().content,
        "alice secret plan"
    );

    // A user id that tries to widen its pattern gets nothing.
    for user in ["alice.memory", "*", "..", "bob.x"] {
        let who = Principal::new("writer", user);
        let e = t
            .call(
                &who,
                "memory_search",
                json!({"query": "secret", "namespaces": ["vector.user.alice.memory"]}),
            )
            .await
            .unwrap_err();
        refused(e, "unauthorized", "not allowed");
    }
    let nobody = Principal::default();
    let e = t
        .call(
            &nobody,
            "memory_search",
            json!({"query": "x", "namespaces": ["agent.planner"]}),
        )
        .await
        .unwrap_err();
    refused(e, "unauthorized", "agent.planner");
}

#[tokio::test]
async fn bad_input_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let t = tools(&dir).await;
    let ns = "vector.user.alice.memory";
    let me = alice();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "memory_write",
            json!({"namespace": ns, "content": "x".repeat(1001)}),
            "content is 1001 bytes (at most 1000)",
        ),
        (
            "memory_write",
            json!({"namespace": ns, "content": ""}),
            "content is empty",
        ),
        (
            "memory_write",
            json!({"namespace": "vector.user.alice..memory", "content": "x"}),
            "empty segment",
        ),
        (
            "memory_write",
            json!({"namespace": "vector.user.alice.*", "content": "x"}),
            "'*'",
        ),
        (
            "memory_write",
            json!({"namespace": "vector.user.alice/../bob", "content": "x"}),
            "'/'",
        ),
        (
            "memory_write",
            json!({"namespace": "", "content": "x"}),
            "namespace is empty",
        ),
        (
            "memory_write",
            json!({"namespace": "vector.user.alice.%", "content": "x"}),
            "'%'",
        ),
        (
            "memory_write",
            json!({"content": "x"}),
            "missing field `namespace`",
        ),
        (
            "memory_write",
            json!({"namespace": ns, "content": 5}),
            "content: invalid type",
        ),
        (
            "memory_write",
            json!({"namespace": ns, "content": "x", "metadata": [1]}),
            "metadata: invalid type",
        ),
        ("memory_write", json!("just a string"), "invalid type"),
        (
            "memory_search",
            json!({"query": "x", "namespaces": [ns], "top_k": 0}),
            "top_k: 0 results",
        ),
        (
            "memory_search",
            json!({"query": "x", "namespaces": [ns], "top_k": -1}),
            "top_k: invalid value",
        ),
        (
            "memory_search",
            json!({"query": "x", "namespaces": [ns], "top_k": "five"}),
            "top_k: invalid type",
        ),
        (
            "memory_search",
            json!({"query": "x", "namespaces": []}),
            "at least one namespace",
        ),
        (
            "memory_search",
            json!({"query": "x", "namespaces": ns}),
            "namespaces: invalid type",
        ),
        (
            "memory_search",
            json!({"query": "x", "namespaces": ["a..b"]}),
            "empty segment",
        ),
        (
            "memory_search",
            json!({"query": "x", "namespaces": [ns], "filter": {"a.b": 1}}),
            "filter key",
        ),
        (
            "memory_search",
            json!({"query": "x".repeat(5000), "namespaces": [ns]}),
            "query is 5000 bytes",
        ),
        ("memory_delete", json!({"id": ""}), "id: 1 to 64"),
        (
            "memory_delete",
            json!({"id": "x".repeat(65)}),
            "id: 1 to 64",
        ),
        (
            "memory_delete",
            json!({"id": "abc", "namespace": "a..b"}),
            "empty segment",
        ),
    ];
    for (tool, args, text) in cases {
        let e = t.call(&me, tool, args.clone()).await.unwrap_err();
        assert_eq!(e.code().as_str(), "schema_violation", "{tool} {args}: {e}");
        refused(e, "schema_violation", text);
    }
    let e = t.call(&me, "memory_forget", json!({})).await.unwrap_err();
    refused(e, "unknown_tool", "memory_forget");

    // top_k 1000 is clamped to 20 and says so.
    for i in 0..25 {
        t.call(
            &me,
            "memory_write",
            json!({"namespace": ns, "content": format!("entry {i}")}),
        )
        .await
        .unwrap();
    }
    let s = t
        .call(
            &me,
            "memory_search",
            json!({"query": "entry", "namespaces": [ns], "top_k": 1000}),
        )
        .await
        .unwrap();
    assert_eq!(s["count"], 20);
    assert_eq!(s["top_k"], 20);
    assert_eq!(s["top_k_requested"], 1000);
    let s = t
        .call(
            &me,
            "memory_search",
            json!({"query": "entry", "namespaces": [ns], "top_k": 1}),
        )
        .await
        .unwrap();
    assert_eq!(s["count"], 1);
    assert!(s.get("top_k_requested").is_none());

    // An unknown but well-formed id ran and failed.
    let e = t
        .call(
            &me,
            "memory_delete",
            json!({"id": "00000000-0000-4000-8000-000000000000"}),
        )
        .await
        .unwrap_err();
    assert!(!e.is_refusal());
    assert_eq!(e.code().as_str(), "tool_error");
    assert!(e.to_string().contains("no memory with id"));
}

#[test]
fn specs_describe_the_ontheia_parameters() {
    let specs = tool_specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    assert_eq!(names, a2e_memory::TOOL_NAMES);
    let props = |i: usize| -> Vec<String> {
        let mut keys: Vec<String> = specs[i].input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(props(0), ["content", "metadata", "namespace"]);
    assert_eq!(props(1), ["filter", "namespaces", "query", "top_k"]);
    assert_eq!(props(2), ["id", "namespace"]);
    let required = |i: usize| specs[i].input_schema["required"].clone();
    assert_eq!(required(0), json!(["namespace", "content"]));
    assert_eq!(required(1), json!(["namespaces"]));
    assert_eq!(required(2), json!(["id"]));
}

#[tokio::test]
async fn typed_results_serve_the_ontheia_steps() {
    use a2e_memory::{MemorySearchArgs, MemoryWriteArgs, ScoreKind, TopK};
    let dir = tempfile::tempdir().unwrap();
    let t = tools(&dir).await;
    let ns = "vector.user.alice.debug".to_owned();
    let written = t
        .write_memory(
            &alice(),
            MemoryWriteArgs {
                namespace: ns.clone(),
                content: "User Input: where is my umbrella".into(),
                metadata: Some(
                    json!({"source": "chain_step", "step_id": "write_mem"})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
            },
        )
        .await
        .unwrap();
    let (hits, top_k) = t
        .search_hits(
            &alice(),
            MemorySearchArgs {
                query: Some("umbrella".into()),
                namespaces: vec![ns],
                top_k: Some(50),
                filter: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(top_k, TopK::Clamped(20));
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, written.id);
    assert_eq!(hits[0].metadata["step_id"], "write_mem");
    assert_eq!(hits[0].score.kind, ScoreKind::Bm25);
}
