//! The orchestrator's state machine: cancellation, failure policies, deadlines, panics,
//! input resolution and events.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acmp_dag::{
    AcmpError, CancelReason, DagStatus, Edge, ErrorCode, EventKind, FailurePolicy, Invocation,
    InvokeResult, Orchestrator, Payload, ProviderRef, ResolveError, Task, TaskError, TaskInput,
    TaskState, TransitionCause, from_fn,
};
use common::{Recorder, block_on, blocker, dag, echo, failing, router};
use serde_json::json;
use tokio::sync::Notify;

fn arc(p: impl acmp_dag::Provider) -> ProviderRef {
    Arc::new(p)
}

#[test]
fn cancelling_mid_run_cancels_downstream_and_keeps_upstream() {
    block_on(async {
        let cancelled: Arc<Mutex<Vec<String>>> = Arc::default();
        let started = Arc::new(Notify::new());
        let recorder = Recorder::default();
        let orchestrator = Orchestrator::new(router(vec![
            ("fast", arc(echo())),
            (
                "slow",
                arc(blocker(Arc::clone(&cancelled), Arc::clone(&started))),
            ),
        ]))
        .with_event_sink(recorder.sink());
        // a → b (in flight when cancelled) → c → d; a → e (independent of b)
        let d = dag(&[
            ("a", "fast", &[]),
            ("b", "slow", &["a"]),
            ("c", "fast", &["b"]),
            ("d", "fast", &["c"]),
            ("e", "fast", &["a"]),
        ]);
        let run = orchestrator.start(orchestrator.validate(d).unwrap());
        started.notified().await;
        run.cancel_task("b").unwrap();
        assert!(run.cancel_task("nope").is_err());
        let outcome = run.outcome().await.unwrap();

        assert_eq!(
            *cancelled.lock().unwrap(),
            ["b"],
            "b's provider saw its token fire"
        );
        assert_eq!(
            outcome.state("a"),
            Some(TaskState::Completed),
            "upstream stays completed"
        );
        assert!(outcome.output("a").is_some());
        assert_eq!(outcome.state("e"), Some(TaskState::Completed));
        assert_eq!(
            outcome.task("b").unwrap().cancel_reason(),
            Some(&CancelReason::Requested)
        );
        for t in ["c", "d"] {
            assert_eq!(
                outcome.task(t).unwrap().cancel_reason(),
                Some(&CancelReason::UpstreamCancelled {
                    task_id: "b".into()
                })
            );
        }
        assert_eq!(outcome.status, DagStatus::Cancelled);
        // c and d went straight from pending to cancelled.
        let t = recorder.transitions();
        assert!(t.contains(&("c".into(), TaskState::Pending, TaskState::Cancelled)));
        assert!(t.contains(&("b".into(), TaskState::Running, TaskState::Cancelled)));
        assert!(
            !t.iter()
                .any(|(id, _, to)| id == "c" && *to == TaskState::Running)
        );
    });
}

#[test]
fn cancellation_propagates_breadth_first() {
    block_on(async {
        let started = Arc::new(Notify::new());
        let recorder = Recorder::default();
        let orchestrator = Orchestrator::new(router(vec![
            ("fast", arc(echo())),
            ("slow", arc(blocker(Arc::default(), Arc::clone(&started)))),
        ]))
        .with_event_sink(recorder.sink());
        // r → {b, c}; b → d → f; c → e
        let d = dag(&[
            ("r", "slow", &[]),
            ("b", "fast", &["r"]),
            ("c", "fast", &["r"]),
            ("d", "fast", &["b"]),
            ("e", "fast", &["c"]),
            ("f", "fast", &["d"]),
        ]);
        let run = orchestrator.start(orchestrator.validate(d).unwrap());
        started.notified().await;
        run.cancel_task("r").unwrap();
        run.outcome().await.unwrap();
        let order: Vec<String> = recorder
            .transitions()
            .into_iter()
            .filter(|(_, _, to)| *to == TaskState::Cancelled)
            .map(|(t, _, _)| t)
            .collect();
        assert_eq!(order, ["r", "b", "c", "d", "e", "f"]);
    });
}

