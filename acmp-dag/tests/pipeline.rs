//! The §6.2 text decomposition pipeline, end to end, from the §3 DAG fixture.

use crate::common;

use std::sync::{Arc, Mutex};

use acmp_dag::{
    CapabilityRouter, Dag, DagStatus, Invocation, InvokeResult, Orchestrator, Payload, TaskState,
    from_fn,
};
use common::{Recorder, block_on};
use serde_json::{Value, json};

fn fixture_dag() -> Dag {
    let path = format!("{}/tests/fixtures/dag.json", env!("CARGO_MANIFEST_DIR"));
    acmp_dag::decode::from_json_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The input each task was invoked with.
type Inputs = Arc<Mutex<Vec<(String, Option<Payload>)>>>;

#[test]
fn text_decomposition_pipeline_runs_end_to_end() {
    let inputs: Inputs = Arc::default();
    let seen = |inputs: &Inputs, inv: &Invocation| {
        assert_eq!(inv.params.input_stream, None, "references arrive resolved");
        inputs
            .lock()
            .unwrap()
            .push((inv.params.task_id.clone(), inv.params.input.clone()));
    };
    // Both sentiment tasks must be in flight at once: each waits for the other.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));

    let log = Arc::clone(&inputs);
    let split = from_fn(move |inv: Invocation| {
        seen(&log, &inv);
        async move {
            let text = inv
                .params
                .input
                .as_ref()
                .unwrap()
                .data
                .as_str()
                .unwrap()
                .to_owned();
            let words: Vec<&str> = text.split(' ').collect();
            let (first, second) = words.split_at(words.len() / 2);
            let chunks = json!([first.join(" "), second.join(" ")]);
            Ok(
                InvokeResult::new(inv.params.task_id, Payload::json(json!({"chunks": chunks})))
                    .with_usage(10, 0.001),
            )
        }
    });
    let log = Arc::clone(&inputs);
    let sentiment = from_fn(move |inv: Invocation| {
        seen(&log, &inv);
        let barrier = Arc::clone(&barrier);
        async move {
            barrier.wait().await;
            let text = inv
                .params
                .input
                .as_ref()
                .unwrap()
                .data
                .as_str()
                .unwrap()
                .to_owned();
            let sentiment = if text.contains("Long") {
                "neutral"
            } else {
                "positive"
            };
            Ok(InvokeResult::new(
                inv.params.task_id,
                Payload::json(json!({"sentiment": sentiment, "chunk": text})),
            )
            .with_usage(5, 0.002))
        }
    });
    let log = Arc::clone(&inputs);
    let aggregate = from_fn(move |inv: Invocation| {
        seen(&log, &inv);
        async move {
            let parts = inv
                .params
                .input
                .as_ref()
                .unwrap()
                .data
                .as_array()
                .unwrap()
                .clone();
            let sentiments: Vec<Value> = parts
                .iter()
                .map(|p| p["data"]["sentiment"].clone())
                .collect();
            Ok(InvokeResult::new(
                inv.params.task_id,
                Payload::json(json!({"sentiments": sentiments})),
            )
            .with_usage(3, 0.0005))
        }
    });
    let router = CapabilityRouter::new()
        .with("text-split", split)
        .unwrap()
        .with("sentiment-analysis", sentiment)
        .unwrap()
        .with("result-aggregation", aggregate)
        .unwrap();
    let recorder = Recorder::default();
    let orchestrator = Orchestrator::new(router).with_event_sink(recorder.sink());

    let outcome = block_on(orchestrator.run(fixture_dag())).unwrap();

    assert_eq!(outcome.status, DagStatus::Completed);
    // The DAG's result is the leaf's output.
    let expected = Payload::json(json!({"sentiments": ["neutral", "positive"]}));
    assert_eq!(outcome.result(), vec![("task_agg_03", &expected)]);
    assert!((outcome.total_cost_cu() - 0.0055).abs() < 1e-12);

    // Each task received a literal input: the chunk for each sentiment task (typed text),
    // the ordered array of whole outputs for the aggregation.
    let inputs = inputs.lock().unwrap().clone();
    let input_of = |id: &str| {
        inputs
            .iter()
            .find(|(t, _)| t == id)
            .unwrap()
            .1
            .clone()
            .unwrap()
    };
    assert_eq!(
        input_of("task_split_01"),
        Payload::text("Long document text here...")
    );
    assert_eq!(input_of("task_sent_02a"), Payload::text("Long document"));
    assert_eq!(input_of("task_sent_02b"), Payload::text("text here..."));
    let agg = input_of("task_agg_03");
    assert_eq!(agg.kind, "json");
    assert_eq!(agg.data[0]["type"], "json");
    assert_eq!(agg.data[0]["data"]["chunk"], "Long document");
    assert_eq!(agg.data[1]["data"]["chunk"], "text here...");

    // Order: split completes before either sentiment starts; both complete before the
    // aggregation starts.
    let at = |t: &str, s| recorder.position(t, s).unwrap();
    for sent in ["task_sent_02a", "task_sent_02b"] {
        assert!(at("task_split_01", TaskState::Completed) < at(sent, TaskState::Running));
        assert!(at(sent, TaskState::Completed) < at("task_agg_03", TaskState::Running));
    }
    // Four tasks, two transitions each.
    assert_eq!(recorder.transitions().len(), 8);
}
