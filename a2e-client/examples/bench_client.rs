//! Round-trip tool calls per second and p50/p99 latency of a trivial echo
//! tool, over stdio and WebSocket (and HTTP+SSE), sequentially and with 64
//! calls in flight, as JSON lines:
//!
//! ```text
//! {"transport":"ws","mode":"inflight64","calls":20000,"calls_per_sec":…,"p50_us":…,"p99_us":…}
//! ```
//!
//! `cargo xtask bench transport` runs it in release mode. The host runs in
//! this process (an echo tool plugin); for stdio this program spawns itself
//! with `--serve-stdio` and talks to that child over its pipes.
//! `--calls N` sets the calls per sequential run (ten times that in flight).

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2e_bench::args::flag;
use a2e_bench::report::emit;
use a2e_bench::stats::Calls;
use a2e_client::Client;
use a2e_host::plugin::{self, CallContext, ToolOutput, ToolPlugin};
use a2e_host::transport::net::{self, NetOptions, NetState, Protocols};
use a2e_host::{Host, HostConfig};
use a2e_proto::ToolDefinition;
use futures::StreamExt;
use serde_json::{Map, Value, json};

/// Returns its arguments.
struct Echo;

impl ToolPlugin for Echo {
    fn name(&self) -> &str {
        "bench"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![ToolDefinition::new("echo", "Returns its arguments")]
    }

    async fn call(
        &self,
        _: &str,
        args: Map<String, Value>,
        _: CallContext,
    ) -> Result<ToolOutput, plugin::Error> {
        Ok(Value::Object(args).into())
    }
}

fn host() -> Result<Arc<Host>, Box<dyn std::error::Error>> {
    let config = HostConfig {
        root: std::env::temp_dir(),
        max_parallel: 64,
        builtins: Vec::new(),
        ..HostConfig::default()
    };
    Ok(Host::builder(config).with_tool_plugin(Echo).build()?)
}

const IN_FLIGHT: usize = 64;

/// Runs `calls` echo calls with `in_flight` at once; prints one JSON line.
async fn measure(client: &Client, transport: &str, mode: &str, calls: usize, in_flight: usize) {
    // Warm up the connection and both sides' buffers.
    for i in 0..100 {
        let _ = client.tools().call("echo", json!({"i": i})).await;
    }
    let started = Instant::now();
    let latencies: Vec<Duration> = futures::stream::iter(0..calls)
        .map(|i| {
            let client = client.clone();
            async move {
                let t = Instant::now();
                let result = client.tools().call("echo", json!({"i": i})).await;
                assert!(result.is_ok_and(|r| r.data["i"] == i), "echo {i} failed");
                t.elapsed()
            }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    let run = Calls::of(started.elapsed(), latencies);
    emit(&json!({
        "transport": transport,
        "mode": mode,
        "calls": calls,
        "calls_per_sec": run.per_sec.round(),
        "p50_us": run.p50_us,
        "p99_us": run.p99_us,
    }));
}

async fn run_modes(client: &Client, transport: &str, calls: usize) {
    measure(client, transport, "sequential", calls, 1).await;
    measure(client, transport, "inflight64", calls * 10, IN_FLIGHT).await;
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--serve-stdio") {
        a2e_host::transport::stdio::serve_stdio(host()?).await;
        return Ok(());
    }
    let calls: usize = flag(&args, "--calls").unwrap_or(2000);

    // stdio: this program, as a child host.
    let mut child = tokio::process::Command::new(std::env::current_exe()?);
    child.arg("--serve-stdio");
    let client = Client::connect_stdio(child).await?;
    run_modes(&client, "stdio", calls).await;
    client.close().await;

    // WebSocket and HTTP+SSE: an in-process server on loopback.
    let host = host()?;
    let listener = net::bind("127.0.0.1:0", &host).await?;
    let addr = listener.local_addr()?;
    let state = NetState::new(
        host,
        NetOptions {
            rate_per_sec: 1e9,
            burst: 1e9,
            ..NetOptions::default()
        },
    );
    let router = a2e_host::compose::router(
        state.clone(),
        Protocols {
            ws: true,
            http: true,
        },
    );
    let server = tokio::spawn(net::serve(listener, router, state.clone()));

    let client = Client::connect_ws(&format!("ws://{addr}/")).await?;
    run_modes(&client, "ws", calls).await;
    client.close().await;

    let client = Client::connect_http(&format!("http://{addr}/")).await?;
    run_modes(&client, "http", calls).await;
    client.close().await;

    state.shutdown_token().cancel();
    let _ = server.await;
    Ok(())
}
