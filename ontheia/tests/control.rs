//! The engine's own steps (router, branch, parallel, loop, retry, delay),
//! edges, failures, events and cancellation. Time is tokio's paused clock.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{Host, doc, engine, run};
use ontheia::{Event, EventKind, Globals, LlmReply, RunError, StepStatus};
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn t(id: &str, text: &str) -> Value {
    json!({"id": id, "type": "transform", "prompt": text, "params": {"silent": true}})
}

#[tokio::test]
async fn router_routes_on_the_central_value() {
    let host = Host::with_llm(|_| Ok(LlmReply::text("{\"intent\": \"weather\"}")));
    let router = |id: &str, input: &str| {
        json!({"id": id, "type": "router", "input": input, "cases": [
            {"when": "news", "steps": [t(&format!("{id}_news"), "news")]},
            {"when": "'weather'", "steps": [t(&format!("{id}_weather"), "weather for ${input}")]},
            {"when": "${steps.m.data.intent} == 'weather'", "steps": [t(&format!("{id}_never"), "second match")]}
        ], "default": [t(&format!("{id}_default"), "fallback")]})
    };
    let d = doc(json!({"steps": [
        {"id": "m", "type": "llm", "prompt": "classify", "params": {"silent": true}},
        router("r1", "${steps.m.data.intent}"),
        router("r2", "sport"),
        {"id": "r3", "type": "router", "params": {"value": 3}, "cases": [{"when": 3, "steps": [t("r3_three", "3")]}]},
        {"id": "r4", "type": "router", "input": "x", "cases": [{"when": "y", "steps": [t("r4_y", "y")]}]},
        {"id": "r5", "type": "router", "input": "sport", "cases": [{"when": "news", "steps": [t("r5_news", "n")]}], "default": [t("r5_default", "fallback")]}
    ]}));
    let (out, _) = run(&engine(host), &d, &Globals::with_input("Berlin")).await;
    assert_eq!(
        out.result("r1").unwrap().data,
        json!({"value": "weather", "executedBranchIndex": 1})
    );
    assert_eq!(
        out.result("r1_weather").unwrap().output,
        "weather for Berlin"
    );
    assert!(
        out.result("r1_news").is_none()
            && out.result("r1_never").is_none()
            && out.result("r1_default").is_none()
    );
    // A case given as a full comparison is a condition of its own.
    assert_eq!(out.result("r2").unwrap().data["executedBranchIndex"], 2);
    assert!(out.result("r2_never").is_some());
    assert_eq!(out.result("r5").unwrap().data["executedBranchIndex"], 999);
    assert_eq!(out.result("r5_default").unwrap().output, "fallback");
    assert_eq!(out.result("r3").unwrap().data["executedBranchIndex"], 0);
    assert_eq!(out.result("r4").unwrap().data["executedBranchIndex"], -1);
}

#[tokio::test]
async fn branch_takes_the_first_case_that_holds() {
    let d = doc(json!({"steps": [
        t("speed", "fast"),
        {"id": "b1", "type": "branch", "cases": [
            {"when": "${steps.speed.output} == 'slow'", "steps": [t("slow", "s")]},
            {"when": "${steps.speed.output} == 'fast'", "steps": [t("fast", "f")]},
            {"when": true, "steps": [t("also", "a")]}
        ]},
        {"id": "b2", "type": "branch", "cases": [{"when": false, "steps": [t("no", "n")]}], "default": [t("dflt", "d")]},
        {"id": "b3", "type": "branch", "cases": [{"when": "${steps.speed.output} == ''", "steps": [t("empty", "e")]}]}
    ]}));
    let (out, _) = run(&engine(Host::default()), &d, &Globals::default()).await;
    assert_eq!(
        out.result("b1").unwrap().data,
        json!({"executedBranchIndex": 1})
    );
    assert!(
        out.result("fast").is_some()
            && out.result("slow").is_none()
            && out.result("also").is_none()
    );
    assert_eq!(
        out.result("b2").unwrap().data,
        json!({"executedBranchIndex": 999})
    );
    assert!(out.result("dflt").is_some());
    assert_eq!(
        out.result("b3").unwrap().data,
        json!({"executedBranchIndex": -1})
    );
}

