//! Durable runs: resuming from finished calls, attempts kept for
//! interrupted ones, events not delivered twice, and the observer's place
//! between a call's result and its dependents.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_chain::{
    CallKey, CallObserver, ChainConfig, Engine, Event, NodeCall, NodeError, NodeResult,
    ObserveFuture, Resume, RunOptions,
};
use a2e_proto::{ChainPhase, ChainRequest, ChainResponse, ErrorCode};
use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// a -> b -> c -> d -> e, each echoing `{"from": <upstream output>}`.
fn linear5() -> ChainRequest {
    let ids = ["a", "b", "c", "d", "e"];
    let nodes = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut n = tool(id, "echo");
            if i > 0 {
                n = with_map(n, &[("from", &format!("{}.output", ids[i - 1]))]);
            } else {
                n = with_input(n, &[("from", json!("start"))]);
            }
            match ids.get(i + 1) {
                Some(next) => then(n, next),
                None => n,
            }
        })
        .collect();
    request(nodes, "a", json!({}))
}

/// A shared log of what happened, in order.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, s: impl Into<String>) {
        self.0.lock().unwrap().push(s.into());
    }
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Echoes its input; logs `run:<wire id>#<attempt>`.
fn echo_runner(log: Log) -> impl a2e_chain::NodeRunner {
    a2e_chain::runner_fn(move |call: NodeCall| {
        let log = log.clone();
        async move {
            log.push(format!("run:{}#{}", call.wire_id(), call.attempt));
            if &*call.name == "fail" {
                return Err(NodeError::tool("failed"));
            }
            tokio::task::yield_now().await;
            Ok(call.input.into_value())
        }
    })
}

/// `req` run from `resume`, without an observer.
async fn resumed(req: &ChainRequest, log: &Log, resume: Resume) -> (ChainResponse, Vec<Ev>) {
    let options = RunOptions {
        resume: Some(resume),
        observer: None,
    };
    run_opts(req, log, options).await
}

async fn run_opts(req: &ChainRequest, log: &Log, options: RunOptions) -> (ChainResponse, Vec<Ev>) {
    let engine = Engine::new(echo_runner(log.clone())).with_config(ChainConfig::default());
    let plan = engine.validate(req).unwrap();
    let mut events = Vec::new();
    let resp = engine
        .run_plan_with(
            &plan,
            |ev: &Event<'_>| {
                let w = ev.to_wire("r");
                events.push(Ev {
                    seq: w.seq,
                    node: w.node_id,
                    phase: w.phase.to_string(),
                    output: w.output,
                    error: w.error,
                })
            },
            CancellationToken::new(),
            options,
        )
        .await;
    (resp, events)
}

#[tokio::test]
async fn finished_calls_are_not_run_again_and_their_events_not_repeated() {
    let req = linear5();
    // The first run, for reference.
    let log = Log::default();
    let (first, first_events) = run_opts(&req, &log, RunOptions::default()).await;
    assert!(first.success);
    assert_eq!(first_events.len(), 10);

    // The host died after b's result and its `done` event were journaled.
    let mut resume = Resume::new();
    resume
        .finished("a", 1, Ok(first.outputs.get("a").unwrap().clone()))
        .finished("b", 1, Ok(first.outputs.get("b").unwrap().clone()))
        .next_seq(4);
    for ev in &first_events[..4] {
        resume.reported(&ev.node, &ChainPhase::from(ev.phase.as_str()));
    }
    let log = Log::default();
    let (resp, events) = resumed(&req, &log, resume).await;
    assert!(resp.success, "{:?}", resp.error);
    assert_eq!(log.all(), ["run:c#1", "run:d#1", "run:e#1"]);
    assert_eq!(resp.outputs, first.outputs);
    assert_eq!(resp.final_output, first.final_output);
    assert_eq!(resp.nodes_run, 5);
    // The events the journal lacks, numbered on from it.
    assert_eq!(
        phases(&events),
        [
            "c:start", "c:done", "d:start", "d:done", "e:start", "e:done"
        ]
    );
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (4..10).collect::<Vec<_>>()
    );
    assert_eq!(events, first_events[4..]);
}

