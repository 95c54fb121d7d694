//! Streaming edges: chunks flow downstream while the upstream runs when both providers
//! support it, and the non-streaming fallback otherwise, with the same results.

use crate::common;

use std::sync::{Arc, Mutex};

use acmp_dag::{
    AcmpError, CancelReason, DagOutcome, DagStatus, Edge, EventKind, FallbackReason, Invocation,
    InvokeParams, InvokeResult, Orchestrator, Payload, ProviderFeatures, ProviderMessage,
    ProviderRef, SinkError, Task, TaskError, TaskInput, TaskState, from_fn,
};
use common::{Recorder, block_on, router};
use tokio::sync::Notify;

#[derive(Default)]
struct Seen {
    params: Mutex<Vec<InvokeParams>>,
    chunks: Mutex<Vec<acmp_dag::InputChunk>>,
}

/// Streams "Hello " then "world" when asked to; once the first chunk is out, waits for the
/// downstream to have received it (so only true streaming can finish).
fn upstream(
    seen: Arc<Seen>,
    first_received: Arc<Notify>,
    features: ProviderFeatures,
) -> ProviderRef {
    Arc::new(
        from_fn(move |mut inv: Invocation| {
            let (seen, first_received) = (Arc::clone(&seen), Arc::clone(&first_received));
            async move {
                seen.params.lock().unwrap().push(inv.params.clone());
                let id = inv.params.task_id.clone();
                if !inv.params.is_stream() {
                    return Ok(InvokeResult::new(id, Payload::text("Hello world")));
                }
                inv.output
                    .send_chunk(Payload::text("Hello "), false)
                    .unwrap();
                first_received.notified().await;
                inv.output.send_chunk(Payload::text("world"), true).unwrap();
                Ok(InvokeResult::streamed(id))
            }
        })
        .with_features(features),
    )
}

/// Upper-cases its input, literal or streamed.
fn downstream(
    seen: Arc<Seen>,
    first_received: Arc<Notify>,
    features: ProviderFeatures,
) -> ProviderRef {
    Arc::new(
        from_fn(move |mut inv: Invocation| {
            let (seen, first_received) = (Arc::clone(&seen), Arc::clone(&first_received));
            async move {
                seen.params.lock().unwrap().push(inv.params.clone());
                let id = inv.params.task_id.clone();
                let text = match inv.input.take() {
                    Some(mut chunks) => {
                        let mut text = String::new();
                        loop {
                            let next = tokio::select! {
                                c = chunks.recv() => c,
                                () = inv.cancel.cancelled() => return Err(AcmpError::cancelled(id)),
                            };
                            let Some(chunk) = next else {
                                return Err(AcmpError::internal(id, "input ended early"));
                            };
                            if chunk.seq == 0 {
                                first_received.notify_one();
                            }
                            text.push_str(chunk.chunk.data.as_str().unwrap());
                            let last = chunk.is_final;
                            seen.chunks.lock().unwrap().push(chunk);
                            if last {
                                break text;
                            }
                        }
                    }
                    None => inv.params.input.unwrap().data.as_str().unwrap().to_owned(),
                };
                Ok(InvokeResult::new(id, Payload::text(text.to_uppercase())))
            }
        })
        .with_features(features),
    )
}

fn echo_text() -> ProviderRef {
    Arc::new(from_fn(|inv: Invocation| async move {
        let input = inv.params.input.unwrap();
        Ok(InvokeResult::new(inv.params.task_id, input))
    }))
}

/// up → down (stream_eligible, whole output); up → copy (plain edge).
fn streaming_dag() -> acmp_dag::Dag {
    acmp_dag::Dag::new("dag_stream")
        .with_task(Task::new("up", "produce", TaskInput::text("go")))
        .with_task(Task::new("down", "shout", TaskInput::from_task("up")))
        .with_task(Task::new(
            "copy",
            "copy",
            TaskInput::from_task_field("up", "data"),
        ))
        .with_edge(Edge::streaming("up", "down"))
        .with_edge(Edge::new("up", "copy"))
}

fn run(
    up: ProviderFeatures,
    down: ProviderFeatures,
) -> (DagOutcome, Recorder, Arc<Seen>, Arc<Seen>) {
    let (up_seen, down_seen) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
    let first = Arc::new(Notify::new());
    let recorder = Recorder::default();
    let orchestrator = Orchestrator::new(router(vec![
        (
            "produce",
            upstream(Arc::clone(&up_seen), Arc::clone(&first), up),
        ),
        ("shout", downstream(Arc::clone(&down_seen), first, down)),
        ("copy", echo_text()),
    ]))
    .with_event_sink(recorder.sink());
    let outcome = block_on(orchestrator.run(streaming_dag())).unwrap();
    (outcome, recorder, up_seen, down_seen)
}

fn only_output() -> ProviderFeatures {
    ProviderFeatures {
        output_streaming: true,
        ..ProviderFeatures::default()
    }
}

