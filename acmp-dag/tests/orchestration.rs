//! The orchestrator's state machine: cancellation, failure policies, deadlines and panics
//! (input resolution and events: `orchestration_io.rs`).

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acmp_dag::{
    AcmpError, CancelReason, DagStatus, Edge, ErrorCode, FailurePolicy, Invocation, InvokeResult,
    Orchestrator, Payload, ProviderRef, Task, TaskError, TaskInput, TaskState, from_fn,
};
use common::{Recorder, block_on, blocker, dag, echo, router};
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
