//! An A2A call of a skill against a direct call of the same skill, and
//! against the floor under it, in one run.
//!
//! `cargo xtask bench a2a` runs it in release mode. One host in this process,
//! built as `a2e serve` builds it (the run journal on SQLite, `sync =
//! "normal"`, in a temporary root), with a chain skill `stats` (one
//! `text_stats` node); its A2A agent served on a loopback port by this
//! process, and beside it a route that answers the same body with a fixed
//! task of the same size (the floor: HTTP/1.1 on loopback, JSON both ways).
//!
//! - `direct`: `Host::call_skill` of `stats` in-process (no task, no HTTP);
//! - `a2a`: JSON-RPC `SendMessage` (waiting for the task's end) over a
//!   kept-alive connection: the message checked, the task journaled (created,
//!   then finished), the skill called, the task read back and answered;
//! - `floor`: the same request to the fixed route.
//!
//! Each figure is the median per call of [`ROUNDS`] interleaved rounds of
//! `--calls N` sequential calls; the ratios (`a2a_vs_direct`,
//! `a2a_vs_floor`) last. Figures: BENCHMARKS.md.

#[path = "../src/allocator.rs"]
mod allocator;

use std::sync::Arc;
use std::time::Instant;

use a2e_bench::args::flag;
use a2e_bench::report::{emit, ratio, round};
use a2e_bench::stats::{interleaved, median_of, us};
use a2e_host::{CallOptions, Compose, HostBuilder, HostConfig};
use a2e_proto::SkillCallRequest;
use serde_json::{Value, json};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Error = Box<dyn std::error::Error>;

const ROUNDS: usize = 15;
const WARM_UPS: usize = 2;

const SKILL: &str = "---\nname: stats\ndescription: Text statistics\n---\nCounts.\n\n```chain\n\
    {\"entry_node\": \"s\", \"nodes\": [{\"node_id\": \"s\", \"kind\": \"tool\", \
    \"name\": \"text_stats\", \"input_map\": {\"text\": \"input.text\"}}]}\n```\n";

fn send_body(i: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {"message": {
        "messageId": format!("m-{i}"), "role": "ROLE_USER",
        "parts": [{"data": {"text": "one two three"}}], "metadata": {"skill": "stats"}}}})
}

fn main() -> Result<(), Error> {
    allocator::tune();
    let args: Vec<String> = std::env::args().collect();
    let calls: usize = flag(&args, "--calls").unwrap_or(200);
    let root = tempfile::tempdir()?;
    std::fs::create_dir_all(root.path().join("skills"))?;
    std::fs::write(root.path().join("skills/stats.md"), SKILL)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut config = HostConfig::from_toml("[journal]\nsync = \"normal\"\n")?;
    config.root = root.path().to_path_buf();
    let host = rt
        .block_on(HostBuilder::from_config(config, a2e_telemetry::Telemetry::disabled()).start())?;
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let base = format!("http://{}", listener.local_addr()?);
    let agent = a2e_host::a2a::A2aAgent::new(host.clone(), base.clone());
    // The floor: a task of the size the agent answers with, fixed (taken
    // from the agent's first answer).
    let fixed: Arc<std::sync::OnceLock<Value>> = Arc::default();
    let served = fixed.clone();
    let router = agent.router().route(
        "/floor",
        axum::routing::post(move |_: axum::body::Bytes| {
            let answer = served.get().cloned().unwrap_or(Value::Null);
            async move { axum::Json(answer) }
        }),
    );
    rt.spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let http = a2e_http::ClientOptions::default().build()?;
    let sample = rt.block_on(post(&http, &base, &send_body(0)))?;
    let _ = fixed.set(sample);
    let floor_url = format!("{base}/floor");

    let direct = || {
        let host = host.clone();
        rt.block_on(async move {
            for _ in 0..calls {
                let req = SkillCallRequest {
                    name: "stats".into(),
                    arguments: json!({"text": "one two three"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                    ..SkillCallRequest::default()
                };
                let done = host.call_skill(req, CallOptions::new()).await;
                assert!(done.is_ok_and(|r| r.success));
            }
        });
    };
    let over = |url: &str| {
        let (http, url) = (http.clone(), url.to_owned());
        rt.block_on(async move {
            for i in 0..calls {
                let answer = post(&http, &url, &send_body(i)).await;
                assert!(answer.is_ok_and(
                    |a| a["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
                ));
            }
        });
    };
    let mut direct_case = direct;
    let mut a2a_case = || over(&base);
    let mut floor_case = || over(&floor_url);
    let started = Instant::now();
    let times = interleaved(
        WARM_UPS,
        ROUNDS,
        &mut [&mut direct_case, &mut a2a_case, &mut floor_case],
    );
    let per_call: Vec<f64> = times
        .iter()
        .map(|t| median_of(t.iter().map(|d| us(*d) / calls as f64)))
        .collect();
    for (name, value) in ["direct", "a2a", "floor"].iter().zip(&per_call) {
        emit(&json!({"case": name, "us_per_call": round(*value, 1)}));
    }
    emit(&ratio("a2a_vs_direct", per_call[1] / per_call[0], None));
    emit(&ratio("a2a_vs_floor", per_call[1] / per_call[2], None));
    emit(
        &json!({"calls": calls, "rounds": ROUNDS, "seconds": round(started.elapsed().as_secs_f64(), 1)}),
    );
    Ok(())
}

async fn post(http: &reqwest::Client, url: &str, body: &Value) -> Result<Value, Error> {
    let resp = http
        .post(url)
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await?;
    Ok(serde_json::from_slice(&resp.bytes().await?)?)
}
