//! ACMP Layer 1 between hosts against what it stands beside, in one run.
//!
//! `cargo xtask bench acmp` runs it in release mode. The providers are
//! children of this program (`--serve provider TOOL`): a host with an `echo`
//! tool and two tools that answer after 10 ms (`step_a`, `step_b`), served
//! over MCP on stdin/stdout with `[acmp.provider]` offering `echo` and `TOOL`
//! — the backend `a2e serve --mcp-stdio` builds, the same code.
//!
//! - `one_task`: one task (`echo`) through the buyer — a one-task DAG run by
//!   the orchestrator over the pool of remote providers, `acmp/invoke` on MCP
//!   stdio — against a direct rmcp `tools/call` of `echo` to a process of the
//!   same kind; beside them `acmp/invoke` alone (the remote provider without
//!   the orchestrator). Each the median of every call of [`ROUNDS`]
//!   interleaved rounds of `--calls N` (200) calls.
//! - `dag_100`: a DAG of 100 tasks (10 layers of 10, each task reading one
//!   task of the layer above) alternating `step_a` and `step_b`, over two
//!   remote providers (one offering each), against the same DAG on the
//!   buyer's own host (the local provider, the same tools in-process); the
//!   median of `--trials N` (15) interleaved runs.
//!
//! Each figure is a JSON line, the ratios last with their targets:
//!
//! ```text
//! {"ratio":"one_task_vs_direct_rmcp","value":1.12,"target":"<= 1.3","met":true}
//! ```

#[path = "../src/allocator.rs"]
mod allocator;

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2e_bench::args::flag;
use a2e_bench::report::{self, Target, emit, round};
use a2e_bench::stats::{median, ms, us};
use a2e_host::acmp_config::{AcmpProviderConfig, CapabilityConfig, RemoteProviderConfig};
use a2e_host::plugin::{self, CallContext, ToolOutput, ToolPlugin};
use a2e_host::{Host, HostConfig};
use a2e_proto::ToolDefinition;
use acmp_dag::remote::PoolRouter;
use acmp_dag::{
    Dag, DagStatus, Edge, Invocation, InvokeParams, Orchestrator, Payload, Provider, Task,
    TaskInput,
};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Error = Box<dyn std::error::Error>;

const ROUNDS: usize = 5;
const TOKEN: &str = "bench-token";
const LAYERS: usize = 10;
const WIDTH: usize = 10;

/// `echo` returns its arguments; `step_a` and `step_b` do after 10 ms, with
/// a `value` (1 unless they were given one).
struct Tools;

impl ToolPlugin for Tools {
    fn name(&self) -> &str {
        "bench"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![
            ToolDefinition::new("echo", "Returns its arguments"),
            ToolDefinition::new("step_a", "Returns its arguments after 10 ms"),
            ToolDefinition::new("step_b", "Returns its arguments after 10 ms"),
        ]
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        _: CallContext,
    ) -> Result<ToolOutput, plugin::Error> {
        let mut out = args;
        if tool != "echo" {
            tokio::time::sleep(Duration::from_millis(10)).await;
            // What the next layer reads (`data.value`).
            out.entry("value").or_insert(json!(1));
        }
        Ok(Value::Object(out).into())
    }
}

fn capability(tool: &str) -> CapabilityConfig {
    CapabilityConfig {
        capability: tool.to_owned(),
        tool: Some(tool.to_owned()),
        price_cu: 0.001,
        ..CapabilityConfig::default()
    }
}

/// A host with [`Tools`]; with `offers`, `[acmp.provider]` offering them.
fn host(offers: &[&str]) -> Result<Arc<Host>, Error> {
    let mut config = HostConfig {
        root: std::env::temp_dir(),
        max_parallel: 128,
        builtins: Vec::new(),
        ..HostConfig::default()
    };
    if !offers.is_empty() {
        config.acmp.provider = Some(AcmpProviderConfig {
            provider_id: Some("agent:bench:local".into()),
            token: Some(TOKEN.into()),
            capabilities: offers.iter().map(|t| capability(t)).collect(),
            ..AcmpProviderConfig::default()
        });
    }
    Ok(Host::builder(config).with_tool_plugin(Tools).build()?)
}

