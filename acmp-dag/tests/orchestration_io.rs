//! The orchestrator's inputs and outputs: routing and result checks, input resolution,
//! events and heartbeats, empty and invalid DAGs, declaration order (the state machine's
//! cancellation, policies and deadlines: `orchestration.rs`).

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acmp_dag::{
    CancelReason, DagStatus, Edge, ErrorCode, EventKind, Invocation, InvokeResult, Orchestrator,
    Payload, ProviderRef, ResolveError, Task, TaskError, TaskInput, TaskState, TransitionCause,
    from_fn,
};
use common::{Recorder, block_on, dag, echo, failing, router};
use serde_json::json;
use tokio::sync::Notify;

fn arc(p: impl acmp_dag::Provider) -> ProviderRef {
    Arc::new(p)
}

#[test]
fn unroutable_unresolvable_and_malformed_results_fail_the_task() {
    block_on(async {
        let invoked: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = Arc::clone(&invoked);
        let recording = from_fn(move |inv: Invocation| {
            log.lock().unwrap().push(inv.params.task_id.clone());
            async move {
                let id = inv.params.task_id.clone();
                let output = Payload::json(json!({"chunks": ["a", "b"]}));
                match id.as_str() {
                    "greedy" => Ok(InvokeResult::new(id, output).with_usage(1, 0.002)),
                    "liar" => Ok(InvokeResult::new("someone_else", output)),
                    "mute" => Ok(InvokeResult {
                        output: None,
                        ..InvokeResult::new(id, output)
                    }),
                    _ => Ok(InvokeResult::new(id, output)),
                }
            }
        });
        let orchestrator = Orchestrator::new(router(vec![("rec", arc(recording))]));
        let d = acmp_dag::Dag::new("d")
            .with_task(Task::new("src", "rec", TaskInput::text("x")))
            .with_task(Task::new(
                "far",
                "rec",
                TaskInput::from_task_field("src", "data.chunks[5]"),
            ))
            .with_task(Task::new(
                "nowhere",
                "unknown-capability",
                TaskInput::text("x"),
            ))
            .with_task(Task::new("liar", "rec", TaskInput::text("x")))
            .with_task(Task::new("mute", "rec", TaskInput::text("x")))
            .with_task(Task {
                max_price_cu: Some(0.001),
                ..Task::new("greedy", "rec", TaskInput::text("x"))
            })
            .with_edge(Edge::new("src", "far"));
        let outcome = orchestrator.run(d).await.unwrap();
        let far = outcome.task("far").unwrap().error().unwrap().clone();
        let TaskError::Input(ResolveError::Path { source_task, error }) = &far else {
            panic!("{far:?}");
        };
        assert_eq!(source_task, "src");
        assert_eq!(error.at, "data.chunks[5]");
        assert!(
            !invoked.lock().unwrap().contains(&"far".to_owned()),
            "never invoked"
        );
        let nowhere = outcome.task("nowhere").unwrap().error().unwrap();
        assert_eq!(nowhere.code(), ErrorCode::CAPABILITY_NOT_FOUND);
        for t in ["liar", "mute", "greedy"] {
            assert!(
                matches!(
                    outcome.task(t).unwrap().error(),
                    Some(TaskError::Protocol { .. })
                ),
                "{t}"
            );
        }
    });
}

#[test]
fn inputs_are_resolved_to_literals_and_from_tasks_keeps_declared_order() {
    block_on(async {
        // "second" completes before "first": the array still follows from_tasks order.
        let first_may_finish = Arc::new(Notify::new());
        let (gate, signal) = (Arc::clone(&first_may_finish), Arc::clone(&first_may_finish));
        let received: Arc<Mutex<Option<acmp_dag::InvokeParams>>> = Arc::default();
        let sink = Arc::clone(&received);
        let provider = from_fn(move |inv: Invocation| {
            let (gate, signal, sink) = (Arc::clone(&gate), Arc::clone(&signal), Arc::clone(&sink));
            async move {
                let id = inv.params.task_id.clone();
                match id.as_str() {
                    "first" => gate.notified().await,
                    "second" => signal.notify_one(),
                    _ => *sink.lock().unwrap() = Some(inv.params.clone()),
                }
                Ok(InvokeResult::new(
                    id.clone(),
                    Payload::text(format!("out of {id}")),
                ))
            }
        });
        let orchestrator = Orchestrator::new(router(vec![("p", arc(provider))]));
        let d = acmp_dag::Dag::new("d")
            .with_task(Task::new("first", "p", TaskInput::text("1")))
            .with_task(Task::new("second", "p", TaskInput::text("2")))
            .with_task(
                Task::new("agg", "p", TaskInput::from_tasks(["first", "second"]))
                    .with_timeout_ms(5_000)
                    .with_metadata("priority", "high")
                    .with_output_type("text"),
            )
            .with_edge(Edge::new("second", "agg"))
            .with_edge(Edge::new("first", "agg"));
        let outcome = orchestrator.run(d).await.unwrap();
        assert_eq!(outcome.status, DagStatus::Completed);
        let params = received.lock().unwrap().clone().unwrap();
        assert_eq!(
            params.input,
            Some(Payload::json(json!([
                {"type": "text", "data": "out of first"},
                {"type": "text", "data": "out of second"}
            ])))
        );
        assert_eq!(params.input_stream, None);
        assert_eq!(params.stream, None);
        assert_eq!(params.timeout_ms, Some(5_000));
        assert_eq!(params.output_type.as_deref(), Some("text"));
        assert_eq!(params.metadata.unwrap()["priority"], "high");
        params_check(&outcome);
    });
}

