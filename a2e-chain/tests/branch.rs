//! Branch nodes: both sides, skip propagation, joins, `output`.

use crate::common;

use common::*;
use serde_json::json;

/// fetch -> check ? process -> report : log_empty
fn chain(items: serde_json::Value) -> a2e_proto::ChainRequest {
    request(
        vec![
            then(
                with_input(
                    tool("fetch", "const"),
                    &[("value", json!({"items": items}))],
                ),
                "check",
            ),
            branch(
                "check",
                "length(output.items) > `0`",
                "process",
                "log_empty",
            ),
            then(
                with_map(
                    tool("process", "echo"),
                    &[("n", "length(fetch.output.items)")],
                ),
                "report",
            ),
            with_map(tool("report", "echo"), &[("done", "process.output.n")]),
            with_input(
                tool("log_empty", "const"),
                &[("value", json!("nothing to do"))],
            ),
        ],
        "fetch",
        json!({}),
    )
}

#[tokio::test]
async fn true_side_runs_and_false_side_is_skipped() {
    let script = Script::default();
    let (resp, events) = run(&chain(json!([1, 2])), &script).await;
    assert!(resp.success, "{:?}", resp.error);
    assert_eq!(
        phases(&events),
        [
            "fetch:start",
            "fetch:done",
            "check:start",
            "check:done",
            "log_empty:skip",
            "process:start",
            "process:done",
            "report:start",
            "report:done",
        ]
    );
    assert_eq!(
        resp.outputs["check"],
        json!({"condition": true, "taken": "process"})
    );
    assert_eq!(resp.outputs["report"], json!({"done": 2}));
    assert!(!resp.outputs.contains_key("log_empty"));
    assert!(!script.called("log_empty"));
    // report is the last terminal that completed; log_empty was skipped.
    assert_eq!(resp.final_output, json!({"done": 2}));
    assert_eq!(resp.nodes_run, 4);
    assert_seq(&events);
}

#[tokio::test]
async fn false_side_runs_and_everything_only_reachable_from_true_is_skipped() {
    let script = Script::default();
    let (resp, events) = run(&chain(json!([])), &script).await;
    assert!(resp.success);
    assert_eq!(
        phases(&events),
        [
            "fetch:start",
            "fetch:done",
            "check:start",
            "check:done",
            "process:skip",
            "report:skip",
            "log_empty:start",
            "log_empty:done",
        ]
    );
    assert_eq!(
        resp.outputs["check"],
        json!({"condition": false, "taken": "log_empty"})
    );
    assert_eq!(resp.final_output, json!("nothing to do"));
    assert!(!script.called("process") && !script.called("report"));
    assert_eq!(resp.nodes_run, 3);
}

#[tokio::test]
async fn a_join_after_both_sides_runs_with_the_untaken_side_null() {
    // b ? t : f ; t.next = j ; f.next = j ; j reads both.
    let req = request(
        vec![
            branch("b", "input.flag", "t", "f"),
            then(
                with_input(tool("t", "const"), &[("value", json!("T"))]),
                "j",
            ),
            then(
                with_input(tool("f", "const"), &[("value", json!("F"))]),
                "j",
            ),
            with_map(tool("j", "echo"), &[("t", "t.output"), ("f", "f.output")]),
        ],
        "b",
        json!({"flag": true}),
    );
    let (resp, events) = run(&req, &Script::default()).await;
    assert!(resp.success);
    assert_eq!(resp.outputs["j"], json!({"t": "T", "f": null}));
    assert!(phases(&events).contains(&"f:skip".to_owned()));
}

#[tokio::test]
async fn a_node_reading_only_the_untaken_side_is_skipped_but_one_with_another_live_input_runs() {
    let req = request(
        vec![
            then(tool("seed", "echo"), "b"),
            branch("b", "`false`", "t", ""),
            tool("t", "echo"),
            with_map(tool("only_t", "echo"), &[("x", "t.output")]),
            with_map(
                tool("t_or_seed", "echo"),
                &[("x", "t.output"), ("y", "seed.output")],
            ),
        ],
        "seed",
        json!({}),
    );
    let (resp, events) = run(&req, &Script::default()).await;
    assert!(resp.success);
    let p = phases(&events);
    assert!(p.contains(&"t:skip".to_owned()));
    assert!(p.contains(&"only_t:skip".to_owned()));
    assert_eq!(resp.outputs["t_or_seed"], json!({"x": null, "y": {}}));
    assert_eq!(
        resp.outputs["b"],
        json!({"condition": false, "taken": null})
    );
}

#[tokio::test]
async fn condition_errors_follow_on_error() {
    let req = request(
        vec![
            then(
                with_input(tool("a", "const"), &[("value", json!("text"))]),
                "b",
            ),
            on_error(branch("b", "length(output) > abs(output)", "t", ""), "skip"),
            tool("t", "echo"),
        ],
        "a",
        json!({}),
    );
    let (resp, events) = run(&req, &Script::default()).await;
    assert!(resp.success);
    let err = events
        .iter()
        .find(|e| e.node == "b" && e.phase == "error")
        .unwrap();
    assert!(err.error.contains("condition"), "{}", err.error);
    // The skipped-with-error branch chose no side: its target is skipped.
    assert!(phases(&events).contains(&"t:skip".to_owned()));
}
