//! Hostile chains: expressions built to overflow the parser's stack, absurd
//! timeouts, and panics inside the engine's own work. Each is refused with
//! `schema_violation` or answered with exactly one response; none crashes.

use crate::common;

use a2e_chain::expr::{MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LEN, check_expression};
use a2e_chain::{ChainConfig, Engine, Event, MAX_TIMEOUT_SECS, ValidationError};
use a2e_proto::{ChainNode, ChainRequest, ErrorCode};
use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The hostile expressions of the report: 200,000 `!`, 100,000 nested
/// parentheses and brackets, and the same just past each limit.
fn hostile() -> Vec<(&'static str, String)> {
    let n = MAX_EXPRESSION_DEPTH + 1;
    vec![
        ("200k !", "!".repeat(200_000) + "input"),
        (
            "100k (",
            "(".repeat(100_000) + "input" + &")".repeat(100_000),
        ),
        (
            "100k [",
            "input".to_owned() + &"[".repeat(100_000) + &"]".repeat(100_000),
        ),
        ("deep !", "!".repeat(n) + "input"),
        ("deep (", "(".repeat(n) + "input" + &")".repeat(n)),
        ("deep .", "input".to_owned() + &".a".repeat(n)),
        ("deep []", "input".to_owned() + &"[]".repeat(n)),
        ("deep ||", "input".to_owned() + &" || input".repeat(n)),
        (
            "long",
            "input.".to_owned() + &"a".repeat(MAX_EXPRESSION_LEN),
        ),
    ]
}

/// A chain with `expr` in the field `field` names.
fn chain_with(field: &str, expr: &str) -> ChainRequest {
    match field {
        "input_map" => request(
            vec![with_map(tool("t", "echo"), &[("x", expr)])],
            "t",
            json!({}),
        ),
        "condition" => request(
            vec![branch("b", expr, "t", ""), tool("t", "echo")],
            "b",
            json!({}),
        ),
        "items_path" => request(vec![map("m", expr, "t"), tool("t", "echo")], "m", json!({})),
        other => unreachable!("{other}"),
    }
}

/// Runs `f` on a thread with a small stack: a recursive walk over the
/// hostile text would overflow it.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn hostile_expressions_are_refused_in_every_field_without_recursion() {
    for field in ["input_map", "condition", "items_path"] {
        for (name, expr) in hostile() {
            let req = chain_with(field, &expr);
            let err = on_small_stack(move || {
                Engine::new(Script::default())
                    .validate(&req)
                    .map(|_| ())
                    .unwrap_err()
            });
            let ValidationError::InvalidField {
                node_id,
                field: at,
                message,
            } = &err
            else {
                panic!("{field}/{name}: {err:?}");
            };
            assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION, "{field}/{name}");
            let want = if field == "input_map" {
                "input_map.x"
            } else {
                field
            };
            assert_eq!(at, want, "{field}/{name}");
            assert!(!node_id.is_empty());
            let limit = if name == "long" || expr.len() > MAX_EXPRESSION_LEN {
                MAX_EXPRESSION_LEN
            } else {
                MAX_EXPRESSION_DEPTH
            };
            assert!(
                message.contains(&format!("the limit is {limit}"))
                    || message.contains(&format!("deeper than {limit} levels")),
                "{field}/{name}: {message}"
            );
            // The message names the limit, not the text it refused.
            assert!(
                message.len() < 200,
                "{field}/{name}: {} bytes",
                message.len()
            );
        }
    }
}

#[test]
fn the_scan_is_the_public_guard() {
    for (name, expr) in hostile() {
        assert!(check_expression(&expr).is_err(), "{name}");
    }
    assert!(check_expression("read.output.items[?size > `3`].name").is_ok());
}

