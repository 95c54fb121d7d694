//! The work queue's parts of the cluster bench: scale-out over 1, 2 and 3
//! worker hosts, and the redelivery of a dead worker's node.

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2e_bench::report::{emit, round};
use a2e_journal::nats::{NatsJournal, NatsOptions, WorkConfig, WorkItem, WorkQueue};
use a2e_journal::{Journal, NewRun, NodeKey, NodeOutcome, RunId, RunKind};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::fail;
use a2e_test_kit::nats_server::NatsServer;

/// A worker host: its own connection and worker on the shared consumer;
/// once `go` fires it pulls `toolkit` nodes, runs each (a 10 ms sleep), up
/// to `parallel` at once, journals the result, acks, and counts it in
/// `done`. Stops at `stop`.
async fn worker_host(
    url: String,
    config: WorkConfig,
    parallel: usize,
    go: tokio::sync::watch::Receiver<bool>,
    done: Arc<std::sync::atomic::AtomicUsize>,
    stop: CancellationToken,
) {
    let j = NatsJournal::connect(&url, NatsOptions::default())
        .await
        .unwrap_or_else(|e| fail(&format!("worker journal: {e}")));
    let queue = WorkQueue::open(j.jetstream(), "a2e", config)
        .await
        .unwrap_or_else(|e| fail(&format!("worker queue: {e}")));
    let mut worker = queue
        .worker("sleepy")
        .await
        .unwrap_or_else(|e| fail(&format!("worker: {e}")));
    let mut go = go;
    if go.wait_for(|g| *g).await.is_err() {
        return;
    }
    let slots = Arc::new(tokio::sync::Semaphore::new(parallel));
    let mut running = tokio::task::JoinSet::new();
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => p.unwrap_or_else(|_| fail("semaphore")),
            () = stop.cancelled() => break,
        };
        let job = tokio::select! {
            j = worker.next() => j,
            () = stop.cancelled() => break,
        };
        let Some(Ok(job)) = job else { break };
        let j = j.clone();
        let done = done.clone();
        running.spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let outcome = NodeOutcome::output(json!({"slept": 10}));
            if job.complete(&j, &outcome).await.is_ok() {
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            drop(permit);
        });
    }
    while running.join_next().await.is_some() {}
}

