//! Arbitrary input never panics the grammar, the policy or the tools, and
//! what the grammar accepts is only ever its own alphabet.

use a2e_memory::{
    MemoryTools, NamespacePolicy, Principal, SqliteStore, StoreOptions, validate_namespace,
};
use proptest::prelude::*;
use serde_json::json;

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'
}

proptest! {
    #[test]
    fn accepted_namespaces_are_plain(s in "\\PC{0,140}|[a-z.*%/_-]{0,20}") {
        if validate_namespace(&s).is_ok() {
            prop_assert!(s.chars().all(allowed));
            prop_assert!(!s.starts_with('.') && !s.ends_with('.') && !s.contains(".."));
            prop_assert!(!s.is_empty() && s.len() <= 128);
        }
    }

    #[test]
    fn policy_never_widens(user in "\\PC{0,20}|[a-z.*]{0,6}", ns in "[a-z0-9.*]{1,30}") {
        let policy = NamespacePolicy::new(["vector.user.${user_id}.memory"]).unwrap();
        let who = Principal::new("a", user.clone());
        if policy.allows(&who, &ns) {
            prop_assert_eq!(ns, format!("vector.user.{user}.memory"));
            prop_assert!(!user.is_empty() && !user.contains('.') && !user.contains('*'));
        }
    }

    #[test]
    fn patterns_compile_or_fail_cleanly(p in "\\PC{0,40}|[a-z.*${}_]{0,30}") {
        let _ = NamespacePolicy::new([p]);
    }
}

#[test]
fn arbitrary_tool_arguments_are_answered() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tools = rt.block_on(async {
        let store = SqliteStore::open(dir.path().join("p.db"), StoreOptions::default())
            .await
            .unwrap();
        MemoryTools::new(store, NamespacePolicy::allow_all())
    });
    let values = proptest::collection::vec(
        prop_oneof![
            Just(json!(null)),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|n| json!(n)),
            "\\PC{0,30}".prop_map(|s| json!(s)),
            proptest::collection::vec("[a-z.]{0,10}", 0..3).prop_map(|v| json!(v)),
            Just(json!({"k": [1, {"x": true}]})),
        ],
        6,
    );
    let mut runner = proptest::test_runner::TestRunner::default();
    runner
        .run(&(0usize..3, values), |(tool, v)| {
            let name = a2e_memory::TOOL_NAMES[tool];
            let args = json!({
                "namespace": v[0], "content": v[1], "query": v[2], "namespaces": v[3], "top_k": v[4],
                "id": v[5], "metadata": v[5], "filter": v[4],
            });
            let who = Principal::default();
            let out = rt.block_on(tools.call(&who, name, args));
            if let Err(e) = out {
                prop_assert!(!e.to_string().is_empty());
                prop_assert!(["schema_violation", "unauthorized", "tool_error"].contains(&e.code().as_str()));
            }
            Ok(())
        })
        .unwrap();
}
