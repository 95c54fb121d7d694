//! Map nodes: empty, one and many items, order, bounds, item failures.

use crate::common;

use a2e_chain::ChainConfig;
use common::*;
use serde_json::{Value, json};

fn map_chain(items: Value, template: a2e_proto::ChainNode) -> a2e_proto::ChainRequest {
    request(
        vec![
            then(map("each", "input.files", "proc_file"), "after"),
            template,
            with_map(tool("after", "echo"), &[("all", "each.output")]),
        ],
        "each",
        json!({"files": items}),
    )
}

fn echo_template() -> a2e_proto::ChainNode {
    with_map(
        tool("proc_file", "echo"),
        &[("file", "item"), ("i", "index"), ("seed", "input.files[0]")],
    )
}

#[tokio::test]
async fn zero_items_give_an_empty_list() {
    let (resp, events) = run(&map_chain(json!([]), echo_template()), &Script::default()).await;
    assert!(resp.success);
    assert_eq!(resp.outputs["each"], json!([]));
    assert_eq!(resp.outputs["after"], json!({"all": []}));
    assert_eq!(
        phases(&events),
        ["each:start", "each:done", "after:start", "after:done"]
    );
    assert!(!resp.outputs.contains_key("proc_file"));
}

#[tokio::test]
async fn one_item() {
    let (resp, events) = run(
        &map_chain(json!(["a.txt"]), echo_template()),
        &Script::default(),
    )
    .await;
    assert!(resp.success);
    assert_eq!(
        resp.outputs["each"],
        json!([{"file": "a.txt", "i": 0, "seed": "a.txt"}])
    );
    assert_eq!(
        phases(&events),
        [
            "each:start",
            "proc_file[0]:start",
            "proc_file[0]:done",
            "each:done",
            "after:start",
            "after:done"
        ]
    );
    assert_eq!(resp.nodes_run, 3);
}

#[tokio::test]
async fn a_thousand_items_keep_item_order_under_bounded_concurrency() {
    // Items sleep for varying times so they finish out of order.
    let items: Vec<Value> = (0..1000)
        .map(|i| json!({"id": i, "ms": (i * 7) % 5}))
        .collect();
    let template = with_map(
        tool("proc_file", "sleep"),
        &[("ms", "item.ms"), ("id", "item.id")],
    );
    let script = Script::default();
    let config = ChainConfig {
        map_concurrency: 16,
        ..ChainConfig::default()
    };
    let (resp, events) = run_with(&map_chain(json!(items), template), &script, config).await;
    assert!(resp.success, "{:?}", resp.error);
    let out = resp.outputs["each"].as_array().unwrap();
    assert_eq!(out.len(), 1000);
    for (i, v) in out.iter().enumerate() {
        assert_eq!(v["id"], json!(i));
    }
    assert!(
        script
            .max_in_flight
            .load(std::sync::atomic::Ordering::SeqCst)
            <= 16
    );
    assert_eq!(resp.nodes_run, 1002);
    assert_seq(&events);
    assert_eq!(
        events
            .iter()
            .filter(|e| e.phase == "done" && e.node.starts_with("proc_file["))
            .count(),
        1000
    );
}

#[tokio::test]
async fn an_item_failure_fails_the_map_under_its_policy() {
    let items = json!([{"ok": 1}, {"message": "bad item"}, {"ok": 3}]);
    // The template fails on every item; the first failure fails the map.
    let template = with_map(tool("proc_file", "fail"), &[("message", "item.message")]);
    let req = request(
        vec![
            on_error(map("each", "input.files", "proc_file"), "skip"),
            template,
        ],
        "each",
        json!({"files": items}),
    );
    let (resp, events) = run(&req, &Script::default()).await;
    // The map's own policy is skip: the chain goes on, the map's output is null.
    assert!(resp.success);
    assert_eq!(resp.outputs["each"], Value::Null);
    let map_err = events
        .iter()
        .find(|e| e.node == "each" && e.phase == "error")
        .unwrap();
    assert!(map_err.error.starts_with("item 0: "), "{}", map_err.error);
}

#[tokio::test]
async fn a_template_with_skip_turns_failed_items_into_null() {
    // `abs` of a string is a run-time JMESPath error: item 1 fails before
    // its runner is called, and the template's `skip` makes it `null`.
    let template = on_error(
        with_map(tool("proc_file", "echo"), &[("v", "abs(item)")]),
        "skip",
    );
    let req = map_chain(json!([1, "x", 3]), template);
    let (resp, events) = run(&req, &Script::default()).await;
    assert!(resp.success, "{:?}", resp.error);
    assert_eq!(resp.outputs["each"], json!([{"v": 1.0}, null, {"v": 3.0}]));
    assert!(
        events
            .iter()
            .any(|e| e.node == "proc_file[1]" && e.phase == "error")
    );
}

#[tokio::test]
async fn items_path_that_is_not_a_list_is_a_node_error() {
    let (resp, _) = run(
        &map_chain(json!("not a list"), echo_template()),
        &Script::default(),
    )
    .await;
    assert!(!resp.success);
    let err = resp.error.unwrap();
    assert_eq!(err["code"], "chain_node_error");
    assert_eq!(err["node_id"], "each");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("expected a list, got a string")
    );
}

#[tokio::test]
async fn items_from_an_upstream_node_are_checked_against_the_limit_at_run_time() {
    let req = request(
        vec![
            then(
                with_input(tool("list", "const"), &[("value", json!([1, 2, 3]))]),
                "each",
            ),
            map("each", "list.output", "t"),
            tool("t", "echo"),
        ],
        "list",
        json!({}),
    );
    let config = ChainConfig {
        max_map_items: 2,
        ..ChainConfig::default()
    };
    let (resp, _) = run_with(&req, &Script::default(), config).await;
    assert!(!resp.success);
    let err = resp.error.unwrap();
    assert_eq!(err["node_code"], "schema_violation");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("3 items; the limit is 2")
    );
}

#[tokio::test]
async fn item_is_a_node_outside_templates_and_the_item_inside() {
    let req = request(
        vec![
            then(
                with_input(tool("item", "const"), &[("value", json!("node"))]),
                "user",
            ),
            with_map(tool("user", "echo"), &[("v", "item.output")]),
            map("m", "input.xs", "t"),
            with_map(tool("t", "echo"), &[("v", "item")]),
        ],
        "item",
        json!({"xs": ["a", "b"]}),
    );
    let (resp, _) = run(&req, &Script::default()).await;
    assert!(resp.success, "{:?}", resp.error);
    assert_eq!(resp.outputs["user"], json!({"v": "node"}));
    assert_eq!(resp.outputs["m"], json!([{"v": "a"}, {"v": "b"}]));
}
