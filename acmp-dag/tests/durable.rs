//! Durable runs: resuming from answered tasks, attempts kept for
//! interrupted ones, events not delivered twice, the observer between a
//! provider's answer and the dependents, and no streaming in a durable run.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acmp_dag::{
    AcmpError, DagResume, DagRunOptions, DagStatus, ErrorCode, EventKind, FallbackReason,
    InvokeParams, InvokeResult, ObserveFuture, Orchestrator, Payload, ProviderFeatures, TaskCall,
    TaskError, TaskObserver, TaskState,
};
use common::{Recorder, block_on, dag, router};
use serde_json::json;

/// Logs `invoke:<task>#<attempt>` and echoes its input.
fn logging(log: Arc<Mutex<Vec<String>>>) -> acmp_dag::ProviderRef {
    Arc::new(acmp_dag::from_fn(move |inv: acmp_dag::Invocation| {
        let log = Arc::clone(&log);
        async move {
            log.lock()
                .unwrap()
                .push(format!("invoke:{}#{}", inv.params.task_id, inv.attempt));
            tokio::task::yield_now().await;
            let data = inv.params.input.map(|p| p.data).unwrap_or_default();
            Ok(InvokeResult::new(
                inv.params.task_id.clone(),
                Payload::json(json!({"from": data, "task": inv.params.task_id})),
            ))
        }
    }))
}

fn answer(task: &str, data: serde_json::Value) -> InvokeResult {
    InvokeResult::new(task, Payload::json(data))
}

#[test]
fn answered_tasks_are_not_invoked_again_and_their_events_not_repeated() {
    block_on(async {
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let recorder = Recorder::default();
        let orch = Orchestrator::new(router(vec![("cap", logging(Arc::clone(&log)))]))
            .with_event_sink(recorder.sink());
        // a → b → c, a → d
        let d = dag(&[
            ("a", "cap", &[]),
            ("b", "cap", &["a"]),
            ("c", "cap", &["b"]),
            ("d", "cap", &["a"]),
        ]);
        let first = orch.execute(orch.validate(d.clone()).unwrap()).await;
        assert_eq!(first.status, DagStatus::Completed);
        let first_events = recorder.events();
        // The earlier run: a and b answered, their events delivered; d was running.
        let mut resume = DagResume::new();
        resume
            .finished("a", 1, Ok(answer("a", json!({"task": "a"}))))
            .finished("b", 1, Ok(answer("b", json!({"task": "b", "kept": true}))))
            .interrupted("d", 2);
        let delivered: Vec<_> = first_events
            .iter()
            .take_while(|e| {
                !matches!(&e.kind, EventKind::Transition { task_id, to: TaskState::Running, .. } if &**task_id == "c")
            })
            .collect();
        for e in &delivered {
            if let Some(id) = e.identity() {
                resume.reported(id);
            }
        }
        resume.next_seq(delivered.len() as u64);
        log.lock().unwrap().clear();
        recorder.0.lock().unwrap().clear();

        let outcome = orch
            .execute_with(
                orch.validate(d).unwrap(),
                DagRunOptions {
                    resume: Some(resume),
                    observer: None,
                },
            )
            .await;
        assert_eq!(outcome.status, DagStatus::Completed);
        let mut invoked = log.lock().unwrap().clone();
        invoked.sort();
        assert_eq!(invoked, ["invoke:c#1", "invoke:d#2"]);
        // c read b's answer from the resume.
        assert_eq!(
            outcome.output("c").unwrap().data["from"],
            json!({"task": "b", "kept": true})
        );
        let events = recorder.events();
        assert_eq!(events[0].seq, delivered.len() as u64);
        for w in events.windows(2) {
            assert_eq!(w[1].seq, w[0].seq + 1);
        }
        // Nothing delivered before is delivered again.
        for e in &events {
            if let Some(id) = e.identity() {
                assert!(
                    !delivered
                        .iter()
                        .any(|d| d.identity().as_deref() == Some(&id)),
                    "{id} repeated"
                );
            }
        }
        assert!(
            events
                .iter()
                .any(|e| e.identity().as_deref() == Some("task:c:completed"))
        );
        assert!(
            events
                .iter()
                .any(|e| e.identity().as_deref() == Some("dag:finished"))
        );
    });
}

#[test]
fn a_replayed_error_fails_the_task_and_cancels_its_dependents() {
    block_on(async {
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let orch = Orchestrator::new(router(vec![("cap", logging(Arc::clone(&log)))]));
        let d = dag(&[("a", "cap", &[]), ("b", "cap", &["a"]), ("e", "cap", &[])]);
        let mut resume = DagResume::new();
        resume.finished(
            "a",
            1,
            Err(AcmpError::new(ErrorCode::INTERNAL, "a", "a may have run")),
        );
        let outcome = orch
            .execute_with(
                orch.validate(d).unwrap(),
                DagRunOptions {
                    resume: Some(resume),
                    observer: None,
                },
            )
            .await;
        assert_eq!(outcome.status, DagStatus::Failed);
        assert_eq!(outcome.state("a"), Some(TaskState::Failed));
        assert_eq!(outcome.state("b"), Some(TaskState::Cancelled));
        assert_eq!(outcome.state("e"), Some(TaskState::Completed));
        assert_eq!(*log.lock().unwrap(), ["invoke:e#1"]);
    });
}

struct Observer {
    log: Arc<Mutex<Vec<String>>>,
    fail_start: Option<&'static str>,
}

