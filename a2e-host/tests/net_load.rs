//! Load, bounded and on loopback only: 200 concurrent WebSocket sessions × 200
//! tool calls each (20 in flight per session, 4000 in all). Every response
//! arrives exactly once, matched to its request; after the sessions close, no
//! session is left and the process's memory comes back to its baseline
//! (generous slack: allocators keep some).

mod net_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use a2e_client::Client;
use a2e_host::transport::net::NetOptions;
use futures::StreamExt;
use net_support::*;
use serde_json::json;

const SESSIONS: usize = 200;
const CALLS: usize = 200;
const IN_FLIGHT: usize = 20;

/// Resident set size of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// One round: every session connects; then all make their calls at once; then all close.
async fn round(url: &str, sessions: usize, calls: usize, unsolicited: &Arc<AtomicUsize>) {
    let connects = (0..sessions).map(|s| {
        let url = url.to_owned();
        let unsolicited = unsolicited.clone();
        async move {
            let client = Client::builder()
                .agent_id(format!("load-{s}"))
                .handshake_timeout(Duration::from_secs(30))
                .connect_ws(&url)
                .await
                .unwrap();
            client.on_push(move |_| {
                unsolicited.fetch_add(1, Ordering::SeqCst);
            });
            client
        }
    });
    let clients = futures::future::join_all(connects).await;

    let sessions = clients.into_iter().enumerate().map(|(s, client)| {
        tokio::spawn(async move {
            let calls = (0..calls).map(|c| {
                let client = client.clone();
                async move {
                    let result = client
                        .tools()
                        .call("echo", json!({"s": s, "c": c}))
                        .await
                        .unwrap();
                    assert_eq!(
                        result.data,
                        json!({"s": s, "c": c}),
                        "matched to its request"
                    );
                }
            });
            futures::stream::iter(calls)
                .buffer_unordered(IN_FLIGHT)
                .collect::<Vec<()>>()
                .await;
            assert_eq!(client.pending_requests(), 0);
            client
        })
    });
    let mut clients = Vec::new();
    for session in futures::future::join_all(sessions).await {
        clients.push(session.unwrap());
    }
    futures::future::join_all(clients.iter().map(Client::close)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_sessions_many_calls_and_memory_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let counters = Arc::new(Counters::default());
    let host = host(dir.path(), "", counters.clone());
    let server = Server::start(host.clone(), NetOptions::default()).await;
    let url = server.ws_url();
    let unsolicited = Arc::new(AtomicUsize::new(0));

    // A light warm-up round at full width grows the allocator's pools and the
    // runtime's buffers to what that many connections need.
    round(&url, SESSIONS, 5, &unsolicited).await;
    server.wait_no_sessions().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let baseline = rss_kib();
    // Every session holds the host; none may be left behind.
    let holders = Arc::strong_count(&host);

    let started = Instant::now();
    round(&url, SESSIONS, CALLS, &unsolicited).await;
    let took = started.elapsed();
    server.wait_no_sessions().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = rss_kib();
    eventually(Duration::from_secs(10), || {
        Arc::strong_count(&host) == holders
    })
    .await;

    let calls = SESSIONS * (CALLS + 5);
    assert_eq!(
        counters.calls.load(Ordering::SeqCst),
        calls,
        "every call ran exactly once"
    );
    assert_eq!(
        unsolicited.load(Ordering::SeqCst),
        0,
        "no answer arrived twice or unmatched"
    );
    eprintln!(
        "{SESSIONS} sessions x {CALLS} calls: {:.1} s; RSS baseline {baseline} KiB, after {after} KiB",
        took.as_secs_f64()
    );
    assert!(
        after <= baseline + 64 * 1024,
        "memory grew from {baseline} KiB to {after} KiB over a round"
    );
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "liveness: {:?}",
        started.elapsed()
    );
    server.shutdown().await;
}