/// The deepest expressions the guard lets through evaluate on an ordinary
/// 2 MiB thread, debug build included.
#[test]
fn expressions_at_the_limit_run() {
    let d = MAX_EXPRESSION_DEPTH;
    let at_limit = [
        "!".repeat(d - 1) + "input.a",
        "(".repeat(d / 2 - 1) + "input.a" + &")".repeat(d / 2 - 1),
        "input.a".to_owned() + &"[]".repeat(d / 2 - 1),
        "input".to_owned() + &".a".repeat(d),
        "input".to_owned() + &" || input".repeat(d - 1),
    ];
    for expr in at_limit {
        assert!(check_expression(&expr).is_ok(), "{expr}");
        let out = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || {
                let req = request(
                    vec![with_map(tool("t", "echo"), &[("x", &expr)])],
                    "t",
                    json!({"a": [[1]]}),
                );
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                let (resp, _) = rt.block_on(run(&req, &Script::default()));
                resp.success
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(out);
    }
}

fn chain_timeout(timeout: u64) -> ChainRequest {
    let mut req = request(vec![tool("t", "echo")], "t", json!({}));
    req.timeout = timeout;
    req
}

#[tokio::test]
async fn absurd_chain_timeouts_are_clamped_not_overflowed() {
    for timeout in [u64::MAX, 10_000_000_000_000_000_000, MAX_TIMEOUT_SECS + 1] {
        let (resp, _) = run(&chain_timeout(timeout), &Script::default()).await;
        assert!(resp.success, "{timeout}: {:?}", resp.error);
    }
}

#[tokio::test(start_paused = true)]
async fn a_clamped_chain_timeout_still_fires_at_the_maximum() {
    let mut req = request(vec![tool("t", "hang")], "t", json!({}));
    req.timeout = u64::MAX;
    let (resp, _) = run(&req, &Script::default()).await;
    assert!(!resp.success);
    let error = resp.error.unwrap();
    assert_eq!(error["code"], "timeout");
    assert_eq!(
        error["message"],
        format!("chain exceeded its timeout of {MAX_TIMEOUT_SECS} s")
    );
}

#[tokio::test(start_paused = true)]
async fn absurd_node_and_item_timeouts_are_clamped() {
    for t in [
        json!(1e300),
        json!(u64::MAX),
        json!(1.8e19),
        json!(f64::MAX),
    ] {
        // A node's own timeout, static and mapped.
        let node = with_input(tool("t", "echo"), &[("timeout", t.clone())]);
        let req = request(vec![node], "t", json!({}));
        let (resp, _) = run(&req, &Script::default()).await;
        assert!(resp.success, "{t}: {:?}", resp.error);

        let node = with_map(tool("t", "echo"), &[("timeout", "input.t")]);
        let req = request(vec![node], "t", json!({ "t": t }));
        let (resp, _) = run(&req, &Script::default()).await;
        assert!(resp.success, "{t}: {:?}", resp.error);

        // Map items, each with the template's timeout.
        let item = with_map(tool("t", "echo"), &[("timeout", "item")]);
        let req = request(
            vec![map("m", "input.ts", "t"), item],
            "m",
            json!({"ts": [t, t]}),
        );
        let (resp, _) = run(&req, &Script::default()).await;
        assert!(resp.success, "{t}: {:?}", resp.error);
    }
    // And the clamped node timeout still fires, at the maximum.
    let node = with_input(tool("t", "hang"), &[("timeout", json!(1e300))]);
    let mut req = request(vec![node], "t", json!({}));
    req.timeout = 0;
    let (resp, events) = run(&req, &Script::default()).await;
    assert!(!resp.success);
    assert_eq!(resp.error.unwrap()["node_code"], "timeout");
    let e = events.iter().find(|e| e.phase == "error").unwrap();
    assert_eq!(
        e.error,
        format!("node timed out after {MAX_TIMEOUT_SECS} s")
    );
}

/// Runs `req` with an event sink that panics on `node:phase`.
async fn run_with_panicking_sink(req: &ChainRequest, node: &str, phase: &str) -> Value {
    let runner = a2e_chain::runner_fn(|call: a2e_chain::NodeCall| async move {
        // Pending once, so the result comes back through a task.
        tokio::task::yield_now().await;
        Ok(call.input.into_value())
    });
    let (node, phase) = (node.to_owned(), phase.to_owned());
    let sink = move |ev: &Event<'_>| {
        if *ev.node_id == *node && ev.phase.as_str() == phase {
            panic!("sink blew up at {node}:{phase}");
        }
    };
    let resp = Engine::new(runner)
        .with_config(ChainConfig::default())
        .run(req, sink, CancellationToken::new())
        .await
        .unwrap();
    serde_json::to_value(resp).unwrap()
}

#[tokio::test]
async fn a_panic_in_the_engines_work_for_a_node_is_that_nodes_failure() {
    // Panics when the node starts: the node fails with runtime_error.
    let nodes: Vec<ChainNode> = vec![then(tool("a", "x"), "b"), tool("b", "x")];
    let req = request(nodes, "a", json!({}));
    let resp = run_with_panicking_sink(&req, "a", "start").await;
    assert_eq!(resp["success"], false);
    assert_eq!(resp["error"]["node_id"], "a");
    assert_eq!(resp["error"]["node_code"], "runtime_error");
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("node panicked: sink blew up at a:start"),
        "{resp}"
    );

    // Under `skip`, the chain goes on past it.
    let nodes = vec![then(on_error(tool("a", "x"), "skip"), "b"), tool("b", "x")];
    let req = request(nodes, "a", json!({}));
    let resp = run_with_panicking_sink(&req, "a", "start").await;
    assert_eq!(resp["success"], true, "{resp}");
    assert_eq!(resp["nodes_run"], 2);
}

#[tokio::test]
async fn a_panic_in_the_scheduler_still_ends_in_one_response() {
    // `done` is emitted while the scheduler takes a result from a task.
    let nodes = vec![then(tool("a", "x"), "b"), tool("b", "x")];
    let req = request(nodes, "a", json!({}));
    let resp = run_with_panicking_sink(&req, "a", "done").await;
    assert_eq!(resp["success"], false);
    assert_eq!(resp["error"]["code"], "runtime_error");
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("chain panicked: sink blew up at a:done"),
        "{resp}"
    );
}
