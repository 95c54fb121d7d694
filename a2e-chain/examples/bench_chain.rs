//! Chain engine overhead: end-to-end time and memory per node for chains of
//! trivial in-process runners, with dagx running the same shape beside it.
//!
//! `cargo run --release -p a2e-chain --example bench_chain [SHAPE…]` prints
//! one JSON object per line. Each shape runs in a child process of its own so
//! that its peak RSS (VmHWM) is its own.
//!
//! Per shape: one cold run (validation included, as in every run) gives the
//! memory figure and `ns_per_node_cold` (first touch of fresh pages); then
//! `BENCH_TRIALS` trials (default 9) of `BENCH_REPS` runs each give the
//! median `ns_per_node` and the best `ns_per_node_min`. dagx runs the same
//! number of trials, and `ratio` compares the medians. `BENCH_NO_PEER` skips
//! dagx.
//!
//! The process uses mimalloc, as the `a2e` host does; both engines run on
//! it (`--features bench-system-alloc`: the system allocator). Each line
//! names the allocator it ran on.

use std::process::Command;
use std::time::{Duration, Instant};

use a2e_bench::args::env;
use a2e_bench::process;
use a2e_bench::report::{emit, round};
use a2e_bench::stats::{median, min};
use a2e_chain::{ChainConfig, Engine, Event, NodeCall, runner_fn};
use a2e_proto::{ChainNode, ChainRequest, NodeKind};
use dagx::{DagRunner, Task, task};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// The host's allocator (`--features bench-system-alloc` measures on the
/// system one; the crate README has both).
#[cfg(not(feature = "bench-system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SHAPES: &[&str] = &[
    "linear5",
    "linear10k",
    "linear100k",
    "map100k",
    "dag100k",
    "scaling",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, shape] = args.as_slice()
        && flag == "--shape"
    {
        return run_shape(shape);
    }
    let wanted: Vec<&str> = if args.is_empty() {
        SHAPES.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&format!("current_exe: {e}")));
    for shape in wanted {
        let out = Command::new(&exe)
            .args(["--shape", shape])
            .output()
            .unwrap_or_else(|e| fail(&format!("spawn: {e}")));
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("bench_chain: {msg}");
    std::process::exit(1)
}

fn node(id: String, reads: &[String]) -> ChainNode {
    let mut n = ChainNode::new(&id, NodeKind::TOOL, "add");
    for (k, r) in reads.iter().enumerate() {
        n.input_map
            .insert(format!("a{k}"), json!(format!("{r}.output")));
    }
    n
}

fn linear(n: usize) -> ChainRequest {
    let edges: Vec<Vec<usize>> = (0..n)
        .map(|i| i.checked_sub(1).into_iter().collect())
        .collect();
    dag_shape(&edges)
}

fn map_shape(items: usize) -> ChainRequest {
    let mut m = ChainNode::new("m", NodeKind::MAP, "");
    m.items_path = "input.items".into();
    m.map_node = "t".into();
    let mut t = ChainNode::new("t", NodeKind::TOOL, "add");
    t.input_map.insert("a0".into(), json!("item"));
    let mut input = Map::new();
    input.insert(
        "items".into(),
        Value::from((0..items as i64).collect::<Vec<_>>()),
    );
    ChainRequest {
        nodes: vec![m, t],
        entry_node: "m".into(),
        initial_input: input,
        ..ChainRequest::default()
    }
}

/// Node i reads up to three random earlier nodes (node 0 reads none).
fn dag_edges(n: usize) -> Vec<Vec<usize>> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|i| {
            let mut reads: Vec<usize> = (0..i.min(3))
                .map(|_| (next() % i as u64) as usize)
                .collect();
            reads.sort_unstable();
            reads.dedup();
            reads
        })
        .collect()
}

/// Node `i` reads the outputs of the nodes in `edges[i]`; node 0 gets a
/// static input.
fn dag_shape(edges: &[Vec<usize>]) -> ChainRequest {
    let nodes = edges
        .iter()
        .enumerate()
        .map(|(i, reads)| {
            let reads: Vec<String> = reads.iter().map(|r| format!("n{r}")).collect();
            let mut nd = node(format!("n{i}"), &reads);
            if i == 0 {
                nd.input.insert("a0".into(), json!(1));
            }
            nd
        })
        .collect();
    ChainRequest {
        nodes,
        entry_node: "n0".into(),
        ..ChainRequest::default()
    }
}

fn engine() -> Engine {
    // The trivial runner: the sum of its numeric inputs, plus one.
    let runner = runner_fn(|call: NodeCall| async move {
        let sum: i64 = call.input.values().iter().filter_map(Value::as_i64).sum();
        Ok(Value::from(sum.wrapping_add(1) % 1_000_000_007))
    });
    Engine::new(runner).with_config(ChainConfig::with_limits(1_000_000))
}

/// What one trial (a series of `reps` runs) gives.
struct Trial {
    total: Duration,
    validate: Duration,
    cpu: Duration,
    events: u64,
    nodes_run: usize,
}

