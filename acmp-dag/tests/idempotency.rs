//! The idempotency wrapper: a `task_id` never runs twice.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use acmp_dag::{
    AcmpError, DagStatus, ErrorCode, Idempotent, Invocation, InvokeParams, InvokeResult,
    Orchestrator, Payload, Provider, Task, TaskInput, from_fn,
};
use common::{block_on, block_on_local, dag, router};
use tokio::sync::Notify;

fn params(task_id: &str) -> InvokeParams {
    InvokeParams::for_task(
        &Task::new(task_id, "c", TaskInput::text("x")),
        Some(Payload::text("x")),
    )
}

/// Counts runs; each run waits for `release` unless the task id starts with "quick", and
/// fails if it starts with "bad".
fn counted(runs: Arc<AtomicUsize>, started: Arc<Notify>, release: Arc<Notify>) -> impl Provider {
    from_fn(move |inv: Invocation| {
        let (runs, started, release) = (
            Arc::clone(&runs),
            Arc::clone(&started),
            Arc::clone(&release),
        );
        async move {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            let id = inv.params.task_id.clone();
            if !id.starts_with("quick") {
                started.notify_one();
                tokio::select! {
                    () = release.notified() => {}
                    () = inv.cancel.cancelled() => return Err(AcmpError::cancelled(id)),
                }
            }
            if id.starts_with("bad") {
                return Err(AcmpError::internal(id, "failed once"));
            }
            Ok(InvokeResult::new(
                id,
                Payload::json(serde_json::json!({"run": n})),
            ))
        }
    })
}

fn wrapped() -> (
    Arc<AtomicUsize>,
    Arc<Notify>,
    Arc<Notify>,
    Arc<Idempotent<impl Provider>>,
) {
    let runs = Arc::new(AtomicUsize::new(0));
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let provider = Arc::new(Idempotent::new(counted(
        Arc::clone(&runs),
        Arc::clone(&started),
        Arc::clone(&release),
    )));
    (runs, started, release, provider)
}

#[test]
fn a_duplicate_during_the_run_joins_it() {
    block_on_local(async {
        let (runs, started, release, provider) = wrapped();
        let p = Arc::clone(&provider);
        let first = tokio::spawn(async move { p.invoke(Invocation::new(params("task_1"))).await });
        started.notified().await;
        let p = Arc::clone(&provider);
        let second = tokio::spawn(async move { p.invoke(Invocation::new(params("task_1"))).await });
        tokio::task::yield_now().await;
        // The duplicate is waiting on the running invocation, not running its own.
        assert!(!second.is_finished());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        release.notify_one();
        let (a, b) = (
            first.await.unwrap().unwrap(),
            second.await.unwrap().unwrap(),
        );
        assert_eq!(a, b);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn a_duplicate_after_the_run_gets_the_stored_outcome() {
    block_on(async {
        let (runs, _, _, provider) = wrapped();
        let a = provider
            .invoke(Invocation::new(params("quick_1")))
            .await
            .unwrap();
        let b = provider
            .invoke(Invocation::new(params("quick_1")))
            .await
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // Another id runs.
        provider
            .invoke(Invocation::new(params("quick_2")))
            .await
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert_eq!(provider.len(), 2);
        // Forgetting allows a new run.
        assert!(provider.forget("quick_1"));
        provider
            .invoke(Invocation::new(params("quick_1")))
            .await
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn errors_are_stored_too() {
    block_on(async {
        let (runs, started, release, provider) = wrapped();
        let p = Arc::clone(&provider);
        let first = tokio::spawn(async move { p.invoke(Invocation::new(params("bad_1"))).await });
        started.notified().await;
        release.notify_one();
        let err = first.await.unwrap().unwrap_err();
        let again = provider
            .invoke(Invocation::new(params("bad_1")))
            .await
            .unwrap_err();
        assert_eq!(err, again);
        assert_eq!(provider.outcome("bad_1"), Some(Err(err)));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn cancelling_a_joined_duplicate_cancels_the_one_run() {
    block_on_local(async {
        let (runs, started, _release, provider) = wrapped();
        let p = Arc::clone(&provider);
        let first = tokio::spawn(async move { p.invoke(Invocation::new(params("task_c"))).await });
        started.notified().await;
        let duplicate = Invocation::new(params("task_c"));
        let token = duplicate.cancel.clone();
        let p = Arc::clone(&provider);
        let second = tokio::spawn(async move { p.invoke(duplicate).await });
        tokio::task::yield_now().await;
        token.cancel();
        let (a, b) = (
            first.await.unwrap().unwrap_err(),
            second.await.unwrap().unwrap_err(),
        );
        assert_eq!(a.code, ErrorCode::CANCELLED);
        assert_eq!(a, b);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn an_abandoned_run_stores_a_cancelled_outcome_for_its_joiners() {
    block_on_local(async {
        let (runs, started, _release, provider) = wrapped();
        let p = Arc::clone(&provider);
        let first = tokio::spawn(async move { p.invoke(Invocation::new(params("task_d"))).await });
        started.notified().await;
        let p = Arc::clone(&provider);
        let second = tokio::spawn(async move { p.invoke(Invocation::new(params("task_d"))).await });
        tokio::task::yield_now().await;
        first.abort();
        assert!(first.await.unwrap_err().is_cancelled());
        let b = second.await.unwrap().unwrap_err();
        assert_eq!(b.code, ErrorCode::CANCELLED);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn a_panicking_run_stores_an_internal_error() {
    block_on(async {
        let provider = Arc::new(Idempotent::new(from_fn(|_inv: Invocation| async move {
            if true {
                panic!("provider bug");
            }
            Ok::<InvokeResult, AcmpError>(InvokeResult::new("t", Payload::text("x")))
        })));
        let p = Arc::clone(&provider);
        let first = tokio::spawn(async move { p.invoke(Invocation::new(params("task_p"))).await });
        assert!(first.await.unwrap_err().is_panic());
        let again = provider
            .invoke(Invocation::new(params("task_p")))
            .await
            .unwrap_err();
        assert_eq!(again.code, ErrorCode::INTERNAL);
    });
}

#[test]
fn the_orchestrator_over_an_idempotent_provider_runs_a_dag_once() {
    block_on(async {
        let (runs, _, _, provider) = wrapped();
        let orchestrator = Orchestrator::new(router(vec![("q", provider)]));
        let d = dag(&[("quick_a", "q", &[]), ("quick_b", "q", &["quick_a"])]);
        let first = orchestrator.run(d.clone()).await.unwrap();
        let second = orchestrator.run(d).await.unwrap();
        assert_eq!(first.status, DagStatus::Completed);
        assert_eq!(first.result(), second.result());
        assert_eq!(runs.load(Ordering::SeqCst), 2, "each task id ran once");
    });
}