/// The child: `a2e serve --mcp-stdio`'s backend with ACMP beside MCP.
fn serve(tool: &str) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let host = host(&["echo", tool])?;
        let config = host.config().acmp.provider.clone().ok_or("no provider")?;
        let service = a2e_host::acmp::service(&host, &config)?;
        let extras = a2e_host::mcp::McpExtras::standard(&host);
        let backend = a2e_host::mcp::HostBackend::with_extras(host.clone(), "mcp", extras)
            .with_acmp(Arc::new(service));
        a2e_host::mcp::serve_backend_stdio(backend, CancellationToken::new()).await?;
        Ok::<_, Error>(())
    })?;
    rt.shutdown_timeout(Duration::from_millis(200));
    Ok(())
}

fn child_argv(tool: &str) -> Result<Vec<String>, Error> {
    let me = std::env::current_exe()?;
    let me = me.to_str().ok_or("the bench's path is not UTF-8")?;
    Ok(vec![
        me.into(),
        "--serve".into(),
        "provider".into(),
        tool.into(),
    ])
}

/// A pool of one remote provider per tool, each a child over MCP stdio.
fn pool(tools: &[&str]) -> Result<PoolRouter, Error> {
    let mut remotes = Vec::new();
    for tool in tools {
        let config = RemoteProviderConfig {
            name: (*tool).to_owned(),
            command: child_argv(tool)?,
            token: Some(TOKEN.into()),
            ..RemoteProviderConfig::default()
        };
        remotes.push(Arc::new(a2e_host::acmp::remote_provider(&config)?));
    }
    Ok(PoolRouter::new(remotes))
}

fn echo_args() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("text".into(), json!("one two three four five"));
    m
}

/// A one-task DAG; task ids are unique (a provider answers a task id it has
/// seen with the stored outcome).
fn one_task_dag(round: usize, i: usize) -> Dag {
    let mut dag = Dag::new(format!("dag_one_{round}_{i}"));
    dag.tasks.push(Task::new(
        format!("task_echo_{round}_{i}"),
        "echo",
        TaskInput::literal("json", Value::Object(echo_args())),
    ));
    dag
}

fn layered_dag(i: usize, side: &str) -> Dag {
    let id = |n: usize| format!("task_{side}_{i}_{n:03}");
    let mut dag = Dag::new(format!("dag_layered_{i}"));
    for n in 0..LAYERS * WIDTH {
        let capability = if n % 2 == 0 { "step_a" } else { "step_b" };
        let input = if n < WIDTH {
            TaskInput::literal("json", json!({"value": n}))
        } else {
            // One task of the layer above, a different one for each position.
            let source = n - WIDTH - n % WIDTH + (n * 7 + 3) % WIDTH;
            dag.edges.push(Edge::new(id(source), id(n)));
            TaskInput::from_task_field(id(source), "data.value")
        };
        dag.tasks.push(Task::new(id(n), capability, input));
    }
    dag
}

async fn run_ok(orchestrator: &Orchestrator, dag: Dag) -> Result<Duration, Error> {
    let started = Instant::now();
    let outcome = orchestrator.run(dag).await?;
    let took = started.elapsed();
    if outcome.status != DagStatus::Completed {
        let errors: Vec<String> = outcome
            .tasks
            .iter()
            .filter_map(|t| t.error().map(ToString::to_string))
            .collect();
        return Err(format!("a DAG run ended {:?}: {errors:?}", outcome.status).into());
    }
    Ok(took)
}

fn ratio(name: &str, value: f64, target: f64) {
    emit(&report::ratio(name, value, Some(Target::AtMost(target))));
}

