//! Orchestrator overhead per task, on DAGs of no-op tasks.
//!
//! ```text
//! cargo run --release -p acmp-dag --example bench_dag [-- --tasks 10000,100000 --shapes layered,random --runs 7 --runtime multi --floor]
//! ```
//!
//! For each shape and size, builds a DAG whose tasks reference their sources like real ones
//! do (`from_task` with a `field` path, or `from_tasks` aggregations), then times validation
//! plus execution over an in-process provider that answers at once, on a 2-worker runtime.
//! Prints one JSON object per line:
//! `{"shape":…, "tasks":…, "total_ms":…, "ns_per_task":…, "peak_rss_mb":…, "cpu_ms":…}` —
//! wall time of the median of `--runs` runs, the CPU time of all threads during that run
//! (telling contention on a shared machine apart from work), and the peak resident set size
//! (VmHWM) of a process running that case alone. `--runtime current` uses a current-thread
//! runtime instead of the 2-worker one.
//!
//! Extra fields: `validate_ms` and `run_ms` split `total_ms` (same run), `allocs_per_task`
//! counts heap allocations (validation, run and the provider's own) per task, from a
//! counting global allocator; `page_faults` the minor page faults (fresh memory touched).
//!
//! `--floor` adds `floor_ns_per_task`: the same DAGs run by a bare loop doing only the work
//! any orchestrator does with these types (each reference resolved into a fresh value, the
//! invoke built, the provider's boxed future polled, every result kept), with no
//! validation, routing, states or bookkeeping. The difference is the orchestrator's own cost.
//!
//! Method as in the chain bench: the median of `--runs` runs (default 7), on mimalloc as
//! in the `a2e` binary, and a peer in the same process: `peer_ns_per_task` is the same DAG
//! (each task reading its sources) run by the `a2e-chain` engine with a runner that
//! answers at once, and `ratio` is ours over it. (dagx, the chain bench's other peer, has
//! no data-dependent inputs to express these reads.)
//!
//! Shapes: `layered` (layers of 1000 tasks, each reading one or two tasks of the layer
//! above) and `random` (each task reads one to three of the 1000 tasks before it; a few
//! percent are roots).

#![allow(unsafe_code)] // the counting allocator below