#[tokio::test]
async fn an_event_lost_with_the_host_is_delivered_on_resume() {
    let req = linear5();
    let mut resume = Resume::new();
    // a's result was journaled, but only its start event.
    resume
        .finished("a", 1, Ok(json!({"from": "start"})))
        .reported("a", &ChainPhase::START)
        .next_seq(1);
    let log = Log::default();
    let (resp, events) = resumed(&req, &log, resume).await;
    assert!(resp.success);
    assert_eq!(phases(&events)[..3], ["a:done", "b:start", "b:done"]);
    assert_eq!(events[0].seq, 1);
    assert_eq!(events[0].output, json!({"from": "start"}));
    assert!(!log.all().iter().any(|l| l.starts_with("run:a")));
}

#[tokio::test]
async fn an_interrupted_call_runs_again_with_its_attempt() {
    let req = linear5();
    let mut resume = Resume::new();
    resume
        .finished("a", 1, Ok(json!({"from": "start"})))
        .interrupted("b", 3);
    let log = Log::default();
    let (resp, _) = resumed(&req, &log, resume).await;
    assert!(resp.success);
    assert_eq!(log.all(), ["run:b#3", "run:c#1", "run:d#1", "run:e#1"]);
}

#[tokio::test]
async fn a_replayed_error_goes_through_on_error() {
    // a -> b (on_error: skip) -> c; b was interrupted and must not repeat.
    let req = request(
        vec![
            then(with_input(tool("a", "echo"), &[("x", json!(1))]), "b"),
            then(on_error(tool("b", "echo"), "skip"), "c"),
            with_map(tool("c", "echo"), &[("b_error", "b.error")]),
        ],
        "a",
        json!({}),
    );
    let interrupted = || NodeError::new(ErrorCode::from("interrupted"), "b may have run");
    let mut resume = Resume::new();
    resume
        .finished("a", 1, Ok(json!({"x": 1})))
        .finished("b", 1, Err(interrupted()));
    let log = Log::default();
    let (resp, events) = resumed(&req, &log, resume).await;
    assert!(resp.success);
    assert_eq!(log.all(), ["run:c#1"]);
    assert_eq!(
        resp.outputs.get("c").unwrap(),
        &json!({"b_error": "b may have run"})
    );
    assert!(phases(&events).contains(&"b:error".to_owned()));

    // Under `abort` the chain fails naming the code.
    let mut req = req;
    req.nodes[1].on_error = String::new();
    let mut resume = Resume::new();
    resume
        .finished("a", 1, Ok(json!({"x": 1})))
        .finished("b", 1, Err(interrupted()));
    let (resp, _) = resumed(&req, &Log::default(), resume).await;
    assert!(!resp.success);
    let error = resp.error.unwrap();
    assert_eq!(error["node_id"], "b");
    assert_eq!(error["node_code"], "interrupted");
}

#[tokio::test]
async fn map_items_resume_one_by_one_in_item_order() {
    let req = request(
        vec![
            map("each", "input.xs", "item_node"),
            with_map(tool("item_node", "echo"), &[("x", "item")]),
        ],
        "each",
        json!({"xs": [10, 11, 12, 13]}),
    );
    let mut resume = Resume::new();
    resume
        .finished("item_node[0]", 1, Ok(json!("done0")))
        .interrupted("item_node[1]", 2)
        .finished("item_node[2]", 1, Ok(json!("done2")))
        .reported("each", &ChainPhase::START)
        .reported("item_node[0]", &ChainPhase::START)
        .reported("item_node[0]", &ChainPhase::DONE)
        .next_seq(3);
    let log = Log::default();
    let (resp, events) = resumed(&req, &log, resume).await;
    assert!(resp.success, "{:?}", resp.error);
    let mut runs = log.all();
    runs.sort();
    assert_eq!(runs, ["run:item_node[1]#2", "run:item_node[3]#1"]);
    assert_eq!(
        resp.outputs.get("each").unwrap(),
        &json!(["done0", {"x": 11}, "done2", {"x": 13}])
    );
    let p = phases(&events);
    assert!(!p.contains(&"each:start".to_owned()));
    assert!(!p.contains(&"item_node[0]:done".to_owned()));
    assert!(p.contains(&"item_node[2]:start".to_owned()));
    assert_eq!(events[0].seq, 3);
}