fn only_input() -> ProviderFeatures {
    ProviderFeatures {
        input_streaming: true,
        ..ProviderFeatures::default()
    }
}

#[test]
fn chunks_flow_downstream_while_the_upstream_runs() {
    let (outcome, recorder, up, down) = run(only_output(), only_input());
    assert_eq!(outcome.status, DagStatus::Completed);
    assert_eq!(up.params.lock().unwrap()[0].stream, Some(true));
    let down_params = down.params.lock().unwrap()[0].clone();
    assert_eq!(
        (down_params.input_stream, down_params.input),
        (Some(true), None)
    );
    let chunks = down.chunks.lock().unwrap().clone();
    let summary: Vec<_> = chunks
        .iter()
        .map(|c| (c.task_id.as_str(), c.seq, c.is_final))
        .collect();
    assert_eq!(summary, [("down", 0, false), ("down", 1, true)]);
    // The downstream started before the upstream completed.
    assert!(
        recorder.position("down", TaskState::Running).unwrap()
            < recorder.position("up", TaskState::Completed).unwrap()
    );
    // The streamed output is assembled for the result and for non-streaming dependents.
    let up_result = outcome.task("up").unwrap().result().unwrap();
    assert!(up_result.is_output_streamed());
    assert_eq!(up_result.output, Some(Payload::text("Hello world")));
    assert_eq!(outcome.output("copy"), Some(&Payload::text("Hello world")));
    assert_eq!(outcome.output("down"), Some(&Payload::text("HELLO WORLD")));
    assert!(
        !recorder
            .events()
            .iter()
            .any(|e| matches!(e.kind, EventKind::StreamFallback { .. }))
    );
}

#[test]
fn without_both_features_the_edge_falls_back_with_the_same_results() {
    let (streamed, ..) = run(only_output(), only_input());
    for (up, down, reason) in [
        (
            only_output(),
            ProviderFeatures::default(),
            FallbackReason::NoInputStreaming,
        ),
        (
            ProviderFeatures::default(),
            only_input(),
            FallbackReason::NoOutputStreaming,
        ),
    ] {
        let (outcome, recorder, up_seen, down_seen) = run(up, down);
        assert_eq!(outcome.status, DagStatus::Completed);
        assert!(recorder.events().iter().any(|e| matches!(
            &e.kind,
            EventKind::StreamFallback { from, to, reason: r }
                if &**from == "up" && &**to == "down" && *r == reason
        )));
        assert_eq!(up_seen.params.lock().unwrap()[0].stream, None);
        let down_params = down_seen.params.lock().unwrap()[0].clone();
        assert_eq!(down_params.input_stream, None);
        assert_eq!(down_params.input, Some(Payload::text("Hello world")));
        // The downstream waited for the upstream result.
        assert!(
            recorder.position("up", TaskState::Completed).unwrap()
                < recorder.position("down", TaskState::Running).unwrap()
        );
        // Never a correctness difference.
        assert_eq!(outcome.result(), streamed.result());
    }
}

#[test]
fn a_sub_field_reference_never_streams() {
    let seen = Arc::new(Seen::default());
    let first = Arc::new(Notify::new());
    let orchestrator = Orchestrator::new(router(vec![
        (
            "produce",
            upstream(
                Arc::clone(&seen),
                Arc::clone(&first),
                ProviderFeatures::streaming(),
            ),
        ),
        ("copy", echo_text()),
    ]));
    let dag = acmp_dag::Dag::new("d")
        .with_task(Task::new("up", "produce", TaskInput::text("go")))
        .with_task(Task::new(
            "sub",
            "copy",
            TaskInput::from_task_field("up", "data"),
        ))
        .with_edge(Edge::streaming("up", "sub"));
    // `field: "data"` is the whole output: this one may stream, and does.
    let valid = orchestrator.validate(dag.clone()).unwrap();
    assert!(valid.warnings().is_empty());
    let dag = acmp_dag::Dag {
        tasks: vec![
            dag.tasks[0].clone(),
            Task::new("sub", "copy", TaskInput::from_task_field("up", "data.x")),
        ],
        ..dag
    };
    let valid = orchestrator.validate(dag).unwrap();
    assert_eq!(valid.warnings().len(), 1);
    let outcome = block_on(orchestrator.execute(valid));
    assert_eq!(
        seen.params.lock().unwrap()[0].stream,
        None,
        "not invoked with stream"
    );
    // "Hello world" has no member x: the reference fails at run time, after the upstream.
    assert!(matches!(
        outcome.task("sub").unwrap().error(),
        Some(TaskError::Input(_))
    ));
}

