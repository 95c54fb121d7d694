//! Chain timeout, per-node timeout and external cancellation.
//!
//! The timing tests run on tokio's paused clock: time moves only when every
//! task waits, so a timeout fires at exactly its virtual instant and the
//! assertions on when a chain ended are exact, whatever the machine's load.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use a2e_chain::ChainConfig;
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn saw_cancel(script: &Script, n: usize) {
    tokio::time::timeout(Duration::from_secs(5), async {
        while script.cancelled.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("runners saw their cancellation token fire");
}

#[tokio::test(start_paused = true)]
async fn a_chain_timeout_ends_the_chain_on_time_and_cancels_the_runner() {
    let mut req = request(
        vec![
            then(tool("stuck", "hang"), "never"),
            tool("never", "echo"),
            tool("also", "hang"),
        ],
        "stuck",
        json!({}),
    );
    req.timeout = 1;
    let script = Script::default();
    let started = Instant::now();
    let (resp, events) = run(&req, &script).await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_millis(1100),
        "the chain should end at its 1 s timeout, ended after {took:?}"
    );
    assert!(!resp.success);
    let err = resp.error.unwrap();
    assert_eq!(err["code"], "timeout");
    assert!(err["message"].as_str().unwrap().contains("timeout of 1 s"));
    assert!(!script.called("never"));
    saw_cancel(&script, 2).await;
    let p = phases(&events);
    assert!(p.contains(&"stuck:error".to_owned()) && p.contains(&"also:error".to_owned()));
    assert_seq(&events);
}

#[tokio::test(start_paused = true)]
async fn a_node_timeout_from_its_input_is_a_node_error_under_its_policy() {
    let req = request(
        vec![
            then(
                on_error(
                    with_input(tool("slow", "hang"), &[("timeout", json!(0.05))]),
                    "skip",
                ),
                "after",
            ),
            with_map(tool("after", "echo"), &[("why", "slow.error")]),
        ],
        "slow",
        json!({}),
    );
    let script = Script::default();
    let started = Instant::now();
    let (resp, events) = run(&req, &script).await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(50) && took < Duration::from_millis(100),
        "the node should time out at 50 ms, the chain ended after {took:?}"
    );
    assert!(resp.success, "{:?}", resp.error);
    assert_eq!(
        resp.outputs["after"],
        json!({"why": "node timed out after 0.05 s"})
    );
    assert!(
        events
            .iter()
            .any(|e| e.node == "slow" && e.phase == "error")
    );
    saw_cancel(&script, 1).await;
}

#[tokio::test]
async fn a_node_timeout_can_come_from_input_map_and_must_be_a_number() {
    let req = request(
        vec![with_map(tool("a", "echo"), &[("timeout", "input.t")])],
        "a",
        json!({"t": "soon"}),
    );
    let (resp, _) = run(&req, &Script::default()).await;
    assert!(!resp.success);
    assert_eq!(resp.error.unwrap()["node_code"], "schema_violation");
}

#[tokio::test]
async fn the_runner_sees_the_earlier_deadline() {
    let runner = a2e_chain::runner_fn(|call: a2e_chain::NodeCall| async move {
        let left = call
            .deadline
            .map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
        Ok(json!(left.map(|d| d.as_secs())))
    });
    let req = request(
        vec![with_input(tool("a", "x"), &[("timeout", json!(5))])],
        "a",
        json!({}),
    );
    let resp = a2e_chain::Engine::new(runner)
        .run(&req, (), CancellationToken::new())
        .await
        .unwrap();
    // Node timeout 5 s is earlier than the chain's 300 s.
    assert!(resp.final_output.as_u64().unwrap() <= 5);
}

#[tokio::test(start_paused = true)]
async fn external_cancellation_stops_the_chain_and_reaches_runners() {
    let req = request(vec![tool("a", "hang"), tool("b", "hang")], "a", json!({}));
    let script = Script::default();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let (resp, _) = run_cancel(&req, &script, ChainConfig::default(), cancel).await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(50) && took < Duration::from_millis(100),
        "the chain should end when cancelled at 50 ms, ended after {took:?}"
    );
    assert!(!resp.success);
    let error = resp.error.unwrap();
    assert_eq!(error["message"], "chain cancelled");
    // Reported as a cancellation, not a timeout or a runtime error.
    assert_eq!(error["code"], "cancelled");
    saw_cancel(&script, 2).await;
}

#[tokio::test(start_paused = true)]
async fn map_items_hear_the_chain_timeout() {
    let mut req = request(
        vec![map("m", "input.xs", "t"), tool("t", "hang")],
        "m",
        json!({"xs": [1, 2, 3]}),
    );
    req.timeout = 1;
    let script = Script::default();
    let (resp, events) = run(&req, &script).await;
    assert!(!resp.success);
    assert_eq!(resp.error.unwrap()["code"], "timeout");
    saw_cancel(&script, 3).await;
    assert_eq!(events.iter().filter(|e| e.phase == "error").count(), 4); // 3 items + m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_run_future_cancels_the_runners() {
    let seen: std::sync::Arc<std::sync::Mutex<Option<CancellationToken>>> = Default::default();
    let keep = seen.clone();
    let runner = a2e_chain::runner_fn(move |call: a2e_chain::NodeCall| {
        *keep.lock().unwrap() = Some((*call.cancel).clone());
        std::future::pending()
    });
    let req = request(vec![tool("a", "x")], "a", json!({}));
    let engine = a2e_chain::Engine::new(runner);
    let run = engine.run(&req, (), CancellationToken::new());
    // Let the chain start its runner, then give up on the whole run.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), run)
            .await
            .is_err()
    );
    let token = seen.lock().unwrap().clone().expect("runner was called");
    assert!(token.is_cancelled());
}

#[tokio::test(start_paused = true)]
async fn a_chain_without_a_timeout_gets_the_configured_default() {
    let mut req = request(vec![tool("stuck", "hang")], "stuck", json!({}));
    req.timeout = 0;
    let config = ChainConfig {
        default_timeout_secs: 2,
        ..ChainConfig::default()
    };
    let script = Script::default();
    let started = Instant::now();
    let (resp, _) = run_with(&req, &script, config).await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_millis(2100),
        "the default 2 s timeout should end the chain, ended after {took:?}"
    );
    let err = resp.error.unwrap();
    assert_eq!(err["code"], "timeout");
    assert!(err["message"].as_str().unwrap().contains("timeout of 2 s"));
    // Its own timeout wins over the default.
    req.timeout = 1;
    let config = ChainConfig {
        default_timeout_secs: 2,
        ..ChainConfig::default()
    };
    let started = Instant::now();
    let (resp, _) = run_with(&req, &script, config).await;
    assert!(started.elapsed() < Duration::from_millis(1100));
    assert!(
        resp.error.unwrap()["message"]
            .as_str()
            .unwrap()
            .contains("timeout of 1 s")
    );
}