fn params_check(outcome: &acmp_dag::DagOutcome) {
    assert_eq!(outcome.dag().dag_id, "d");
    assert_eq!(outcome.tasks.len(), 3);
}

#[test]
fn every_transition_is_an_event_and_heartbeats_are_forwarded() {
    block_on(async {
        let beating = from_fn(|inv: Invocation| async move {
            inv.output.heartbeat(Some(0.5), Some("halfway".into()));
            Ok(InvokeResult::new(inv.params.task_id, Payload::text("done")))
        });
        let recorder = Recorder::default();
        let orchestrator = Orchestrator::new(router(vec![
            ("beat", arc(beating)),
            ("bad", arc(failing())),
            ("fast", arc(echo())),
        ]))
        .with_event_sink(recorder.sink());
        let d = dag(&[
            ("a", "beat", &[]),
            ("b", "bad", &["a"]),
            ("c", "fast", &["b"]),
        ]);
        let outcome = orchestrator.run(d).await.unwrap();
        let events = recorder.events();
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.seq, i as u64);
            assert_eq!(&*e.dag_id, "dag_test");
        }
        assert_eq!(
            events.first().unwrap().kind,
            EventKind::DagStarted { tasks: 3 }
        );
        assert_eq!(
            events.last().unwrap().kind,
            EventKind::DagFinished {
                status: DagStatus::Failed
            }
        );
        assert!(events.iter().any(|e| matches!(
            &e.kind,
            EventKind::Heartbeat { task_id, progress: Some(p), detail: Some(d) }
                if &**task_id == "a" && *p == 0.5 && d == "halfway"
        )));
        let t = recorder.transitions();
        assert_eq!(
            t,
            vec![
                ("a".into(), TaskState::Pending, TaskState::Running),
                ("a".into(), TaskState::Running, TaskState::Completed),
                ("b".into(), TaskState::Pending, TaskState::Running),
                ("b".into(), TaskState::Running, TaskState::Failed),
                ("c".into(), TaskState::Pending, TaskState::Cancelled),
            ]
        );
        let causes: Vec<_> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Transition { cause: Some(c), .. } => Some(c.clone()),
                _ => None,
            })
            .collect();
        assert!(matches!(
            &causes[0],
            TransitionCause::Failed(TaskError::Provider(_))
        ));
        assert_eq!(
            causes[1],
            TransitionCause::Cancelled(CancelReason::UpstreamFailed {
                task_id: "b".into()
            })
        );
        assert_eq!(outcome.tasks.len(), 3);
    });
}

#[test]
fn an_empty_dag_completes_at_once() {
    block_on(async {
        let orchestrator = Orchestrator::new(router(vec![]));
        let outcome = orchestrator
            .run(acmp_dag::Dag::new("dag_empty"))
            .await
            .unwrap();
        assert_eq!(outcome.status, DagStatus::Completed);
        assert!(outcome.result().is_empty());
    });
}

#[test]
fn invalid_dags_are_refused_before_anything_runs() {
    block_on(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&calls);
        let counting = from_fn(move |inv: Invocation| {
            c.fetch_add(1, Ordering::SeqCst);
            async move { Ok(InvokeResult::new(inv.params.task_id, Payload::text("x"))) }
        });
        let orchestrator = Orchestrator::new(router(vec![("p", arc(counting))]));
        let d = dag(&[("a", "p", &["b"]), ("b", "p", &["a"]), ("c", "p", &[])]);
        let report = orchestrator.run(d).await.unwrap_err();
        assert!(!report.errors.is_empty());
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn tasks_declared_after_their_dependents_run_and_keep_declaration_order() {
    block_on(async {
        // Declared leaf first: every task ends out of declaration order, and a wide
        // aggregation with its edges reversed still reads its sources in from_tasks order.
        let sources: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
        let mut d = acmp_dag::Dag::new("d").with_task(Task::new(
            "agg",
            "echo",
            TaskInput::from_tasks(sources.iter().rev().cloned()),
        ));
        for s in &sources {
            d = d.with_task(Task::new(s.as_str(), "echo", TaskInput::text(s.as_str())));
        }
        for s in &sources {
            d = d.with_edge(Edge::new(s.as_str(), "agg"));
        }
        let outcome = Orchestrator::new(router(vec![("echo", arc(echo()))]))
            .run(d)
            .await
            .unwrap();
        assert_eq!(outcome.status, DagStatus::Completed);
        let order: Vec<&str> = outcome.tasks.iter().map(|t| &*t.task_id).collect();
        let mut expected = vec!["agg"];
        expected.extend(sources.iter().map(String::as_str));
        assert_eq!(order, expected);
        let echoed = &outcome.output("agg").unwrap().data["echo"];
        let firsts: Vec<&str> = echoed
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["data"]["task"].as_str().unwrap())
            .collect();
        let reversed: Vec<&str> = sources.iter().rev().map(String::as_str).collect();
        assert_eq!(firsts, reversed);
    });
}
