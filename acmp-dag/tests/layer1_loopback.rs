//! Layer 1 end to end in one process: a buyer's [`RemoteProvider`]s and a
//! [`ProviderService`] joined by an in-memory message pipe — cancellation,
//! deadlines, liveness, failover and budget through the orchestrator.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acmp_dag::remote::{Budget, Connection, Connector, PoolRouter, RemoteProvider};
use acmp_dag::serve::{Offer, ProviderService, ServiceConfig};
use acmp_dag::{
    AcmpError, Dag, DagStatus, Invocation, InvokeResult, Orchestrator, Payload, ProviderFeatures,
    Task, TaskInput, from_fn,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Connects to a service through channels; `down` stops delivering to it
/// (a frozen provider) when cancelled.
struct Pipe {
    service: Arc<ProviderService>,
    frozen: CancellationToken,
}

impl Connector for Pipe {
    fn connect(&self) -> BoxFuture<'static, Result<Arc<Connection>, String>> {
        let service = self.service.clone();
        let frozen = self.frozen.clone();
        Box::pin(async move {
            let (to_service, mut from_buyer) = mpsc::unbounded_channel::<Value>();
            let (to_buyer, mut from_service) = mpsc::unbounded_channel::<Value>();
            let conn = Arc::new(Connection::new(to_service));
            tokio::spawn(async move {
                while let Some(msg) = from_buyer.recv().await {
                    service.handle(msg, &to_buyer);
                }
            });
            let weak = Arc::downgrade(&conn);
            tokio::spawn(async move {
                while let Some(msg) = from_service.recv().await {
                    if frozen.is_cancelled() {
                        continue;
                    }
                    let Some(conn) = weak.upgrade() else { break };
                    conn.deliver(msg);
                }
            });
            Ok(conn)
        })
    }
}

/// A service whose capability `work` sleeps `ms` (from the input) and counts its runs.
fn service(price: f64, heartbeat_ms: u64, runs: Arc<AtomicUsize>) -> Arc<ProviderService> {
    let provider = from_fn(move |inv: Invocation| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let ms = inv
                .params
                .input
                .as_ref()
                .and_then(|p| p.data.as_u64())
                .unwrap_or(0);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                () = inv.cancel.cancelled() => return Err(AcmpError::cancelled(inv.params.task_id)),
            }
            Ok(InvokeResult::new(
                inv.params.task_id,
                Payload::json(json!(ms)),
            ))
        }
    });
    let config = ServiceConfig {
        features: ProviderFeatures {
            output_streaming: true,
            input_streaming: true,
            heartbeat_interval_ms: Some(heartbeat_ms),
        },
        ..ServiceConfig::default()
    };
    Arc::new(ProviderService::new(
        provider,
        [Offer::new("work", price)],
        config,
    ))
}

fn remote(
    name: &str,
    service: &Arc<ProviderService>,
    frozen: &CancellationToken,
) -> Arc<RemoteProvider> {
    Arc::new(RemoteProvider::new(
        name,
        Pipe {
            service: service.clone(),
            frozen: frozen.clone(),
        },
        Vec::new(),
        ProviderFeatures::default(),
    ))
}

fn work(id: &str, ms: u64) -> Task {
    Task::new(id, "work", TaskInput::literal("json", json!(ms)))
}

#[tokio::test]
async fn a_frozen_provider_loses_liveness_and_the_task_moves_on_with_its_id() {
    let (runs_a, runs_b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let a = service(0.001, 50, runs_a.clone());
    let b = service(0.002, 50, runs_b.clone());
    let frozen = CancellationToken::new();
    let pool = PoolRouter::new(vec![
        remote("a", &a, &frozen),
        remote("b", &b, &CancellationToken::new()),
    ]);
    assert!(pool.connect_all().await.is_empty());
    let dag = Dag::new("d").with_task(work("task_1", 400));
    let freeze = frozen.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        freeze.cancel();
    });
    let outcome = Orchestrator::new(pool).run(dag).await.unwrap();
    assert_eq!(outcome.status, DagStatus::Completed);
    assert_eq!(
        (runs_a.load(Ordering::SeqCst), runs_b.load(Ordering::SeqCst)),
        (1, 1)
    );
}