use std::alloc::{GlobalAlloc, Layout};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use a2e_bench::args::flag;
use a2e_bench::process;
use a2e_bench::report::{emit, round};
use a2e_bench::stats::{median, median_run};
use acmp_dag::path::FieldPath;
use acmp_dag::{
    CapabilityRouter, Dag, DagStatus, Edge, Invocation, InvokeParams, InvokeResult, Orchestrator,
    OrchestratorConfig, Payload, Provider, ProviderRef, SourceTasks, Task, TaskInput, ValidatedDag,
    ValidationLimits,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

/// mimalloc (the `a2e` binary's allocator), counting allocations.
struct Counting;

static INNER: mimalloc::MiMalloc = mimalloc::MiMalloc;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to mimalloc unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { INNER.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { INNER.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { INNER.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { INNER.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Answers every task at once with `{"value": 1}`.
struct NoOp;

impl Provider for NoOp {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeResult, acmp_dag::AcmpError> {
        Ok(InvokeResult::new(
            invocation.params.task_id,
            Payload::json(json!({"value": 1})),
        ))
    }
}

fn id(i: usize) -> String {
    format!("task_{i:06}")
}

fn add_task(dag: &mut Dag, i: usize, sources: &[usize]) {
    let input = match sources {
        [] => TaskInput::literal("json", json!({"value": i})),
        [one] => TaskInput::from_task_field(id(*one), "data.value"),
        many => TaskInput::from_tasks(many.iter().map(|&s| id(s))),
    };
    dag.tasks.push(Task::new(id(i), "noop", input));
    for &s in sources {
        dag.edges.push(Edge::new(id(s), id(i)));
    }
}

fn layered(tasks: usize, rng: &mut SmallRng) -> Dag {
    const WIDTH: usize = 1000;
    let mut dag = Dag::new("dag_layered");
    for i in 0..tasks {
        let sources = if i < WIDTH {
            vec![]
        } else {
            let above = i - i % WIDTH - WIDTH;
            let a = above + rng.random_range(0..WIDTH);
            let b = above + rng.random_range(0..WIDTH);
            if rng.random_range(0..2) == 0 || a == b {
                vec![a]
            } else {
                vec![a, b]
            }
        };
        add_task(&mut dag, i, &sources);
    }
    dag
}

fn random(tasks: usize, rng: &mut SmallRng) -> Dag {
    const WINDOW: usize = 1000;
    let mut dag = Dag::new("dag_random");
    for i in 0..tasks {
        let sources = if i < 16 || rng.random_range(0..100) < 3 {
            vec![]
        } else {
            let window = WINDOW.min(i);
            let mut s: Vec<usize> = (0..1 + rng.random_range(0..3))
                .map(|_| i - 1 - rng.random_range(0..window))
                .collect();
            s.sort_unstable();
            s.dedup();
            s
        };
        add_task(&mut dag, i, &sources);
    }
    dag
}

/// The work any orchestrator does per task and nothing else: inputs resolved by direct
/// indexing (the generator's ids give the positions, sources come first), the invoke built,
/// the provider's boxed future polled once, every result kept.
fn floor_run(dag: &Dag) -> Result<Vec<InvokeResult>, Box<dyn std::error::Error>> {
    let provider: ProviderRef = Arc::new(NoOp);
    let path = FieldPath::parse("data.value")?;
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut results: Vec<InvokeResult> = Vec::with_capacity(dag.tasks.len());
    for task in &dag.tasks {
        let output = |id: &str| -> Result<&Payload, Box<dyn std::error::Error>> {
            let at: usize = id.strip_prefix("task_").ok_or("bad id")?.parse()?;
            let result = results.get(at).ok_or("source not run")?;
            Ok(result.output.as_ref().ok_or("no output")?)
        };
        let input = match &task.input {
            TaskInput::Literal(literal) => literal.clone(),
            TaskInput::Reference(reference) => match &reference.source.tasks {
                SourceTasks::One(id) => {
                    let value = path.evaluate(output(id)?)?;
                    let kind = if value.is_string() { "text" } else { "json" };
                    Payload::new(kind, value.clone())
                }
                SourceTasks::Many(ids) => {
                    let mut items = Vec::with_capacity(ids.len());
                    for id in ids {
                        let out = output(id)?;
                        let mut whole = Map::with_capacity(2);
                        whole.insert("type".to_owned(), Value::String(out.kind.clone()));
                        whole.insert("data".to_owned(), out.data.clone());
                        items.push(Value::Object(whole));
                    }
                    Payload::json(Value::Array(items))
                }
            },
        };
        let invocation = Invocation::new(InvokeParams::for_task(task, Some(input)));
        let mut future = Arc::clone(&provider).invoke_owned(invocation);
        let Poll::Ready(result) = future.as_mut().poll(&mut cx) else {
            return Err("the provider did not answer at once".into());
        };
        results.push(result?);
    }
    Ok(results)
}

/// The same DAG as an A2E chain (a node per task reading its sources' outputs), run by the
/// `a2e-chain` engine with a runner that returns its input: the median wall time in seconds.
fn chain_peer(
    runtime: &tokio::runtime::Runtime,
    dag: &Dag,
    runs: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    use a2e_chain::{ChainConfig, Engine, Event, NodeCall, runner_fn};
    use a2e_proto::{ChainNode, ChainRequest, NodeKind};
    let mut nodes = Vec::with_capacity(dag.tasks.len());
    for task in &dag.tasks {
        let mut node = ChainNode::new(&task.task_id, NodeKind::TOOL, "noop");
        match &task.input {
            TaskInput::Literal(literal) => {
                node.input = literal.data.as_object().cloned().unwrap_or_default();
            }
            TaskInput::Reference(reference) => match &reference.source.tasks {
                SourceTasks::One(id) => {
                    node.input_map
                        .insert("value".into(), json!(format!("{id}.output.value")));
                }
                SourceTasks::Many(ids) => {
                    // Each source's value, not its whole output: outputs that held
                    // their inputs would grow with every level.
                    for (k, id) in ids.iter().enumerate() {
                        node.input_map
                            .insert(format!("a{k}"), json!(format!("{id}.output.value")));
                    }
                }
            },
        }
        nodes.push(node);
    }
    let req = ChainRequest {
        entry_node: dag
            .tasks
            .first()
            .map(|t| t.task_id.clone())
            .unwrap_or_default(),
        nodes,
        timeout: 3600,
        ..ChainRequest::default()
    };
    let engine = Engine::new(runner_fn(|call: NodeCall| async move {
        Ok(call.input.into_value())
    }))
    .with_config(ChainConfig {
        max_nodes: usize::MAX,
        ..ChainConfig::default()
    });
    let mut walls = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let resp = runtime.block_on(engine.run(&req, |_: &Event<'_>| {}, Default::default()))?;
        walls.push(started.elapsed().as_secs_f64());
        if !resp.success {
            return Err(format!("the chain peer failed: {:?}", resp.error).into());
        }
    }
    Ok(median(&mut walls))
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    flag(args, name).unwrap_or_else(|| default.to_owned())
}

/// The DAG of one run.
fn build(shape: &str, tasks: usize, run: usize) -> Result<Dag, Box<dyn std::error::Error>> {
    // Seeded by the run's number, so that runs compare.
    let mut rng = SmallRng::seed_from_u64(0x9E37_79B9_7F4A_7C15 ^ run as u64);
    match shape {
        "layered" => Ok(layered(tasks, &mut rng)),
        "random" => Ok(random(tasks, &mut rng)),
        other => Err(format!("unknown shape {other}").into()),
    }
}

/// One timed run.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    wall: f64,
    validate: f64,
    cpu: f64,
    allocs: u64,
    faults: u64,
}

/// Runs one case in this process and prints its line.
fn measure(
    shape: &str,
    tasks: usize,
    runs: usize,
    current_thread: bool,
    floor: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = if current_thread {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?
    };
    let router = CapabilityRouter::new().with("noop", NoOp)?;
    let orchestrator = Orchestrator::new(router).with_config(OrchestratorConfig {
        limits: ValidationLimits::unlimited(),
        ..OrchestratorConfig::default()
    });

    // Warm-up: allocator, runtime threads, code paths.
    runtime.block_on(orchestrator.run(layered(2_000, &mut SmallRng::seed_from_u64(7))))?;
    process::reset_peak_rss();

    let mut samples = Vec::with_capacity(runs);
    for run in 0..runs.max(1) {
        let dag = build(shape, tasks, run)?;
        let cpu_started = process::cpu_time();
        let allocs_started = ALLOCS.load(Ordering::Relaxed);
        let faults_started = process::minor_faults();
        let started = Instant::now();
        let valid = ValidatedDag::new(dag, &orchestrator.config().limits)?;
        let validated = started.elapsed().as_secs_f64();
        let outcome = runtime.block_on(orchestrator.execute(valid));
        let elapsed = started.elapsed().as_secs_f64();
        let cpu = process::cpu_time()
            .saturating_sub(cpu_started)
            .as_secs_f64();
        let allocs = ALLOCS.load(Ordering::Relaxed) - allocs_started;
        let faults = process::minor_faults().saturating_sub(faults_started);
        if outcome.status != DagStatus::Completed {
            return Err(format!("{shape}/{tasks}: run ended {:?}", outcome.status).into());
        }
        samples.push(Sample {
            wall: elapsed,
            validate: validated,
            cpu,
            allocs,
            faults,
        });
        drop(outcome);
    }
    let Sample {
        wall,
        validate,
        cpu,
        allocs,
        faults,
    } = median_run(&mut samples, |s| s.wall)
        .copied()
        .unwrap_or_default();
    // Before the bare loop's runs, which would add theirs.
    let peak_rss = process::peak_rss_kb() as f64 / 1024.0;
    let mut floor_walls = Vec::new();
    for run in 0..if floor { runs.max(1) } else { 0 } {
        let dag = build(shape, tasks, run)?;
        let started = Instant::now();
        let results = floor_run(&dag)?;
        floor_walls.push(started.elapsed().as_secs_f64());
        drop(results);
    }
    let mut line = json!({
        "shape": shape,
        "tasks": tasks,
        "total_ms": round(wall * 1e3, 3),
        "ns_per_task": round(wall * 1e9 / tasks as f64, 0),
        "peak_rss_mb": round(peak_rss, 1),
        "cpu_ms": round(cpu * 1e3, 3),
        "validate_ms": round(validate * 1e3, 3),
        "run_ms": round((wall - validate) * 1e3, 3),
        "allocs_per_task": round(allocs as f64 / tasks as f64, 2),
        "page_faults": faults,
    });
    if !floor_walls.is_empty() {
        let floor = median(&mut floor_walls);
        line["floor_ns_per_task"] = json!(round(floor * 1e9 / tasks as f64, 0));
    }
    let peer = chain_peer(&runtime, &build(shape, tasks, 0)?, runs)?;
    line["peer_ns_per_task"] = json!(round(peer * 1e9 / tasks as f64, 0));
    line["ratio"] = json!(round(wall / peer, 2));
    emit(&line);
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = arg(&args, "--tasks", "10000,100000")
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let shapes: Vec<String> = arg(&args, "--shapes", "layered,random")
        .split(',')
        .map(str::to_owned)
        .collect();
    let runs: usize = arg(&args, "--runs", "7").parse()?;
    let runtime = arg(&args, "--runtime", "multi");
    let current_thread = match runtime.as_str() {
        "multi" => false,
        "current" => true,
        other => return Err(format!("unknown runtime {other} (multi or current)").into()),
    };

    let floor = args.iter().any(|a| a == "--floor");

    if let [shape] = shapes.as_slice()
        && let [tasks] = sizes.as_slice()
    {
        return measure(shape, *tasks, runs, current_thread, floor);
    }
    // Several cases: one child process each, so that each peak RSS is its own.
    let exe = std::env::current_exe()?;
    for shape in &shapes {
        for tasks in &sizes {
            let status = std::process::Command::new(&exe)
                .args(["--shapes", shape, "--tasks", &tasks.to_string()])
                .args(["--runs", &runs.to_string(), "--runtime", &runtime])
                .args(floor.then_some("--floor"))
                .status()?;
            if !status.success() {
                return Err(format!("{shape}/{tasks}: {status}").into());
            }
        }
    }
    Ok(())
}
