//! Cost of a tool call through the bridge (`McpToolkit::call`: catalog
//! lookup, schema check, progress routing, result conversion) against a
//! direct rmcp client call to the same server, in one run.
//!
//! Two transports: stdio (the server is this program, re-run with
//! `--serve-stdio`; a 2025-11-25 session, as a stdio mount starts) and
//! Streamable HTTP (a server in this process on 127.0.0.1; MCP 2026-07-28,
//! stateless, which the bridge negotiates with it and the direct client
//! speaks too). Prints JSON lines: per transport the median µs per call of
//! each side over alternating trials of short batches, the median of the
//! trials' bridge/direct ratios (its target is in BENCHMARKS.md), and the
//! best batches' ratio.
//!
//! ```text
//! cargo run --release -p a2e-mcp --example bench_mcp [CALLS_PER_TRIAL]
//! ```

#[path = "demo/backend.rs"]
mod backend;

use std::sync::Arc;
use std::time::Instant;

use a2e_bench::report::{emit, round};
use a2e_bench::stats::{median, median_of, min, us};
use a2e_mcp::{McpCallOptions, McpServerConfig, McpToolkit};
use rmcp::model::CallToolRequestParams;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

const TRIALS: usize = 31;
const WARMUP: usize = 200;

type Direct = RunningService<RoleClient, ()>;

fn arguments() -> Map<String, Value> {
    json!({"name": "bench", "style": "plain"})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

async fn direct_calls(client: &Direct, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    for _ in 0..n {
        let r = client
            .call_tool(CallToolRequestParams::new("greet").with_arguments(arguments()))
            .await?;
        if r.is_error == Some(true) {
            return Err("direct call failed".into());
        }
    }
    Ok(())
}

async fn bridge_calls(kit: &McpToolkit, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    for _ in 0..n {
        let out = kit
            .call("greet", arguments(), McpCallOptions::default())
            .await?;
        if out.is_error {
            return Err("bridge call failed".into());
        }
    }
    Ok(())
}

async fn compare(
    transport: &str,
    direct: &Direct,
    kit: &McpToolkit,
    calls: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    direct_calls(direct, WARMUP).await?;
    bridge_calls(kit, WARMUP).await?;
    let (mut d, mut b) = (Vec::new(), Vec::new());
    for trial in 0..TRIALS {
        // Short batches, alternating which side goes first, so load from
        // elsewhere on the machine falls on both sides alike.
        for side in [trial % 2, 1 - trial % 2] {
            let start = Instant::now();
            if side == 0 {
                direct_calls(direct, calls).await?;
                d.push(us(start.elapsed()) / calls as f64);
            } else {
                bridge_calls(kit, calls).await?;
                b.push(us(start.elapsed()) / calls as f64);
            }
        }
    }
    // Each trial's pair gives one ratio; their median is the figure.
    let ratio = median_of(b.iter().zip(&d).map(|(b, d)| b / d));
    let (best_d, best_b) = (min(&d), min(&b));
    let (direct_us, bridge_us) = (median(&mut d), median(&mut b));
    emit(&json!({
        "bench": "mcp",
        "transport": transport,
        "calls_per_trial": calls,
        "trials": TRIALS,
        "direct_rmcp_us_per_call": round(direct_us, 1),
        "bridge_us_per_call": round(bridge_us, 1),
        "ratio_bridge_over_direct": round(ratio, 3),
        "best_direct_us_per_call": round(best_d, 1),
        "best_bridge_us_per_call": round(best_b, 1),
        "ratio_of_best": round(best_b / best_d, 3),
    }));
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let demo = Arc::new(backend::DemoBackend::default());
    if args.first().map(String::as_str) == Some("--serve-stdio") {
        a2e_mcp::serve_stdio(demo, "bench", CancellationToken::new()).await?;
        return Ok(());
    }
    let calls: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let me = std::env::current_exe()?;
    let me = me.to_str().ok_or("the bench's path is not UTF-8")?;

    // stdio: two server processes of the same program.
    let mut cmd = tokio::process::Command::new(me);
    cmd.arg("--serve-stdio");
    let direct = ().serve(TokioChildProcess::new(cmd)?).await?;
    let kit = McpToolkit::new(McpServerConfig::stdio("bench", me, &["--serve-stdio"]))?;
    kit.start().await?;
    compare("stdio", &direct, &kit, calls).await?;
    direct.cancel().await?;
    kit.shutdown().await;

    // Streamable HTTP: one server in this process, two clients.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let stop = CancellationToken::new();
    tokio::spawn(a2e_mcp::serve_http(
        demo,
        "bench",
        listener,
        None,
        stop.clone(),
    ));
    // The direct client speaks the revision the bridge negotiates with this
    // server (2026-07-28, stateless), so that both pay the same server side.
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let direct = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::with_client(
                a2e_mcp::http_client()?,
                StreamableHttpClientTransportConfig::with_uri(url.as_str()),
            ),
            lifecycle,
        )
        .await?;
    let kit = McpToolkit::new(McpServerConfig::http("bench", &url))?;
    kit.start().await?;
    compare("streamable_http", &direct, &kit, calls).await?;
    direct.cancel().await?;
    kit.shutdown().await;
    stop.cancel();
    Ok(())
}