#[tokio::test]
async fn skips_and_branches_are_not_reported_twice() {
    // check ? yes : no, both tools; `no` is skipped.
    let req = request(
        vec![
            then(
                with_input(tool("fetch", "echo"), &[("n", json!(1))]),
                "check",
            ),
            branch("check", "output.n > `0`", "yes", "no"),
            tool("yes", "echo"),
            tool("no", "echo"),
        ],
        "fetch",
        json!({}),
    );
    let log = Log::default();
    let (first, first_events) = run_opts(&req, &log, RunOptions::default()).await;
    assert_eq!(
        phases(&first_events),
        [
            "fetch:start",
            "fetch:done",
            "check:start",
            "check:done",
            "no:skip",
            "yes:start",
            "yes:done"
        ]
    );
    // Everything up to yes's start was delivered; yes was running.
    let mut resume = Resume::new();
    resume
        .finished("fetch", 1, Ok(first.outputs.get("fetch").unwrap().clone()))
        .interrupted("yes", 1)
        .next_seq(6);
    for ev in &first_events[..6] {
        resume.reported(&ev.node, &ChainPhase::from(ev.phase.as_str()));
    }
    let log = Log::default();
    let (resp, events) = resumed(&req, &log, resume).await;
    assert_eq!(resp.outputs, first.outputs);
    assert_eq!(log.all(), ["run:yes#1"]);
    assert_eq!(phases(&events), ["yes:done"]);
    assert_eq!(events[0].seq, 6);
}

/// Logs starts and results; `finished` takes a while, as a disk write may.
struct Recorder {
    log: Log,
    fail_start: Option<&'static str>,
    fail_finish: Option<&'static str>,
}

impl CallObserver for Recorder {
    fn started(&self, call: &NodeCall) -> ObserveFuture {
        let log = self.log.clone();
        let id = call.wire_id();
        let fail = self.fail_start == Some(call.node_id.as_ref());
        Box::pin(async move {
            log.push(format!("started:{id}"));
            if fail {
                return Err(NodeError::new(ErrorCode::RUNTIME_ERROR, "journal full"));
            }
            Ok(())
        })
    }

    fn finished(&self, call: &CallKey, result: &NodeResult) -> ObserveFuture {
        let log = self.log.clone();
        let line = format!(
            "finished:{}#{}:{}",
            call.wire_id(),
            call.attempt,
            match result {
                Ok(v) => v.to_string(),
                Err(e) => e.code.to_string(),
            }
        );
        let fail = self.fail_finish == Some(call.node_id.as_ref());
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            log.push(line);
            if fail {
                return Err(NodeError::new(ErrorCode::RUNTIME_ERROR, "journal gone"));
            }
            Ok(())
        })
    }
}

#[tokio::test]
async fn the_observer_sees_each_result_before_any_dependent_starts() {
    let req = linear5();
    let log = Log::default();
    let observer = Arc::new(Recorder {
        log: log.clone(),
        fail_start: None,
        fail_finish: None,
    });
    let (resp, events) = run_opts(
        &req,
        &log,
        RunOptions {
            resume: None,
            observer: Some(observer),
        },
    )
    .await;
    assert!(resp.success);
    let lines = log.all();
    assert_eq!(lines.len(), 15, "{lines:?}");
    for (i, id) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        assert_eq!(lines[3 * i], format!("started:{id}"));
        assert_eq!(lines[3 * i + 1], format!("run:{id}#1"));
        assert!(
            lines[3 * i + 2].starts_with(&format!("finished:{id}#1:{{")),
            "{lines:?}"
        );
    }
    assert_eq!(events.len(), 10);
}

#[tokio::test]
async fn an_observer_failure_fails_the_call() {
    let req = request(
        vec![
            then(on_error(tool("a", "echo"), "skip"), "b"),
            on_error(tool("b", "echo"), "skip"),
        ],
        "a",
        json!({}),
    );
    let log = Log::default();
    let observer = Arc::new(Recorder {
        log: log.clone(),
        fail_start: Some("a"),
        fail_finish: Some("b"),
    });
    let (resp, events) = run_opts(
        &req,
        &log,
        RunOptions {
            resume: None,
            observer: Some(observer),
        },
    )
    .await;
    assert!(resp.success);
    // a's runner never ran; b ran, but its result was not kept.
    assert!(!log.all().contains(&"run:a#1".to_owned()));
    assert!(log.all().contains(&"run:b#1".to_owned()));
    let errors: Vec<_> = events
        .iter()
        .filter(|e| e.phase == "error")
        .map(|e| (e.node.as_str(), e.error.as_str()))
        .collect();
    assert_eq!(errors, [("a", "journal full"), ("b", "journal gone")]);
    assert_eq!(resp.outputs.get("b"), Some(&Value::Null));
}