#[test]
fn cancelling_the_run_fires_every_in_flight_token() {
    block_on(async {
        let cancelled: Arc<Mutex<Vec<String>>> = Arc::default();
        let started = Arc::new(Notify::new());
        let count = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&count);
        let started2 = Arc::clone(&started);
        let log = Arc::clone(&cancelled);
        let slow = from_fn(move |inv: Invocation| {
            let (count, started, log) = (
                Arc::clone(&counter),
                Arc::clone(&started2),
                Arc::clone(&log),
            );
            async move {
                if count.fetch_add(1, Ordering::SeqCst) == 1 {
                    started.notify_one();
                }
                inv.cancel.cancelled().await;
                log.lock().unwrap().push(inv.params.task_id.clone());
                Err::<InvokeResult, _>(AcmpError::cancelled(inv.params.task_id))
            }
        });
        let orchestrator =
            Orchestrator::new(router(vec![("slow", arc(slow)), ("fast", arc(echo()))]));
        let d = dag(&[
            ("x", "slow", &[]),
            ("y", "slow", &[]),
            ("z", "fast", &["x", "y"]),
        ]);
        let run = orchestrator.start(orchestrator.validate(d).unwrap());
        started.notified().await; // both x and y are running
        run.cancel();
        let outcome = run.outcome().await.unwrap();
        let mut seen = cancelled.lock().unwrap().clone();
        seen.sort();
        assert_eq!(seen, ["x", "y"]);
        for t in ["x", "y", "z"] {
            assert_eq!(
                outcome.task(t).unwrap().cancel_reason(),
                Some(&CancelReason::RunCancelled)
            );
        }
    });
}

#[test]
fn dropping_a_run_cancels_its_providers() {
    block_on(async {
        struct OnDrop(Arc<Notify>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.notify_one();
            }
        }
        let tokens: Arc<Mutex<Vec<tokio_util::sync::CancellationToken>>> = Arc::default();
        let started = Arc::new(Notify::new());
        let dropped = Arc::new(Notify::new());
        let (log, started2, dropped2) = (
            Arc::clone(&tokens),
            Arc::clone(&started),
            Arc::clone(&dropped),
        );
        let slow = from_fn(move |inv: Invocation| {
            let (log, started, dropped) = (
                Arc::clone(&log),
                Arc::clone(&started2),
                Arc::clone(&dropped2),
            );
            async move {
                let _guard = OnDrop(dropped);
                log.lock().unwrap().push(inv.cancel.clone());
                started.notify_one();
                std::future::pending::<()>().await;
                Ok(InvokeResult::new(
                    inv.params.task_id,
                    Payload::text("never"),
                ))
            }
        });
        let orchestrator = Orchestrator::new(router(vec![("slow", arc(slow))]));
        let run = orchestrator.start(orchestrator.validate(dag(&[("x", "slow", &[])])).unwrap());
        started.notified().await;
        drop(run);
        dropped.notified().await;
        let tokens = tokens.lock().unwrap();
        assert_eq!(tokens.len(), 1);
        assert!(
            tokens[0].is_cancelled(),
            "the token fired before the invocation was dropped"
        );
    });
}

/// r1 fails; r2 → s is an independent branch; r1 → t depends on the failure.
fn failure_dag() -> acmp_dag::Dag {
    dag(&[
        ("r1", "bad", &[]),
        ("t", "fast", &["r1"]),
        ("u", "fast", &["t"]),
        ("r2", "gate", &[]),
        ("s", "fast", &["r2"]),
    ])
}

#[test]
fn best_effort_lets_independent_branches_finish() {
    block_on(async {
        // r2 only finishes once r1 has failed: the branch really runs after the failure.
        let failed = Arc::new(Notify::new());
        let gate_open = Arc::clone(&failed);
        let gate = from_fn(move |inv: Invocation| {
            let open = Arc::clone(&gate_open);
            async move {
                open.notified().await;
                Ok(InvokeResult::new(inv.params.task_id, Payload::text("ok")))
            }
        });
        let signal = Arc::clone(&failed);
        let bad = from_fn(move |inv: Invocation| {
            let signal = Arc::clone(&signal);
            async move {
                signal.notify_one();
                Err::<InvokeResult, _>(AcmpError::internal(inv.params.task_id, "boom"))
            }
        });
        let orchestrator = Orchestrator::new(router(vec![
            ("bad", arc(bad)),
            ("gate", arc(gate)),
            ("fast", arc(echo())),
        ]))
        .with_failure_policy(FailurePolicy::BestEffort);
        let outcome = orchestrator.run(failure_dag()).await.unwrap();
        assert_eq!(outcome.status, DagStatus::Failed);
        let err = outcome.task("r1").unwrap().error().unwrap();
        assert_eq!(err.code(), ErrorCode::INTERNAL);
        assert!(matches!(err, TaskError::Provider(e) if e.message == "boom"));
        for t in ["t", "u"] {
            assert_eq!(
                outcome.task(t).unwrap().cancel_reason(),
                Some(&CancelReason::UpstreamFailed {
                    task_id: "r1".into()
                })
            );
        }
        assert_eq!(outcome.state("r2"), Some(TaskState::Completed));
        assert_eq!(outcome.state("s"), Some(TaskState::Completed));
        let leaves: Vec<&str> = outcome.result().into_iter().map(|(t, _)| t).collect();
        assert_eq!(leaves, ["s"], "completed leaves form the result");
    });
}