/// Runs `req` `reps` times (validation included).
async fn ours(engine: &Engine, req: &ChainRequest, reps: usize) -> Trial {
    let mut events = 0u64;
    let mut nodes_run = 0;
    let mut validate = Duration::ZERO;
    let cpu0 = process::cpu_time();
    let start = Instant::now();
    for _ in 0..reps {
        events = 0;
        let v0 = Instant::now();
        let plan = engine
            .validate(req)
            .unwrap_or_else(|e| fail(&e.to_string()));
        validate += v0.elapsed();
        let resp = engine
            .run_plan(&plan, |_: &Event<'_>| events += 1, CancellationToken::new())
            .await;
        if !resp.success {
            fail(&format!("chain failed: {:?}", resp.error));
        }
        nodes_run = resp.nodes_run as usize;
    }
    Trial {
        total: start.elapsed(),
        validate,
        cpu: process::cpu_time().saturating_sub(cpu0),
        events,
        nodes_run,
    }
}

struct Seed(i64);

#[task]
impl Seed {
    async fn run(&self) -> i64 {
        self.0
    }
}

struct Add1;

#[task]
impl Add1 {
    async fn run(a: &i64) -> i64 {
        (a + 1) % 1_000_000_007
    }
}

struct Add2;

#[task]
impl Add2 {
    async fn run(a: &i64, b: &i64) -> i64 {
        (a + b + 1) % 1_000_000_007
    }
}

struct Add3;

#[task]
impl Add3 {
    async fn run(a: &i64, b: &i64, c: &i64) -> i64 {
        (a + b + c + 1) % 1_000_000_007
    }
}

async fn dagx_run(dag: DagRunner) {
    dag.run(|fut| {
        tokio::spawn(fut);
    })
    .await
    .unwrap_or_else(|e| fail(&format!("dagx: {e}")));
}

/// The same shape in dagx: build and run, `reps` times.
async fn peer(shape: &str, n: usize, reps: usize, edges: &[Vec<usize>]) -> Duration {
    let start = Instant::now();
    for _ in 0..reps {
        let dag = DagRunner::new();
        match shape {
            "map" => {
                let src = dag.add_task(Seed(1));
                for _ in 0..n {
                    dag.add_task(Add1).depends_on(&src);
                }
            }
            "dag" => {
                let mut handles = Vec::with_capacity(n);
                for reads in edges {
                    let h = match reads.as_slice() {
                        [] => dag.add_task(Seed(1)).into(),
                        [a] => dag.add_task(Add1).depends_on(handles[*a]),
                        [a, b] => dag.add_task(Add2).depends_on((&handles[*a], &handles[*b])),
                        [a, b, c, ..] => dag.add_task(Add3).depends_on((
                            &handles[*a],
                            &handles[*b],
                            &handles[*c],
                        )),
                    };
                    handles.push(h);
                }
            }
            _ => {
                let mut prev = dag.add_task(Seed(1)).into();
                for _ in 1..n {
                    prev = dag.add_task(Add1).depends_on(prev);
                }
            }
        }
        dagx_run(dag).await;
    }
    start.elapsed()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("runtime: {e}")))
}

/// How the total time grows from 10,000 to 100,000 nodes: linear chains of
/// both sizes run in alternation, one chain per sample, so that both see the
/// same machine (this one is shared and its speed drifts); the ratio of the
/// medians is the figure.
fn run_scaling() {
    let rt = runtime();
    let trials = env::<usize>("BENCH_TRIALS").unwrap_or(9).max(1) * 2 + 1;
    let engine = engine();
    let small = linear(10_000);
    let large = linear(100_000);
    let (mut t_small, mut t_large) = rt.block_on(async move {
        tokio::spawn(async move {
            let mut t_small = Vec::with_capacity(trials);
            let mut t_large = Vec::with_capacity(trials);
            // Warm-up: one of each.
            ours(&engine, &small, 1).await;
            ours(&engine, &large, 1).await;
            for _ in 0..trials {
                t_small.push(ours(&engine, &small, 1).await.total.as_nanos() as f64);
                t_large.push(ours(&engine, &large, 1).await.total.as_nanos() as f64);
            }
            (t_small, t_large)
        })
        .await
        .unwrap_or_else(|e| fail(&format!("join: {e}")))
    });
    let small_ms = median(&mut t_small) / 1e6;
    let large_ms = median(&mut t_large) / 1e6;
    let line = json!({
        "shape": "scaling",
        "alloc": if cfg!(feature = "bench-system-alloc") { "system" } else { "mimalloc" },
        "nodes": 100_000,
        "vs_nodes": 10_000,
        "samples": trials,
        "total_ms": round(large_ms, 3),
        "vs_total_ms": round(small_ms, 3),
        "ns_per_node": round(large_ms * 1e6 / 100_000.0, 1),
        "vs_ns_per_node": round(small_ms * 1e6 / 10_000.0, 1),
        "time_ratio": round(large_ms / small_ms, 2),
    });
    emit(&line);
}

