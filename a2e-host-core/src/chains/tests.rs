//! The host's chain runner and event sink, on a host with two tools.

use std::time::Duration;

use a2e_proto::{ChainNode, NodeKind};
use serde_json::json;

use super::runner::MAX_KEPT_REQUESTS;
use super::sink::{EVENT_AGE, EVENT_CHUNK, EVENT_SEGMENT, EVENT_SLACK};
use super::*;
use crate::config::HostConfig;
use a2e_test_kit::plugin::Named;

/// A streaming linear chain of `n` nodes of tool `a` with `input`.
fn streaming_chain(n: usize, input: Value) -> ChainRequest {
    let nodes: Vec<ChainNode> = (0..n)
        .map(|i| {
            let mut node = ChainNode::new(&format!("n{i}"), NodeKind::TOOL, "a");
            node.input = input.as_object().cloned().unwrap_or_default();
            if i + 1 < n {
                node.next_node = format!("n{}", i + 1);
            }
            node
        })
        .collect();
    ChainRequest {
        entry_node: "n0".into(),
        nodes,
        streaming: true,
        ..ChainRequest::default()
    }
}

/// Runs `req`, then reads what its stream received: the items of event
/// lines (each at most a segment and the line that filled it), the
/// lines and bytes in all, and how long the run took.
async fn runs_of(req: &ChainRequest) -> (usize, usize, usize, Duration) {
    let (tx, mut rx) = EventStream::channel(1024);
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let options = CallOptions::new().session("s").events(tx).cancel(&cancel);
    let resp = run_request(&host(), req, options).await.unwrap();
    let took = started.elapsed();
    assert!(resp.success, "{:?}", resp.error);
    let (mut runs, mut lines, mut total) = (0, 0, 0);
    while let Some(out) = rx.recv().await {
        if let Outbound::Lines(bytes) = out {
            runs += 1;
            assert!(
                bytes.len() <= EVENT_SEGMENT + EVENT_SLACK,
                "{}",
                bytes.len()
            );
            lines += bytes.iter().filter(|b| **b == b'\n').count();
            total += bytes.len();
        }
    }
    (runs, lines, total, took)
}

#[tokio::test]
async fn a_stretch_of_inline_nodes_hands_its_events_on_by_age_and_size_only() {
    // 500 nodes, 1000 events: one run at the end, plus at most one per
    // EVENT_AGE the stretch lasted and one per EVENT_CHUNK written; each
    // run in segments of EVENT_SEGMENT and its rest.
    let (items, lines, bytes, took) = runs_of(&streaming_chain(500, json!({"x": 1}))).await;
    assert_eq!(lines, 1000);
    let aged = usize::try_from(took.as_micros() / EVENT_AGE.as_micros()).unwrap();
    let runs = 1 + aged + bytes / EVENT_CHUNK;
    let bound = runs + bytes / EVENT_SEGMENT;
    assert!(
        items <= bound,
        "{items} items in {took:?} (at most {bound})"
    );
}

#[tokio::test]
async fn a_long_stretch_of_inline_nodes_hands_events_on_while_it_runs() {
    // 30 nodes that each keep the thread 1 ms: at least 30 ms without a
    // wait, so runs go out every EVENT_AGE, not all at the end.
    let (runs, lines, _, took) = runs_of(&streaming_chain(30, json!({"block_ms": 1}))).await;
    assert_eq!(lines, 60);
    assert!(took >= Duration::from_millis(30));
    assert!(runs >= 3, "{runs} runs in {took:?}");
}

fn host() -> Arc<Host> {
    let config = HostConfig {
        root: std::env::temp_dir(),
        builtins: Vec::new(),
        ..HostConfig::default()
    };
    Host::builder(config)
        .with_tool_plugin(Named)
        .build()
        .unwrap()
}

#[test]
fn a_runner_makes_one_request_per_tool_and_timeout() {
    let runner = HostRunner::new(host(), "s");
    let a = runner.tool_request("a", 0);
    assert!(Arc::ptr_eq(&a, &runner.tool_request("a", 0)));
    let b = runner.tool_request("b", 0);
    assert_eq!((a.tool_name.as_str(), b.tool_name.as_str()), ("a", "b"));
    assert!(!Arc::ptr_eq(&a, &b));
    let later = runner.tool_request("a", 7);
    assert_eq!((later.tool_name.as_str(), later.timeout), ("a", 7));
    assert!(!Arc::ptr_eq(&a, &later));
    // Past the kept ones, requests are still right, only not shared.
    for i in 0..MAX_KEPT_REQUESTS {
        runner.tool_request(&format!("t{i}"), 0);
    }
    let extra = runner.tool_request("extra", 0);
    assert_eq!(extra.tool_name, "extra");
    assert!(!Arc::ptr_eq(&extra, &runner.tool_request("extra", 0)));
    assert!(Arc::ptr_eq(&a, &runner.tool_request("a", 0)));
}

#[tokio::test]
async fn nodes_calling_different_tools_each_reach_their_own() {
    let host = host();
    let nodes: Vec<ChainNode> = (0..6)
        .map(|i| {
            let tool = if i % 3 == 1 { "b" } else { "a" };
            let mut node = ChainNode::new(&format!("n{i}"), NodeKind::TOOL, tool);
            node.input.insert("i".into(), json!(i));
            if i < 5 {
                node.next_node = format!("n{}", i + 1);
            }
            node
        })
        .collect();
    let req = ChainRequest {
        entry_node: "n0".into(),
        nodes,
        streaming: false,
        ..ChainRequest::default()
    };
    let cancel = CancellationToken::new();
    let options = CallOptions::new().session("s").cancel(&cancel);
    let resp = run_request(&host, &req, options).await.unwrap();
    assert!(resp.success, "{:?}", resp.error);
    for i in 0..6 {
        let tool = if i % 3 == 1 { "b" } else { "a" };
        assert_eq!(
            resp.outputs.get(&format!("n{i}")),
            Some(&json!({"tool": tool, "args": {"i": i}})),
            "n{i}"
        );
    }
}