#[tokio::test(start_paused = true)]
async fn parallel_runs_its_steps_concurrently() {
    let d = doc(json!({"steps": [
        {"id": "p", "type": "parallel", "steps": [
            {"id": "d1", "type": "delay", "delay_ms": 1000},
            {"id": "d2", "type": "delay", "delay_ms": 1000},
            {"id": "d3", "type": "delay", "delay_ms": 1000},
            {"id": "c", "type": "tool", "server": "s", "tool": "counter"}
        ]},
        t("after", "${steps.c.data.n}")
    ]}));
    let start = Instant::now();
    let (out, events) = run(&engine(Host::default()), &d, &Globals::default()).await;
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(1000),
        "three 1 s delays side by side take 1 s"
    );
    assert_eq!(
        out.result("p").unwrap().data["status"],
        "parallel_completed"
    );
    assert_eq!(out.result("after").unwrap().output, "1");
    let starts: Vec<_> = events.iter().take(5).cloned().collect();
    assert_eq!(
        starts,
        ["p:start", "d1:start", "d2:start", "d3:start", "c:start"]
    );
}

#[tokio::test]
async fn loop_repeats_with_the_iteration_index() {
    let d = doc(json!({"steps": [
        {"id": "l", "type": "loop", "count": 3, "steps": [
            {"id": "tick", "type": "tool", "server": "s", "tool": "echo", "args": {"i": "${loop.index}", "n": "${loop.number}", "of": "${loop.count}"}},
            {"id": "c", "type": "tool", "server": "s", "tool": "counter"}
        ]},
        {"id": "big", "type": "loop", "params": {"count": 20}, "steps": [{"id": "c20", "type": "tool", "server": "s", "tool": "counter"}]}
    ]}));
    let e = engine(Host::default());
    let (out, _) = run(&e, &d, &Globals::default()).await;
    let ticks: Vec<Value> = e
        .backend()
        .tool_calls()
        .iter()
        .filter(|c| c.tool == "echo")
        .map(|c| Value::Object(c.args.clone()))
        .collect();
    assert_eq!(
        ticks,
        [
            json!({"i": "0", "n": "1", "of": "3"}),
            json!({"i": "1", "n": "2", "of": "3"}),
            json!({"i": "2", "n": "3", "of": "3"})
        ]
    );
    assert_eq!(
        out.result("l").unwrap().data,
        json!({"status": "loop_completed", "iterations": 3})
    );
    assert_eq!(out.result("big").unwrap().data["iterations"], 20);
    assert_eq!(
        e.backend().counter.load(Ordering::SeqCst),
        23,
        "20 iterations, not clamped at 50 or anything else"
    );
    assert_eq!(
        out.result("c").unwrap().data["n"],
        3,
        "the last iteration's result is stored"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_with_zero_delay_retries_immediately() {
    let host = Host::default();
    host.flaky_failures.store(2, Ordering::SeqCst);
    let d = doc(json!({"steps": [
        {"id": "r", "type": "retry", "count": 3, "delay_ms": 0, "steps": [{"id": "f", "type": "tool", "server": "s", "tool": "flaky"}]}
    ]}));
    let start = Instant::now();
    let e = engine(host);
    let (out, events) = run(&e, &d, &Globals::default()).await;
    assert_eq!(start.elapsed(), Duration::ZERO, "delay_ms 0 is 0, not 1000");
    assert_eq!(
        out.result("r").unwrap().data,
        json!({"status": "retry_completed", "attempts": 3})
    );
    assert_eq!(out.result("f").unwrap().status, StepStatus::Success);
    assert_eq!(events.iter().filter(|e| *e == "f:error").count(), 2);
}

#[tokio::test(start_paused = true)]
async fn retry_waits_between_attempts_and_gives_up() {
    let host = Host::default();
    host.flaky_failures.store(10, Ordering::SeqCst);
    let d = doc(json!({"steps": [
        {"id": "r", "type": "retry", "count": 3, "params": {"delay_ms": 500}, "steps": [{"id": "f", "type": "tool", "server": "s", "tool": "flaky"}]},
        t("after", "chain goes on: ${steps.r.status}")
    ]}));
    let start = Instant::now();
    let e = engine(host);
    let (out, _) = run(&e, &d, &Globals::default()).await;
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(1000),
        "two pauses between three attempts"
    );
    let r = out.result("r").unwrap();
    assert_eq!(r.status, StepStatus::Failed);
    assert_eq!(
        r.error.as_deref(),
        Some("retry failed after 3 attempts: step 'f' failed: flaky tool failed")
    );
    assert_eq!(e.backend().tool_calls().len(), 3);
    assert_eq!(out.result("after").unwrap().output, "chain goes on: failed");
}

#[tokio::test(start_paused = true)]
async fn retry_default_delay_is_one_second() {
    let host = Host::default();
    host.flaky_failures.store(1, Ordering::SeqCst);
    let d = doc(
        json!({"steps": [{"id": "r", "type": "retry", "steps": [{"id": "f", "type": "tool", "server": "s", "tool": "flaky"}]}]}),
    );
    let start = Instant::now();
    let (out, _) = run(&engine(host), &d, &Globals::default()).await;
    assert_eq!(start.elapsed(), Duration::from_millis(1000));
    assert_eq!(out.result("r").unwrap().data["attempts"], 2);
}

#[tokio::test]
async fn retry_success_when() {
    let d = doc(json!({"steps": [
        {"id": "r", "type": "retry", "count": 5, "delay_ms": 0, "params": {"success_when": "${steps.c.data.n} == 3"},
         "steps": [{"id": "c", "type": "tool", "server": "s", "tool": "counter"}]},
        {"id": "never", "type": "retry", "count": 2, "delay_ms": 0, "params": {"success_when": "${steps.c.data.n} == 99"},
         "steps": [t("noop", "x")]}
    ]}));
    let e = engine(Host::default());
    let (out, _) = run(&e, &d, &Globals::default()).await;
    assert_eq!(out.result("r").unwrap().data["attempts"], 3);
    assert_eq!(e.backend().counter.load(Ordering::SeqCst), 3);
    let never = out.result("never").unwrap();
    assert_eq!(never.status, StepStatus::Failed);
    assert!(
        never
            .error
            .as_ref()
            .unwrap()
            .contains("success condition '${steps.c.data.n} == 99' not met")
    );
}

#[tokio::test]
async fn retry_fail_on_warnings() {
    let d = doc(json!({"steps": [
        {"id": "strict", "type": "retry", "count": 2, "delay_ms": 0, "fail_on_warnings": true,
         "steps": [{"id": "w1", "type": "tool", "server": "s", "tool": "warn"}]},
        {"id": "lenient", "type": "retry", "count": 2, "delay_ms": 0,
         "steps": [{"id": "w2", "type": "tool", "server": "s", "tool": "warn"}]},
        {"id": "in_params", "type": "retry", "count": 1, "delay_ms": 0, "params": {"fail_on_warnings": true},
         "steps": [{"id": "w3", "type": "tool", "server": "s", "tool": "warn"}]}
    ]}));
    let e = engine(Host::default());
    let (out, _) = run(&e, &d, &Globals::default()).await;
    let strict = out.result("strict").unwrap();
    assert_eq!(strict.status, StepStatus::Failed);
    assert!(
        strict
            .error
            .as_ref()
            .unwrap()
            .contains("step 'w1' warned: tool reported an error: quota low")
    );
    assert_eq!(out.result("lenient").unwrap().data["attempts"], 1);
    assert_eq!(out.result("in_params").unwrap().status, StepStatus::Failed);
    let warn_calls = e
        .backend()
        .tool_calls()
        .iter()
        .filter(|c| c.tool == "warn")
        .count();
    assert_eq!(warn_calls, 2 + 1 + 1);
}

#[tokio::test]
async fn a_failure_inside_nested_control_fails_the_retry_attempt() {
    let host = Host::default();
    host.flaky_failures.store(1, Ordering::SeqCst);
    let d = doc(json!({"steps": [
        {"id": "r", "type": "retry", "count": 2, "delay_ms": 0, "steps": [
            {"id": "b", "type": "branch", "cases": [{"when": true, "steps": [
                {"id": "l", "type": "loop", "count": 1, "steps": [{"id": "f", "type": "tool", "server": "s", "tool": "flaky"}]}
            ]}]}
        ]}
    ]}));
    let (out, events) = run(&engine(host), &d, &Globals::default()).await;
    assert_eq!(out.result("r").unwrap().data["attempts"], 2);
    for id in ["f", "l", "b"] {
        assert!(
            events.contains(&format!("{id}:error")),
            "{id} failed in attempt 1: {events:?}"
        );
        assert_eq!(
            out.result(id).unwrap().status,
            StepStatus::Success,
            "{id} succeeded in attempt 2"
        );
    }
}

#[tokio::test]
async fn outside_retry_a_failed_step_does_not_stop_the_chain() {
    let d = doc(json!({"steps": [
        {"id": "bad", "type": "tool", "server": "s", "tool": "nope"},
        {"id": "l", "type": "loop", "count": 2, "steps": [{"id": "bad2", "type": "tool", "server": "s", "tool": "nope"}, {"id": "c", "type": "tool", "server": "s", "tool": "counter"}]},
        t("end", "${steps.bad.status}: ${steps.bad.error}")
    ]}));
    let (out, events) = run(&engine(Host::default()), &d, &Globals::default()).await;
    assert_eq!(
        out.result("end").unwrap().output,
        "failed: denied: no tool s/nope"
    );
    assert_eq!(out.result("c").unwrap().data["n"], 2);
    assert_eq!(out.result("l").unwrap().status, StepStatus::Success);
    assert_eq!(&events[..2], ["bad:start", "bad:error"]);
    assert!(out.any_failed());
}

#[tokio::test(start_paused = true)]
async fn delay_honours_zero_and_its_duration() {
    let d = doc(json!({"steps": [
        {"id": "zero", "type": "delay", "delay_ms": 0},
        {"id": "p", "type": "delay", "params": {"delay_ms": 1500}}
    ]}));
    let start = Instant::now();
    let (out, _) = run(&engine(Host::default()), &d, &Globals::default()).await;
    assert_eq!(start.elapsed(), Duration::from_millis(1500));
    assert_eq!(
        out.result("zero").unwrap().data,
        json!({"status": "delayed", "ms": 0})
    );
    assert_eq!(out.result("p").unwrap().data["ms"], 1500);
}

#[tokio::test]
async fn edges_map_data_into_inputs_and_outputs() {
    let host = Host::with_llm(|_| {
        Ok(LlmReply::text(
            "{\"user\": {\"name\": \"Ada\"}, \"score\": 7}",
        ))
    });
    let d = doc(json!({
        "steps": [
            {"id": "a", "type": "llm", "prompt": "x", "params": {"silent": true}},
            {"id": "b", "type": "transform", "inputs": {"greeting": "Hi"}, "prompt": "${inputs.greeting} ${inputs.in_user} (${steps.b.inputs.in_user}) ${inputs.question}", "params": {"silent": true}}
        ],
        "edges": [
            {"from": "a", "to": "b", "map": {"data.user.name": "in_user", "data.missing": "gone"}},
            {"from": "input", "to": "b", "map": {"input": "question"}},
            {"from": "a", "to": "output", "map": {"data.score": "score"}},
            {"from": "b", "to": "output", "map": {"output": "text"}}
        ]
    }));
    let (out, _) = run(&engine(host), &d, &Globals::with_input("why?")).await;
    let b = out.result("b").unwrap();
    assert_eq!(b.output, "Hi Ada (${steps.b.inputs.in_user}) why?");
    assert_eq!(
        b.inputs,
        json!({"greeting": "Hi", "in_user": "Ada", "question": "why?"})
            .as_object()
            .unwrap()
            .clone()
    );
    assert_eq!(
        out.outputs,
        json!({"score": 7, "text": "Hi Ada (${steps.b.inputs.in_user}) why?"})
            .as_object()
            .unwrap()
            .clone()
    );
}

#[tokio::test]
async fn events_carry_ids_kinds_and_bounded_outputs() {
    let d = doc(json!({"steps": [
        t("a", "hello"),
        {"id": "s", "type": "transform", "prompt": "x", "when": false},
        {"id": "f", "type": "tool", "server": "s", "tool": "nope"},
        {"id": "m", "type": "transform", "prompt": "shown"}
    ]}));
    let mut seen = Vec::new();
    engine(Host::default())
        .run(
            &d,
            &Globals::default(),
            |e: &Event<'_>| {
                seen.push((
                    e.seq,
                    e.step_id.to_owned(),
                    e.kind,
                    e.output.map(str::to_owned),
                    e.error.map(str::to_owned),
                ))
            },
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let kinds: Vec<_> = seen
        .iter()
        .map(|(s, id, k, _, _)| (*s, id.as_str(), *k))
        .collect();
    assert_eq!(
        kinds,
        [
            (0, "a", EventKind::Start),
            (1, "a", EventKind::Done),
            (2, "s", EventKind::Skip),
            (3, "f", EventKind::Start),
            (4, "f", EventKind::Error),
            (5, "m", EventKind::Start),
            (6, "m", EventKind::Message),
            (7, "m", EventKind::Done),
        ]
    );
    assert_eq!(seen[1].3.as_deref(), Some("hello"));
    assert_eq!(seen[4].4.as_deref(), Some("denied: no tool s/nope"));
    assert_eq!(seen[6].3.as_deref(), Some("shown"));
}

#[tokio::test(start_paused = true)]
async fn cancellation_stops_the_run() {
    let d = doc(json!({"steps": [
        t("first", "done"),
        {"id": "slow", "type": "tool", "server": "s", "tool": "slow"},
        t("never", "x")
    ]}));
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        c2.cancel();
    });
    let mut kinds = Vec::new();
    let err = engine(Host::default())
        .run(
            &d,
            &Globals::default(),
            |e: &Event<'_>| kinds.push(format!("{}:{}", e.step_id, e.kind.as_str())),
            cancel,
        )
        .await
        .unwrap_err();
    assert_eq!(err, RunError::Cancelled);
    assert_eq!(
        kinds,
        ["first:start", "first:done", "slow:start", "slow:error"]
    );

    // A long delay is cut short too, and an already-cancelled token runs nothing.
    let d = doc(json!({"steps": [{"id": "wait", "type": "delay", "delay_ms": 600000}]}));
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        c2.cancel();
    });
    let start = Instant::now();
    let err = engine(Host::default())
        .run(&d, &Globals::default(), (), cancel)
        .await
        .unwrap_err();
    assert_eq!(err, RunError::Cancelled);
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let e = engine(Host::default());
    assert_eq!(
        e.run(&d, &Globals::default(), (), cancel)
            .await
            .unwrap_err(),
        RunError::Cancelled
    );
}

#[tokio::test]
async fn run_validates_first() {
    let bad: ontheia::Document = serde_json::from_value(
        json!({"steps": [{"id": "d", "type": "delay", "delay_ms": 700000}]}),
    )
    .unwrap();
    let e = engine(Host::default());
    match e
        .run(&bad, &Globals::default(), (), CancellationToken::new())
        .await
    {
        Err(RunError::Invalid(errs)) => {
            assert!(errs.has("$.steps[0].delay_ms", ontheia::Rule::Range))
        }
        other => panic!("expected a validation error, got {other:?}"),
    }
    assert!(e.backend().calls().is_empty());
}
