//! `on_error`: abort, skip, fallback; panics and errors inside runners.

use crate::common;

use std::sync::atomic::Ordering;

use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn abort_fails_the_chain_cancels_what_runs_and_runs_nothing_after() {
    // h (an independent root, started first) hangs and must be cancelled;
    // a fails; c after a never runs.
    let req = request(
        vec![
            tool("h", "hang"),
            then(
                with_input(tool("a", "fail"), &[("message", json!("disk on fire"))]),
                "c",
            ),
            tool("c", "echo"),
        ],
        "a",
        json!({}),
    );
    let script = Script::default();
    let (resp, events) = run(&req, &script).await;
    assert!(!resp.success);
    let err = resp.error.clone().unwrap();
    assert_eq!(err["code"], "chain_node_error");
    assert_eq!(err["node_id"], "a");
    assert_eq!(err["node_code"], "tool_error");
    assert!(err["message"].as_str().unwrap().contains("disk on fire"));
    assert!(!script.called("c"));
    // Every started node ends with a terminal event.
    let p = phases(&events);
    assert!(p.contains(&"a:error".to_owned()));
    assert!(p.contains(&"h:error".to_owned()));
    let h = events
        .iter()
        .find(|e| e.node == "h" && e.phase == "error")
        .unwrap();
    assert!(h.error.starts_with("cancelled"), "{}", h.error);
    // The hanging runner saw its token fire.
    tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while script.cancelled.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("hang runner saw cancellation");
    assert!(resp.outputs.is_empty() || !resp.outputs.contains_key("c"));
}

#[tokio::test]
async fn skip_records_the_error_gives_null_and_lets_dependents_run() {
    let req = request(
        vec![
            then(
                on_error(
                    with_input(tool("a", "fail"), &[("message", json!("nope"))]),
                    "skip",
                ),
                "b",
            ),
            with_map(
                tool("b", "echo"),
                &[("out", "a.output"), ("why", "a.error")],
            ),
        ],
        "a",
        json!({}),
    );
    let (resp, events) = run(&req, &Script::default()).await;
    assert!(resp.success);
    assert_eq!(resp.outputs["a"], Value::Null);
    assert_eq!(resp.outputs["b"], json!({"out": null, "why": "nope"}));
    assert_eq!(phases(&events), ["a:start", "a:error", "b:start", "b:done"]);
    assert_eq!(events[1].error, "nope");
}

#[tokio::test]
async fn a_fallback_runs_and_its_output_stands_in() {
    let req = request(
        vec![
            then(
                on_error(
                    with_input(tool("primary", "fail"), &[("message", json!("503"))]),
                    "backup",
                ),
                "use",
            ),
            with_map(tool("backup", "echo"), &[("reason", "primary.error")]),
            with_map(tool("use", "echo"), &[("got", "primary.output")]),
        ],
        "primary",
        json!({}),
    );
    let script = Script::default();
    let (resp, events) = run(&req, &script).await;
    assert!(resp.success, "{:?}", resp.error);
    assert_eq!(
        phases(&events),
        [
            "primary:start",
            "primary:error",
            "backup:start",
            "backup:done",
            "use:start",
            "use:done"
        ]
    );
    assert_eq!(resp.outputs["backup"], json!({"reason": "503"}));
    assert_eq!(resp.outputs["primary"], json!({"reason": "503"}));
    assert_eq!(resp.outputs["use"], json!({"got": {"reason": "503"}}));
    assert_eq!(resp.final_output, json!({"got": {"reason": "503"}}));
}

#[tokio::test]
async fn an_unused_fallback_is_skipped() {
    let req = request(
        vec![
            on_error(tool("primary", "echo"), "backup"),
            tool("backup", "echo"),
        ],
        "primary",
        json!({}),
    );
    let script = Script::default();
    let (resp, events) = run(&req, &script).await;
    assert!(resp.success);
    assert_eq!(
        phases(&events),
        ["primary:start", "primary:done", "backup:skip"]
    );
    assert!(!script.called("backup"));
    assert_eq!(resp.final_output, json!({}));
}

#[tokio::test]
async fn a_failing_fallback_follows_its_own_policy() {
    let req = request(
        vec![
            on_error(tool("a", "fail"), "b"),
            on_error(tool("b", "fail"), "c"),
            with_input(tool("c", "const"), &[("value", json!("last resort"))]),
        ],
        "a",
        json!({}),
    );
    let (resp, _) = run(&req, &Script::default()).await;
    assert!(resp.success);
    assert_eq!(resp.outputs["a"], json!("last resort"));
    assert_eq!(resp.outputs["b"], json!("last resort"));
}

#[tokio::test]
async fn a_panicking_runner_is_a_node_error_not_a_crash() {
    let req = request(
        vec![
            then(on_error(tool("p", "panic"), "skip"), "after"),
            tool("after", "echo"),
        ],
        "p",
        json!({}),
    );
    let (resp, events) = run(&req, &Script::default()).await;
    assert!(resp.success);
    let e = events
        .iter()
        .find(|e| e.node == "p" && e.phase == "error")
        .unwrap();
    assert!(
        e.error.contains("runner panicked: runner blew up"),
        "{}",
        e.error
    );
    assert_eq!(resp.outputs["after"], json!({}));

    // Under abort, the chain fails with runtime_error as the node's code.
    let req = request(vec![tool("p", "panic")], "p", json!({}));
    let (resp, _) = run(&req, &Script::default()).await;
    assert!(!resp.success);
    assert_eq!(resp.error.unwrap()["node_code"], "runtime_error");
}

#[tokio::test]
async fn a_panic_after_the_first_await_is_caught_too() {
    let runner = a2e_chain::runner_fn(|_call| async {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        panic!("late panic")
    });
    let req = request(vec![on_error(tool("p", "x"), "skip")], "p", json!({}));
    let mut errors = Vec::new();
    let resp = a2e_chain::Engine::new(runner)
        .run(
            &req,
            |ev: &a2e_chain::Event<'_>| {
                if let Some(e) = ev.error {
                    errors.push(e.to_owned())
                }
            },
            tokio_util::sync::CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(resp.success);
    assert_eq!(errors, ["runner panicked: late panic"]);
}

#[tokio::test]
async fn the_fallback_of_a_skipped_node_is_skipped_too() {
    let req = request(
        vec![
            branch("b", "`false`", "x", "y"),
            then(on_error(tool("x", "fail"), "fx"), "after"),
            tool("fx", "echo"),
            with_input(tool("y", "const"), &[("value", json!("Y"))]),
            with_map(tool("after", "echo"), &[("x", "x.output")]),
        ],
        "b",
        json!({}),
    );
    let script = Script::default();
    let (resp, events) = run(&req, &script).await;
    assert!(resp.success, "{:?}", resp.error);
    let p = phases(&events);
    for skipped in ["x:skip", "fx:skip", "after:skip"] {
        assert!(
            p.contains(&skipped.to_owned()),
            "{skipped} missing from {p:?}"
        );
    }
    assert_eq!(resp.final_output, json!("Y"));
    assert_eq!(events.len(), 7); // b start/done, 3 skips, y start/done
}