#[test]
fn fail_fast_cancels_everything_still_open() {
    block_on(async {
        let cancelled: Arc<Mutex<Vec<String>>> = Arc::default();
        let started = Arc::new(Notify::new());
        let (s2, go) = (Arc::clone(&started), Arc::clone(&started));
        // `bad` fails only once the gate task is running.
        let bad = from_fn(move |inv: Invocation| {
            let go = Arc::clone(&go);
            async move {
                go.notified().await;
                Err::<InvokeResult, _>(AcmpError::internal(inv.params.task_id, "boom"))
            }
        });
        let gate = blocker(Arc::clone(&cancelled), s2);
        let orchestrator = Orchestrator::new(router(vec![
            ("bad", arc(bad)),
            ("gate", arc(gate)),
            ("fast", arc(echo())),
        ]))
        .with_failure_policy(FailurePolicy::FailFast);
        let outcome = orchestrator.run(failure_dag()).await.unwrap();
        assert_eq!(outcome.status, DagStatus::Failed);
        assert_eq!(outcome.state("r1"), Some(TaskState::Failed));
        assert_eq!(
            *cancelled.lock().unwrap(),
            ["r2"],
            "the in-flight sibling saw its token"
        );
        assert_eq!(
            outcome.task("r2").unwrap().cancel_reason(),
            Some(&CancelReason::FailFast {
                failed: "r1".into()
            })
        );
        assert_eq!(
            outcome.task("s").unwrap().cancel_reason(),
            Some(&CancelReason::FailFast {
                failed: "r1".into()
            })
        );
        assert_eq!(
            outcome.task("t").unwrap().cancel_reason(),
            Some(&CancelReason::UpstreamFailed {
                task_id: "r1".into()
            })
        );
        assert!(outcome.result().is_empty());
    });
}

#[test]
fn a_task_past_its_deadline_fails_with_timeout_and_its_token_fires() {
    block_on(async {
        let cancelled: Arc<Mutex<Vec<String>>> = Arc::default();
        let orchestrator = Orchestrator::new(router(vec![
            ("slow", arc(blocker(Arc::clone(&cancelled), Arc::default()))),
            ("fast", arc(echo())),
        ]));
        let d = acmp_dag::Dag::new("d")
            .with_task(Task::new("x", "slow", TaskInput::text("x")).with_timeout_ms(20))
            .with_task(Task::new("y", "fast", TaskInput::from_task("x")))
            .with_edge(Edge::new("x", "y"));
        let outcome = orchestrator.run(d).await.unwrap();
        let err = outcome.task("x").unwrap().error().unwrap().clone();
        assert_eq!(err, TaskError::TimedOut { timeout_ms: 20 });
        assert_eq!(err.code(), ErrorCode::TIMEOUT);
        assert_eq!(err.to_acmp("x").code, ErrorCode::TIMEOUT);
        assert_eq!(*cancelled.lock().unwrap(), ["x"]);
        assert_eq!(outcome.state("y"), Some(TaskState::Cancelled));
    });
}

#[test]
fn provider_panics_become_task_failures() {
    block_on(async {
        let panics_in_future = from_fn(|inv: Invocation| async move {
            if inv.params.task_id == "p" {
                panic!("provider bug");
            }
            Ok(InvokeResult::new(inv.params.task_id, Payload::text("x")))
        });
        struct PanicsOnCall;
        impl acmp_dag::Provider for PanicsOnCall {
            #[allow(clippy::manual_async_fn)]
            fn invoke(
                &self,
                _: Invocation,
            ) -> impl std::future::Future<Output = Result<InvokeResult, AcmpError>> + Send
            {
                panic!("before any future");
                #[allow(unreachable_code)]
                async {
                    unreachable!()
                }
            }
        }
        let orchestrator = Orchestrator::new(router(vec![
            ("p", arc(panics_in_future)),
            ("q", arc(PanicsOnCall)),
            ("fast", arc(echo())),
        ]));
        let d = dag(&[
            ("p", "p", &[]),
            ("q", "q", &[]),
            ("after", "fast", &["p"]),
            ("ok", "fast", &[]),
        ]);
        let outcome = orchestrator.run(d).await.unwrap();
        assert_eq!(
            outcome.task("p").unwrap().error(),
            Some(&TaskError::Panicked {
                message: "provider bug".into()
            })
        );
        assert_eq!(
            outcome.task("q").unwrap().error(),
            Some(&TaskError::Panicked {
                message: "before any future".into()
            })
        );
        assert_eq!(outcome.state("after"), Some(TaskState::Cancelled));
        assert_eq!(outcome.state("ok"), Some(TaskState::Completed));
    });
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