impl TaskObserver for Observer {
    fn started(&self, call: &TaskCall, params: &InvokeParams) -> ObserveFuture {
        let log = Arc::clone(&self.log);
        let line = format!(
            "started:{}#{}:{}",
            call.task_id, call.attempt, params.task_id
        );
        let fail = self.fail_start == Some(&*call.task_id);
        let task = call.task_id.to_string();
        Box::pin(async move {
            log.lock().unwrap().push(line);
            if fail {
                return Err(AcmpError::internal(task, "journal full"));
            }
            Ok(())
        })
    }

    fn finished(&self, call: &TaskCall, result: &Result<InvokeResult, AcmpError>) -> ObserveFuture {
        let log = Arc::clone(&self.log);
        let line = format!("finished:{}:{}", call.task_id, result.is_ok());
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            log.lock().unwrap().push(line);
            Ok(())
        })
    }

    fn failed(&self, call: &TaskCall, error: &TaskError) {
        self.log
            .lock()
            .unwrap()
            .push(format!("failed:{}:{error}", call.task_id));
    }
}

#[test]
fn the_observer_sees_each_answer_before_any_dependent_is_invoked() {
    block_on(async {
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let orch = Orchestrator::new(router(vec![("cap", logging(Arc::clone(&log)))]));
        let d = dag(&[
            ("a", "cap", &[]),
            ("b", "cap", &["a"]),
            ("c", "cap", &["b"]),
        ]);
        let observer = Arc::new(Observer {
            log: Arc::clone(&log),
            fail_start: None,
        });
        let outcome = orch
            .execute_with(
                orch.validate(d).unwrap(),
                DagRunOptions {
                    resume: None,
                    observer: Some(observer),
                },
            )
            .await;
        assert_eq!(outcome.status, DagStatus::Completed);
        assert_eq!(
            *log.lock().unwrap(),
            [
                "started:a#1:a",
                "invoke:a#1",
                "finished:a:true",
                "started:b#1:b",
                "invoke:b#1",
                "finished:b:true",
                "started:c#1:c",
                "invoke:c#1",
                "finished:c:true"
            ]
        );
    });
}

#[test]
fn a_start_the_observer_refuses_fails_the_task_without_invoking_it() {
    block_on(async {
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let orch = Orchestrator::new(router(vec![("cap", logging(Arc::clone(&log)))]));
        let d = dag(&[("a", "cap", &[]), ("b", "cap", &["a"])]);
        let observer = Arc::new(Observer {
            log: Arc::clone(&log),
            fail_start: Some("a"),
        });
        let outcome = orch
            .execute_with(
                orch.validate(d).unwrap(),
                DagRunOptions {
                    resume: None,
                    observer: Some(observer),
                },
            )
            .await;
        assert_eq!(outcome.state("a"), Some(TaskState::Failed));
        assert_eq!(outcome.state("b"), Some(TaskState::Cancelled));
        assert!(!log.lock().unwrap().iter().any(|l| l.starts_with("invoke:")));
    });
}

#[test]
fn a_timeout_of_an_observed_task_is_reported_as_its_failure() {
    block_on(async {
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let hang: acmp_dag::ProviderRef =
            Arc::new(acmp_dag::from_fn(|inv: acmp_dag::Invocation| async move {
                inv.cancel.cancelled().await;
                Err::<InvokeResult, _>(AcmpError::cancelled(inv.params.task_id))
            }));
        let orch = Orchestrator::new(router(vec![("hang", hang)]));
        let mut d = dag(&[("slow", "hang", &[])]);
        d.tasks[0].timeout_ms = Some(50);
        let observer = Arc::new(Observer {
            log: Arc::clone(&log),
            fail_start: None,
        });
        let outcome = orch
            .execute_with(
                orch.validate(d).unwrap(),
                DagRunOptions {
                    resume: None,
                    observer: Some(observer),
                },
            )
            .await;
        assert_eq!(outcome.state("slow"), Some(TaskState::Failed));
        let lines = log.lock().unwrap().clone();
        assert!(
            lines
                .iter()
                .any(|l| l == "failed:slow:timed out after 50 ms"),
            "{lines:?}"
        );
    });
}

#[test]
fn a_durable_run_does_not_stream() {
    block_on(async {
        let streaming: acmp_dag::ProviderRef = Arc::new(
            acmp_dag::from_fn(|inv: acmp_dag::Invocation| async move {
                Ok(InvokeResult::new(
                    inv.params.task_id.clone(),
                    Payload::text("whole"),
                ))
            })
            .with_features(ProviderFeatures {
                output_streaming: true,
                input_streaming: true,
                ..ProviderFeatures::default()
            }),
        );
        let recorder = Recorder::default();
        let orch =
            Orchestrator::new(router(vec![("s", streaming)])).with_event_sink(recorder.sink());
        let mut d = dag(&[("a", "s", &[]), ("b", "s", &["a"])]);
        d.edges[0].stream_eligible = Some(true);
        // Without an observer the edge streams.
        let plain = orch.execute(orch.validate(d.clone()).unwrap()).await;
        assert_eq!(plain.status, DagStatus::Completed);
        assert!(
            !recorder
                .events()
                .iter()
                .any(|e| matches!(e.kind, EventKind::StreamFallback { .. }))
        );
        let observer = Arc::new(Observer {
            log: Arc::default(),
            fail_start: None,
        });
        let outcome = orch
            .execute_with(
                orch.validate(d).unwrap(),
                DagRunOptions {
                    resume: None,
                    observer: Some(observer),
                },
            )
            .await;
        assert_eq!(outcome.status, DagStatus::Completed);
        assert!(recorder.events().iter().any(|e| matches!(
            e.kind,
            EventKind::StreamFallback {
                reason: FallbackReason::Durable,
                ..
            }
        )));
    });
}