#[tokio::test]
async fn cancelling_a_run_answers_minus_33004_and_stops_the_provider() {
    let runs = Arc::new(AtomicUsize::new(0));
    let s = service(0.0, 50, runs.clone());
    let r = remote("a", &s, &CancellationToken::new());
    let pool = PoolRouter::new(vec![r.clone()]);
    pool.connect_all().await;
    let orchestrator = Orchestrator::new(pool);
    let run = orchestrator.start(
        orchestrator
            .validate(Dag::new("d").with_task(work("task_c", 5000)))
            .unwrap(),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    run.cancel();
    let outcome = run.outcome().await.unwrap();
    assert_eq!(outcome.status, DagStatus::Cancelled);
    // The provider stored -33004 for the task: a duplicate gets it.
    let conn = r.connection().await.unwrap();
    let e = conn
        .request("acmp/invoke", json!({"task_id": "task_c", "capability": "work", "input": {"type": "json", "data": 1}}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -33004);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn timeout_ms_is_a_hard_deadline_despite_heartbeats() {
    let s = service(0.0, 20, Arc::new(AtomicUsize::new(0)));
    let r = remote("a", &s, &CancellationToken::new());
    let conn = r.connection().await.unwrap();
    let started = std::time::Instant::now();
    let e = conn
        .request("acmp/invoke", json!({"task_id": "t", "capability": "work", "timeout_ms": 150, "input": {"type": "json", "data": 5000}}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -33003);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn the_budget_stops_calls_that_would_exceed_it() {
    let runs = Arc::new(AtomicUsize::new(0));
    let s = service(0.5, 50, runs.clone());
    let pool = PoolRouter::new(vec![remote("a", &s, &CancellationToken::new())])
        .with_budget(Arc::new(Budget::new(0.9)));
    pool.connect_all().await;
    let dag = Dag::new("d")
        .with_task(work("t1", 1))
        .with_task(work("t2", 1));
    let e = pool.preflight(&dag).unwrap_err();
    assert!(e.to_string().contains("budget exceeded"), "{e}");
    let one = Dag::new("d1").with_task(work("t1", 1));
    assert_eq!(pool.preflight(&one).unwrap(), 0.5);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// An input chunk that overtakes its task's invoke (separate POSTs over MCP
/// HTTP) waits for the invoke instead of being refused, and the task runs on it.
#[tokio::test]
async fn an_input_chunk_before_its_invoke_waits_for_it() {
    let runs = Arc::new(AtomicUsize::new(0));
    let service = service(0.001, 1000, runs.clone());
    let (out, mut answers) = mpsc::unbounded_channel::<Value>();
    service.handle(
        json!({"jsonrpc": "2.0", "id": 1, "method": "acmp/inputChunk",
               "params": {"task_id": "early", "seq": 0, "final": true,
                          "chunk": {"type": "json", "data": 7}}}),
        &out,
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    service.handle(
        json!({"jsonrpc": "2.0", "id": 2, "method": "acmp/invoke",
               "params": {"task_id": "early", "capability": "work", "input_stream": true}}),
        &out,
    );
    let mut by_id = std::collections::HashMap::new();
    while by_id.len() < 2 {
        let answer = tokio::time::timeout(Duration::from_secs(10), answers.recv())
            .await
            .expect("both answered within 10 s")
            .unwrap();
        if let Some(id) = answer.get("id").and_then(Value::as_u64) {
            by_id.insert(id, answer);
        }
    }
    // Refused, the chunk would be lost and the task would wait for its input
    // until the timeout above.
    assert!(by_id[&1].get("error").is_none(), "{}", by_id[&1]);
    assert_eq!(by_id[&2]["result"]["task_id"], "early", "{}", by_id[&2]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
