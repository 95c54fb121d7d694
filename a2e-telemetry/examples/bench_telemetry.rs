//! What telemetry costs a call: a span and a metric update per call, with
//! telemetry off and on (spans batched and exported over OTLP/HTTP to a
//! receiver in this process, metrics kept for `/metrics`), against the same
//! calls without instrumentation, measured in the same run.
//!
//! `cargo run --release -p a2e-telemetry --example bench_telemetry` prints
//! one JSON line per case:
//! * `tool_call`: per call, an `execute_tool` span and a call-duration
//!   metric around the work of a small tool call (its arguments parsed, its
//!   result serialized: about what a built-in tool does).
//! * `chain_node`: per node, an `execute_tool` span under a chain's
//!   `invoke_workflow` span and a node-duration metric, the same work.
//!
//! `ns` is the time per call (median of nine trials of 20,000 calls),
//! `peer_ns` the same work without instrumentation, `ratio` ours / peer,
//! `added_ns` the difference.

use std::hint::black_box;
use std::time::Duration;

use a2e_bench::report::{emit, round};
use a2e_bench::stats::{interleaved, median_of, ns};
use a2e_telemetry::metrics::OK;
use a2e_telemetry::{CallKind, Parent, Telemetry, TelemetryConfig, WorkflowKind};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

const TRIALS: usize = 9;
const CALLS: usize = 20_000;

const ARGS: &str = r#"{"path": "/data/input.txt", "max_bytes": 4096, "encoding": "utf-8"}"#;

/// The work of one small call.
fn work(i: usize) -> String {
    let args: Value = serde_json::from_str(ARGS).unwrap_or(Value::Null);
    serde_json::to_string(&json!({"ok": true, "n": i, "path": args["path"]})).unwrap_or_default()
}

fn tool_call(t: &Telemetry, i: usize) {
    let timer = t.metrics().timer();
    let op = t.tool("read_file").session("s1").start();
    let _entered = op.span().enter();
    black_box(work(i));
    timer.call(CallKind::Tool, "read_file", OK);
}

fn chain_nodes(t: &Telemetry, nodes: usize) {
    let chain = t
        .workflow(WorkflowKind::Chain, None)
        .chain("c1")
        .session("s1")
        .start();
    for i in 0..nodes {
        let timer = t.metrics().timer();
        let op = t
            .tool("read_file")
            .node("n")
            .chain("c1")
            .parent(Parent::Span(chain.span()))
            .start();
        let _entered = op.span().enter();
        black_box(work(i));
        timer.node("tool", OK);
    }
}

fn plain(calls: usize) {
    for i in 0..calls {
        black_box(work(i));
    }
}

/// Nanoseconds per call of each case (each makes `CALLS` calls): one warm-up
/// round, then `TRIALS` rounds running every case once in turn, so that a
/// busy machine weighs on all of them alike; the median of each.
fn measure(cases: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    interleaved(1, TRIALS, cases)
        .into_iter()
        .map(|times| median_of(times.into_iter().map(|t| ns(t) / CALLS as f64)))
        .collect()
}

/// An OTLP/HTTP receiver that reads and discards, on a thread of its own.
fn receiver() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let app = axum::Router::new().fallback(|body: axum::body::Bytes| async move {
                    black_box(body.len());
                    ""
                });
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
    });
    format!("http://{addr}")
}

fn report(case: &str, mode: &str, ns: f64, peer: f64) {
    emit(&json!({
        "bench": "telemetry",
        "case": case,
        "telemetry": mode,
        "ns": round(ns, 1),
        "peer_ns": round(peer, 1),
        "added_ns": round(ns - peer, 1),
        "ratio": round(ns / peer, 3),
    }));
}

fn main() {
    let (off, _off_guard) = Telemetry::init(&TelemetryConfig::default()).unwrap();
    let config = TelemetryConfig {
        endpoint: Some(receiver()),
        metrics_interval_ms: 1000,
        ..TelemetryConfig::default()
    };
    let (on, on_guard) = Telemetry::init(&config).unwrap();
    let metrics_only = TelemetryConfig {
        enabled: true,
        traces_exporter: a2e_telemetry::Exporter::None,
        metrics_exporter: a2e_telemetry::Exporter::None,
        ..TelemetryConfig::default()
    };
    let (metered, _metered_guard) = Telemetry::init(&metrics_only).unwrap();
    let subscriber = tracing_subscriber::registry().with(on.layer());
    let _default = tracing::subscriber::set_default(subscriber);

    let times = measure(&mut [
        &mut || plain(CALLS),
        &mut || (0..CALLS).for_each(|i| tool_call(&off, i)),
        &mut || (0..CALLS).for_each(|i| tool_call(&on, i)),
        &mut || (0..CALLS).for_each(|i| tool_call(&metered, i)),
        &mut || chain_nodes(&off, CALLS),
        &mut || chain_nodes(&on, CALLS),
    ]);
    let [peer, call_off, call_on, call_metrics, node_off, node_on] = times[..] else {
        unreachable!("six cases");
    };
    report("tool_call", "off", call_off, peer);
    report("tool_call", "on", call_on, peer);
    report("tool_call", "metrics_only", call_metrics, peer);
    report("chain_node", "off", node_off, peer);
    report("chain_node", "on", node_on, peer);

    on_guard.flush();
    std::thread::sleep(Duration::from_millis(100));
    let stats = on_guard.export_stats();
    emit(
        &json!({"bench": "telemetry", "case": "export", "requests_exported": stats.exported,
        "requests_failed": stats.failed}),
    );
}