#[test]
fn an_upstream_that_returns_its_output_instead_of_streaming_feeds_one_final_chunk() {
    let down_seen = Arc::new(Seen::default());
    let plain = from_fn(|inv: Invocation| async move {
        assert!(inv.params.is_stream());
        Ok(InvokeResult::new(
            inv.params.task_id,
            Payload::text("whole"),
        ))
    })
    .with_features(ProviderFeatures::streaming());
    let orchestrator = Orchestrator::new(router(vec![
        ("produce", Arc::new(plain)),
        (
            "shout",
            downstream(
                Arc::clone(&down_seen),
                Arc::default(),
                ProviderFeatures::streaming(),
            ),
        ),
        ("copy", echo_text()),
    ]));
    let outcome = block_on(orchestrator.run(streaming_dag())).unwrap();
    assert_eq!(outcome.status, DagStatus::Completed);
    let chunks = down_seen.chunks.lock().unwrap().clone();
    assert_eq!(chunks.len(), 1);
    assert!(chunks[0].is_final);
    assert_eq!(chunks[0].chunk, Payload::text("whole"));
    assert_eq!(outcome.output("down"), Some(&Payload::text("WHOLE")));
}

#[test]
fn a_stream_without_final_chunk_fails_the_upstream_and_cancels_the_reader() {
    let down_seen = Arc::new(Seen::default());
    let truncated = from_fn(|mut inv: Invocation| async move {
        inv.output.send_chunk(Payload::text("part"), false).unwrap();
        Ok(InvokeResult::streamed(inv.params.task_id))
    })
    .with_features(ProviderFeatures::streaming());
    let orchestrator = Orchestrator::new(router(vec![
        ("produce", Arc::new(truncated)),
        (
            "shout",
            downstream(
                Arc::clone(&down_seen),
                Arc::default(),
                ProviderFeatures::streaming(),
            ),
        ),
        ("copy", echo_text()),
    ]));
    let outcome = block_on(orchestrator.run(streaming_dag())).unwrap();
    assert!(matches!(
        outcome.task("up").unwrap().error(),
        Some(TaskError::Protocol { .. })
    ));
    assert_eq!(
        outcome.task("down").unwrap().cancel_reason(),
        Some(&CancelReason::UpstreamFailed {
            task_id: "up".into()
        })
    );
    assert_eq!(outcome.state("copy"), Some(TaskState::Cancelled));
}

#[test]
fn the_output_sink_numbers_chunks_and_refuses_misuse() {
    let mut params = InvokeParams::for_task(
        &Task::new("t", "c", TaskInput::text("x")),
        Some(Payload::text("x")),
    );
    let (mut inv, _rx) = Invocation::with_output_channel(params.clone());
    assert_eq!(
        inv.output.send_chunk(Payload::text("a"), true),
        Err(SinkError::NotStreaming)
    );
    params.stream = Some(true);
    let (mut inv2, mut rx) = Invocation::with_output_channel(params);
    inv2.output.send_chunk(Payload::text("a"), false).unwrap();
    inv2.output.heartbeat(Some(0.1), None);
    inv2.output.send_chunk(Payload::text("b"), true).unwrap();
    assert_eq!(
        inv2.output.send_chunk(Payload::text("c"), true),
        Err(SinkError::Finished)
    );
    let mut got = Vec::new();
    while let Ok(m) = rx.try_recv() {
        got.push(m);
    }
    assert!(
        matches!(&got[0], ProviderMessage::Chunk(c) if c.seq == 0 && !c.is_final && c.task_id == "t")
    );
    assert!(matches!(&got[1], ProviderMessage::Heartbeat(h) if h.progress == Some(0.1)));
    assert!(matches!(&got[2], ProviderMessage::Chunk(c) if c.seq == 1 && c.is_final));
    inv.output.heartbeat(None, None);
}

#[test]
fn one_stream_fans_out_to_every_streaming_dependent() {
    let (up_seen, down_seen) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
    let first = Arc::new(Notify::new());
    let orchestrator = Orchestrator::new(router(vec![
        (
            "produce",
            upstream(Arc::clone(&up_seen), Arc::clone(&first), only_output()),
        ),
        (
            "shout",
            downstream(Arc::clone(&down_seen), first, only_input()),
        ),
    ]));
    let dag = acmp_dag::Dag::new("dag_fan")
        .with_task(Task::new("up", "produce", TaskInput::text("go")))
        .with_task(Task::new("d1", "shout", TaskInput::from_task("up")))
        .with_task(Task::new("d2", "shout", TaskInput::from_task("up")))
        .with_edge(Edge::streaming("up", "d1"))
        .with_edge(Edge::streaming("up", "d2"));
    let outcome = block_on(orchestrator.run(dag)).unwrap();
    assert_eq!(outcome.status, DagStatus::Completed);
    for d in ["d1", "d2"] {
        assert_eq!(outcome.output(d), Some(&Payload::text("HELLO WORLD")));
        let seqs: Vec<_> = down_seen
            .chunks
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.task_id == d)
            .map(|c| (c.seq, c.is_final))
            .collect();
        assert_eq!(seqs, [(0, false), (1, true)], "{d}");
    }
    let result: Vec<&str> = outcome.result().into_iter().map(|(t, _)| t).collect();
    assert_eq!(result, ["d1", "d2"]);
}