fn run_shape(shape: &str) {
    if shape == "scaling" {
        return run_scaling();
    }
    let rt = runtime();
    let (kind, n, reps) = match shape {
        "linear5" => ("linear", 5, 20_000),
        "linear10k" => ("linear", 10_000, 5),
        "linear100k" => ("linear", 100_000, 1),
        "map100k" => ("map", 100_000, 1),
        "dag10k" => ("dag", 10_000, 5),
        "dag100k" => ("dag", 100_000, 1),
        other => fail(&format!("unknown shape {other}")),
    };
    let reps = env::<usize>("BENCH_REPS").unwrap_or(reps);
    let trials = env::<usize>("BENCH_TRIALS").unwrap_or(9).max(1);
    let edges = if kind == "dag" {
        dag_edges(n)
    } else {
        Vec::new()
    };
    let engine = engine();

    // Warm up (allocator, runtime threads) on a small instance.
    let warm = match kind {
        "map" => map_shape(1000),
        "dag" => dag_shape(&dag_edges(1000)),
        _ => linear(1000),
    };
    rt.block_on(async {
        let engine = engine.clone();
        let warm = warm.clone();
        tokio::spawn(async move { ours(&engine, &warm, 3).await })
            .await
            .ok()
    });
    drop(warm);

    let before_build = process::rss_kb();
    let req = match kind {
        "map" => map_shape(n),
        "dag" => dag_shape(&edges),
        _ => linear(n),
    };
    let after_build = process::rss_kb();
    process::reset_peak_rss();
    let base = process::rss_kb();
    // The request moves into the task (a clone would count as engine
    // memory). One cold run first, alone, for the memory figure: later runs
    // reuse what the allocator kept (and may run on the other worker
    // thread, with a heap of its own). dagx runs after ours, not in
    // alternation: its tasks churn the heap and the caches, which slowed the
    // next run of either engine by up to half.
    let with_peer = std::env::var_os("BENCH_NO_PEER").is_none();
    let (cold, first_peak, results, req) = rt.block_on({
        let engine = engine.clone();
        async move {
            tokio::spawn(async move {
                let cold = ours(&engine, &req, 1).await;
                let first_peak = process::peak_rss_kb();
                let mut results = Vec::with_capacity(trials);
                for _ in 0..trials {
                    results.push(ours(&engine, &req, reps).await);
                }
                (cold, first_peak, results, req)
            })
            .await
            .unwrap_or_else(|e| fail(&format!("join: {e}")))
        }
    });
    drop(req);
    let per_node = |d: Duration| d.as_nanos() as f64 / (reps * n) as f64;
    let mut totals: Vec<f64> = results.iter().map(|t| per_node(t.total)).collect();
    let first = cold.total.as_nanos() as f64 / n as f64;
    let best = min(&totals);
    let ns_per_node = median(&mut totals);
    let validate = median(
        &mut results
            .iter()
            .map(|t| per_node(t.validate))
            .collect::<Vec<_>>(),
    );
    let cpu = median(&mut results.iter().map(|t| per_node(t.cpu)).collect::<Vec<_>>());
    let last = results.last();
    let engine_bytes_per_node = (first_peak.saturating_sub(base) * 1024) as f64 / n as f64;
    let request_bytes_per_node =
        (after_build.saturating_sub(before_build) * 1024) as f64 / n as f64;
    let peer_ns = with_peer.then(|| {
        rt.block_on(async move {
            tokio::spawn(async move {
                let mut xs = Vec::with_capacity(trials);
                for _ in 0..trials {
                    let d = peer(kind, n, reps, &edges).await;
                    xs.push(d.as_nanos() as f64 / (reps * n) as f64);
                }
                median(&mut xs)
            })
            .await
            .unwrap_or_else(|e| fail(&format!("join: {e}")))
        })
    });
    let mut line = json!({
        "shape": shape,
        "alloc": if cfg!(feature = "bench-system-alloc") { "system" } else { "mimalloc" },
        "nodes": n,
        "reps": reps,
        "trials": trials,
        "total_ms": round(ns_per_node * (reps * n) as f64 / 1e6, 3),
        "ns_per_node": round(ns_per_node, 1),
        "ns_per_node_min": round(best, 1),
        "ns_per_node_cold": round(first, 1),
        // The process after the request was built and ran once (dagx not yet).
        "peak_rss_mb": round(first_peak as f64 / 1024.0, 1),
        // Per-node memory is meaningful only for large chains (pages are 4 KiB).
        "engine_bytes_per_node": (n >= 10_000).then(|| round(engine_bytes_per_node, 0)),
        "request_bytes_per_node": (n >= 10_000).then(|| round(request_bytes_per_node, 0)),
        "validate_ns_per_node": round(validate, 1),
        "cpu_ns_per_node": round(cpu, 1),
        "nodes_run": last.map_or(0, |t| t.nodes_run),
        "events": last.map_or(0, |t| t.events),
    });
    if reps > 1 {
        line["us_per_chain"] = json!(round(ns_per_node * n as f64 / 1e3, 2));
    }
    if let Some(peer_ns) = peer_ns {
        line["peer"] = json!("dagx");
        line["peer_ns_per_node"] = json!(round(peer_ns, 1));
        line["ratio"] = json!(round(ns_per_node / peer_ns, 2));
    }
    emit(&line);
}
