//! An OTLP endpoint that accepts connections and never answers: spans beyond
//! the bounded queue are dropped (memory stays flat while 100 MB of span
//! content goes by), calls go on, and one warning says so.
//!
//! One test in its own process: it reads the process's resident memory and
//! installs the global subscriber (the export thread logs through it).

use std::io::Read;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2e_telemetry::{BatchSettings, Exporter, Telemetry, TelemetryConfig};
use serde_json::json;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

/// Warnings of this crate, as logged.
struct Warnings(Arc<Mutex<Vec<String>>>);

impl<S: Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() == tracing::Level::WARN && meta.target().starts_with("a2e_telemetry") {
            let mut text = String::new();
            event.record(
                &mut |field: &tracing::field::Field, value: &dyn std::fmt::Debug| {
                    text.push_str(&format!("{}={value:?} ", field.name()));
                },
            );
            self.0.lock().unwrap().push(text);
        }
    }
}

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let mut status = String::new();
    std::fs::File::open("/proc/self/status")
        .unwrap()
        .read_to_string(&mut status)
        .unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Accepts connections and holds them without reading or answering.
struct BlackHole {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BlackHole {
    fn start() -> BlackHole {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        BlackHole {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_endpoint_drops_spans_in_a_bounded_queue_and_warns_once() {
    let hole = BlackHole::start();
    let endpoint = format!("http://{}", hole.addr);
    let config = TelemetryConfig {
        endpoint: Some(endpoint.clone()),
        timeout_ms: 200,
        capture_content: true,
        metrics_exporter: Exporter::None,
        batch: BatchSettings {
            max_queue_size: 256,
            max_export_batch_size: 64,
            scheduled_delay_ms: 20,
        },
        ..TelemetryConfig::default()
    };
    let (telemetry, guard) = Telemetry::init(&config).unwrap();
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry()
        .with(telemetry.layer())
        .with(Warnings(warnings.clone()));
    tracing::subscriber::set_global_default(subscriber).unwrap();

    // 25,000 calls, each span carrying 4 KiB of content: 100 MB if kept (with a queue
    // of a million spans this test sees over 100 MiB more resident memory).
    let payload = "x".repeat(4096);
    let calls = 25_000;
    let before = rss();
    for i in 0..calls {
        let op = telemetry.tool("echo").node("n").start();
        op.arguments(&json!({"blob": payload, "i": i}));
        op.result(&json!({"ok": true}));
    }
    let grown = rss().saturating_sub(before);
    assert!(
        grown < 32 * 1024 * 1024,
        "resident memory grew by {} MiB over {calls} spans",
        grown / (1024 * 1024)
    );

    // Exports keep failing; one warning, naming the endpoint.
    let deadline = Instant::now() + Duration::from_secs(60);
    while guard.export_stats().failed < 2 {
        assert!(
            Instant::now() < deadline,
            "exports did not fail: {:?}",
            guard.export_stats()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stats = guard.export_stats();
    assert_eq!(stats.exported, 0);
    assert_eq!(stats.warnings, 1, "{stats:?}");
    let logged = warnings.lock().unwrap().clone();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(logged[0].contains(&endpoint), "{logged:?}");
    assert!(logged[0].contains("traces"), "{logged:?}");

    tokio::task::spawn_blocking(move || drop(guard))
        .await
        .unwrap();
    drop(hole);
}
