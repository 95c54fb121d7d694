//! Linear chains, starting with the spec's own wire example.

use crate::common;

use a2e_chain::{Engine, NodeCall, NodeError, runner_fn};
use a2e_proto::{ChainRequest, Message, decode};
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SPEC_LINEAR: &str = r#"{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"read_file","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"skill","name":"text_summarizer","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}"#;

fn spec_request() -> ChainRequest {
    match decode(SPEC_LINEAR.as_bytes()).unwrap() {
        Message::ChainRequest(req) => req,
        other => panic!("not a chain request: {other:?}"),
    }
}

#[tokio::test]
async fn spec_linear_example_runs_read_then_summarize() {
    let req = spec_request();
    let runner = runner_fn(|call: NodeCall| async move {
        match (call.kind.as_str(), &*call.name) {
            ("tool", "read_file") => {
                assert_eq!(call.input, json!({"path": "/data/input.txt"}));
                Ok(json!("the quick brown fox jumps over the lazy dog"))
            }
            ("skill", "text_summarizer") => {
                let text = call.input["text"].as_str().unwrap_or_default();
                Ok(json!({"summary": text.split(' ').take(2).collect::<Vec<_>>().join(" ")}))
            }
            _ => Err(NodeError::tool("unexpected call")),
        }
    });
    let mut events = Vec::new();
    let resp = Engine::new(runner)
        .run(
            &req,
            |ev: &a2e_chain::Event<'_>| events.push(ev.to_wire(&req.id)),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(resp.success, "{:?}", resp.error);
    assert_eq!(resp.req_id, "c1");
    assert_eq!(resp.chain_id, "abc123");
    assert_eq!(resp.nodes_run, 2);
    assert_eq!(resp.error, None);
    assert_eq!(
        resp.outputs,
        json!({
            "read": "the quick brown fox jumps over the lazy dog",
            "summarize": {"summary": "the quick"},
        })
        .as_object()
        .unwrap()
        .clone()
    );
    assert_eq!(resp.final_output, json!({"summary": "the quick"}));
    let got: Vec<_> = events
        .iter()
        .map(|e| {
            (
                e.seq,
                e.req_id.as_str(),
                e.node_id.as_str(),
                e.phase.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, "c1", "read", "start"),
            (1, "c1", "read", "done"),
            (2, "c1", "summarize", "start"),
            (3, "c1", "summarize", "done"),
        ]
    );
    assert_eq!(
        events[1].output,
        json!("the quick brown fox jumps over the lazy dog")
    );
}

#[tokio::test]
async fn inputs_merge_static_values_with_mapped_ones_and_initial_input() {
    let req = request(
        vec![
            then(with_input(tool("a", "echo"), &[("x", json!(1))]), "b"),
            with_input(
                with_map(
                    tool("b", "echo"),
                    &[
                        ("from_a", "a.output.x"),
                        ("seed", "$.input.seed"),
                        ("x", "`2`"),
                    ],
                ),
                &[("x", json!("static, overridden")), ("keep", json!(true))],
            ),
        ],
        "a",
        json!({"seed": "s"}),
    );
    let script = Script::default();
    let (resp, events) = run(&req, &script).await;
    assert!(resp.success);
    assert_eq!(
        resp.outputs["b"],
        json!({"x": 2, "keep": true, "from_a": 1, "seed": "s"})
    );
    // Static keys keep their place (an override too); mapped keys follow.
    let keys: Vec<&str> = resp.outputs["b"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(keys, ["x", "keep", "from_a", "seed"]);
    assert_seq(&events);
}

#[tokio::test]
async fn independent_roots_all_start_and_final_output_is_the_last_terminal() {
    // a -> c, b (independent root, also terminal). Terminals: b and c; c is
    // declared last, so its output is final.
    let req = request(
        vec![
            then(
                with_input(tool("a", "const"), &[("value", json!("A"))]),
                "c",
            ),
            with_input(tool("b", "const"), &[("value", json!("B"))]),
            with_map(tool("c", "echo"), &[("v", "a.output")]),
        ],
        "a",
        json!({}),
    );
    let script = Script::default();
    let (resp, _) = run(&req, &script).await;
    assert!(resp.success);
    assert_eq!(resp.nodes_run, 3);
    assert_eq!(resp.final_output, json!({"v": "A"}));
    assert!(script.called("b"));
}

#[tokio::test]
async fn slow_runners_continue_on_tasks_and_keep_order() {
    let nodes = (0..20)
        .map(|i| {
            let mut n = with_input(tool(&format!("n{i}"), "sleep"), &[("ms", json!(1))]);
            if i > 0 {
                n = with_map(n, &[("prev", &format!("n{}.output.ms", i - 1))]);
            }
            if i < 19 {
                n = then(n, &format!("n{}", i + 1));
            }
            n
        })
        .collect();
    let req = request(nodes, "n0", json!({}));
    let script = Script::default();
    let (resp, events) = run(&req, &script).await;
    assert!(resp.success);
    assert_eq!(resp.nodes_run, 20);
    assert_seq(&events);
    let order: Vec<_> = script.calls().iter().map(|c| c.node_id.clone()).collect();
    assert_eq!(order, (0..20).map(|i| format!("n{i}")).collect::<Vec<_>>());
}

#[tokio::test]
async fn general_expressions_see_only_what_they_name() {
    let req = request(
        vec![
            then(
                with_input(
                    tool("a", "const"),
                    &[("value", json!({"items": [3, 1, 2]}))],
                ),
                "b",
            ),
            with_map(
                tool("b", "echo"),
                &[
                    ("sorted", "sort(a.output.items)"),
                    ("count", "length(a.output.items)"),
                    ("pair", "[a.output.items[0], input.k]"),
                    ("err", "a.error"),
                    ("whole", "a"),
                ],
            ),
        ],
        "a",
        json!({"k": "v"}),
    );
    let (resp, _) = run(&req, &Script::default()).await;
    assert!(resp.success, "{:?}", resp.error);
    assert_eq!(
        resp.outputs["b"],
        json!({
            "sorted": [1, 2, 3],
            "count": 3,
            "pair": [3, "v"],
            "err": null,
            "whole": {"output": {"items": [3, 1, 2]}, "error": null},
        })
    );
}

#[tokio::test]
async fn an_empty_chain_succeeds_with_nothing() {
    let req = request(vec![], "", json!({}));
    let (resp, events) = run(&req, &Script::default()).await;
    assert!(resp.success);
    assert_eq!(resp.nodes_run, 0);
    assert!(events.is_empty());
    assert_eq!(resp.final_output, serde_json::Value::Null);
}

#[tokio::test]
async fn progress_counts_settled_nodes_out_of_the_total() {
    let req = request(
        vec![
            then(tool("a", "echo"), "b"),
            then(tool("b", "echo"), "c"),
            tool("c", "echo"),
        ],
        "a",
        json!({}),
    );
    let engine = Engine::new(Script::default());
    let plan = engine.validate(&req).unwrap();
    assert_eq!(plan.total(), 3);
    assert_eq!(plan.roots().collect::<Vec<_>>(), ["a"]);
    let mut seen = Vec::new();
    let resp = engine
        .run_plan(
            &plan,
            |ev: &a2e_chain::Event<'_>| seen.push((ev.progress.settled, ev.progress.total)),
            CancellationToken::new(),
        )
        .await;
    assert!(resp.success);
    assert_eq!(seen, [(0, 3), (1, 3), (1, 3), (2, 3), (2, 3), (3, 3)]);
}