async fn one_task(calls: usize) -> Result<(), Error> {
    let mut cmd = tokio::process::Command::new(&child_argv("step_a")?[0]);
    cmd.args(&child_argv("step_a")?[1..])
        .env(a2e_host::acmp::stdio::BEARER_ENV, TOKEN);
    let direct = ().serve(TokioChildProcess::new(cmd)?).await?;
    let pool = pool(&["step_a"])?;
    if let Some(e) = pool.connect_all().await.into_iter().next() {
        return Err(e.into());
    }
    let remote = pool.remotes()[0].clone();
    let orchestrator = Orchestrator::new(pool);

    let (mut direct_us, mut task_us, mut invoke_us) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS + 1 {
        let warm_up = round == 0;
        for i in 0..calls {
            let started = Instant::now();
            let r = direct
                .call_tool(CallToolRequestParams::new("echo").with_arguments(echo_args()))
                .await?;
            let took = started.elapsed();
            if r.is_error == Some(true) {
                return Err("the direct call failed".into());
            }
            let dag = run_ok(&orchestrator, one_task_dag(round, i)).await?;
            let task = Task::new(
                format!("task_invoke_{round}_{i}"),
                "echo",
                TaskInput::literal("json", json!(null)),
            );
            let input = Payload::json(Value::Object(echo_args()));
            let params = InvokeParams::for_task(&task, Some(input));
            let started = Instant::now();
            remote.invoke(Invocation::new(params)).await?;
            let invoke = started.elapsed();
            if !warm_up {
                direct_us.push(us(took));
                task_us.push(us(dag));
                invoke_us.push(us(invoke));
            }
        }
    }
    let direct_med = median(&mut direct_us);
    let task_med = median(&mut task_us);
    let invoke_med = median(&mut invoke_us);
    let n = direct_us.len();
    for (figure, value) in [
        ("one_task_direct_rmcp_call", direct_med),
        ("one_task_acmp_invoke", invoke_med),
        ("one_task_dag_over_acmp", task_med),
    ] {
        emit(
            &json!({"figure": figure, "us": round(value, 1), "calls": n, "transport": "mcp-stdio"}),
        );
    }
    direct.cancel().await?;
    ratio(
        "one_task_invoke_vs_direct_rmcp",
        invoke_med / direct_med,
        1.3,
    );
    ratio("one_task_vs_direct_rmcp", task_med / direct_med, 1.3);
    Ok(())
}

async fn dag_100(trials: usize) -> Result<(), Error> {
    let pool = pool(&["step_a", "step_b"])?;
    if let Some(e) = pool.connect_all().await.into_iter().next() {
        return Err(e.into());
    }
    let remote = Orchestrator::new(pool);
    let local = Orchestrator::new(a2e_host::acmp::HostRouter::new(host(&[])?, ""));
    let (mut remote_ms, mut local_ms) = (Vec::new(), Vec::new());
    for trial in 0..trials + 1 {
        let r = run_ok(&remote, layered_dag(trial, "remote")).await?;
        let l = run_ok(&local, layered_dag(trial, "local")).await?;
        if trial > 0 {
            remote_ms.push(ms(r));
            local_ms.push(ms(l));
        }
    }
    let remote_med = median(&mut remote_ms);
    let local_med = median(&mut local_ms);
    let floor = (LAYERS * 10) as f64;
    for (figure, value) in [
        ("dag_100_two_remote_providers", remote_med),
        ("dag_100_local_provider", local_med),
    ] {
        emit(
            &json!({"figure": figure, "ms": round(value, 2), "tasks": LAYERS * WIDTH,
               "layers": LAYERS, "tool_ms": 10, "sleep_floor_ms": floor, "trials": trials}),
        );
    }
    ratio("dag_100_remote_vs_local", remote_med / local_med, 1.3);
    Ok(())
}

fn main() -> Result<(), Error> {
    allocator::tune();
    let args: Vec<String> = std::env::args().collect();
    if flag::<String>(&args, "--serve").as_deref() == Some("provider") {
        let at = args.iter().position(|a| a == "--serve").unwrap_or(0);
        return serve(args.get(at + 2).map_or("step_a", String::as_str));
    }
    let calls = flag(&args, "--calls").unwrap_or(200);
    let trials = flag(&args, "--trials").unwrap_or(15);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        one_task(calls).await?;
        dag_100(trials).await
    })?;
    rt.shutdown_timeout(Duration::from_millis(500));
    Ok(())
}