/// 1,000 calls of a 10 ms tool queued on the work-queue stream, then drained
/// by 1, 2 and 3 worker hosts released together: calls per second from the
/// release to the last result journaled, and the ratio to one worker.
pub(crate) async fn scaleout(server: &NatsServer) {
    use futures::StreamExt;
    const CALLS: usize = 1000;
    const PARALLEL: usize = 8;
    let mut rates = Vec::new();
    for workers in 1..=3usize {
        let journal = NatsJournal::connect(&server.url(), NatsOptions::default())
            .await
            .unwrap_or_else(|e| fail(&format!("journal: {e}")));
        let config = WorkConfig {
            ack_wait: Duration::from_secs(30),
            batch: 1,
            ..WorkConfig::default()
        };
        let queue = WorkQueue::open(journal.jetstream(), "a2e", config.clone())
            .await
            .unwrap_or_else(|e| fail(&format!("queue: {e}")));
        let run = RunId::generate();
        journal
            .create_run(NewRun {
                run_id: run.clone(),
                kind: RunKind::Chain,
                agent: "bench".into(),
                request: json!({"map": CALLS}),
            })
            .await
            .unwrap_or_else(|e| fail(&format!("create_run: {e}")));
        let (go_tx, go_rx) = tokio::sync::watch::channel(false);
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let hosts: Vec<_> = (0..workers)
            .map(|_| {
                tokio::spawn(worker_host(
                    server.url(),
                    config.clone(),
                    PARALLEL,
                    go_rx.clone(),
                    done.clone(),
                    stop.clone(),
                ))
            })
            .collect();
        // The map's items, queued before the clock starts (64 publishes in flight).
        futures::stream::iter(0..CALLS)
            .map(|i| {
                let key = NodeKey::new(run.clone(), &format!("each[{i}]"), 1)
                    .unwrap_or_else(|e| fail(&format!("key: {e}")));
                let queue = &queue;
                async move {
                    queue
                        .publish(&WorkItem {
                            key,
                            toolkit: "sleepy".into(),
                            tool: "sleep".into(),
                            input: json!({"ms": 10}),
                            agent: "bench".into(),
                            chain_id: String::new(),
                            deadline_unix_ms: None,
                            approval: false,
                        })
                        .await
                        .unwrap_or_else(|e| fail(&format!("publish: {e}")))
                }
            })
            .buffer_unordered(64)
            .for_each(|_| async {})
            .await;
        // Let the workers attach before the clock starts.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        let _ = go_tx.send(true);
        while done.load(std::sync::atomic::Ordering::Relaxed) < CALLS {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let secs = started.elapsed().as_secs_f64();
        stop.cancel();
        for h in hosts {
            let _ = h.await;
        }
        let rate = CALLS as f64 / secs;
        rates.push(rate);
        let base = rates.first().copied().unwrap_or(rate);
        // The physical limit: every worker's slots always busy with a 10 ms call.
        let limit = (workers * PARALLEL) as f64 * 100.0;
        emit(&json!({
            "part": "scaleout",
            "workers": workers,
            "calls": CALLS,
            "tool_ms": 10,
            "parallel_per_worker": PARALLEL,
            "seconds": round(secs, 3),
            "calls_per_s": rate.round(),
            "ratio_to_one_worker": round(rate / base, 2),
            "share_of_limit": round(rate / limit, 2),
        }));
    }
}

pub(crate) async fn recovery(server: &NatsServer) {
    let ack_wait = Duration::from_secs(1);
    let config = WorkConfig {
        ack_wait,
        ..WorkConfig::default()
    };
    let j = NatsJournal::connect(&server.url(), NatsOptions::default())
        .await
        .unwrap_or_else(|e| fail(&format!("journal: {e}")));
    let queue = WorkQueue::open(j.jetstream(), "a2e", config.clone())
        .await
        .unwrap_or_else(|e| fail(&format!("queue: {e}")));
    let run = RunId::generate();
    let key = NodeKey::new(run, "slow", 1).unwrap_or_else(|e| fail(&format!("key: {e}")));
    queue
        .publish(&WorkItem {
            key,
            toolkit: "recover".into(),
            tool: "t".into(),
            input: json!({}),
            agent: "bench".into(),
            chain_id: String::new(),
            deadline_unix_ms: None,
            approval: false,
        })
        .await
        .unwrap_or_else(|e| fail(&format!("publish: {e}")));
    // The worker that dies: its own connection, closed with the node held.
    let died = {
        let client = async_nats::connect(server.url())
            .await
            .unwrap_or_else(|e| fail(&format!("connect: {e}")));
        let q = WorkQueue::open(&async_nats::jetstream::new(client.clone()), "a2e", config)
            .await
            .unwrap_or_else(|e| fail(&format!("queue: {e}")));
        let mut w = q
            .worker("recover")
            .await
            .unwrap_or_else(|e| fail(&format!("worker: {e}")));
        let job = w.next().await;
        drop(job);
        drop(w);
        drop(client);
        Instant::now()
    };
    let mut survivor = queue
        .worker("recover")
        .await
        .unwrap_or_else(|e| fail(&format!("worker: {e}")));
    let job = survivor.next().await;
    let took = died.elapsed();
    let delivered = job.and_then(Result::ok).map_or(0, |j| j.delivered());
    emit(&json!({
        "part": "recovery",
        "ack_wait_ms": ack_wait.as_millis() as u64,
        "redelivered_after_ms": took.as_millis() as u64,
        "delivery": delivered,
    }));
}
