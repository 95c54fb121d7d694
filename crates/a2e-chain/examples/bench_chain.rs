//! Chain engine overhead: end-to-end time and memory per node for chains of
//! trivial in-process runners, with dagx running the same shape beside it.
//!
//! `cargo run --release -p a2e-chain --example bench_chain [SHAPE…]` prints
//! one JSON object per line. Each shape runs in a child process of its own so
//! that its peak RSS (VmHWM) is its own.

use std::process::Command;
use std::time::{Duration, Instant};

use a2e_chain::{ChainConfig, Engine, Event, NodeCall, runner_fn};
use a2e_proto::{ChainNode, ChainRequest, NodeKind};
use dagx::{DagRunner, Task, task};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

const SHAPES: &[&str] = &["linear5", "linear10k", "linear100k", "map100k", "dag100k"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, shape] = args.as_slice() {
        if flag == "--shape" {
            return run_shape(shape);
        }
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

/// A field of /proc/self/status in kB.
fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Resets VmHWM to the current RSS (Linux: `5` to clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
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
    let nodes = (0..n)
        .map(|i| {
            let reads: Vec<String> = if i == 0 {
                vec![]
            } else {
                vec![format!("n{}", i - 1)]
            };
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
        let sum: i64 = call
            .input
            .as_object()
            .map(|m| m.values().filter_map(Value::as_i64).sum())
            .unwrap_or(0);
        Ok(Value::from(sum.wrapping_add(1) % 1_000_000_007))
    });
    Engine::new(runner).with_config(ChainConfig::with_limits(1_000_000))
}

/// What one measured series of runs gives.
struct Measured {
    total: Duration,
    validate: Duration,
    cpu: Duration,
    events: u64,
    nodes_run: usize,
}

/// CPU time of the whole process so far (all threads), from schedstat.
fn cpu_time() -> Duration {
    let mut ns = 0u64;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for t in dir.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
                ns += s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(ns)
}

/// Runs `req` `reps` times (validation included).
async fn ours(engine: &Engine, req: &ChainRequest, reps: usize) -> Measured {
    let mut events = 0u64;
    let mut nodes_run = 0;
    let mut validate = Duration::ZERO;
    let cpu0 = cpu_time();
    let start = Instant::now();
    for _ in 0..reps {
        events = 0;
        let v0 = Instant::now();
        let plan = engine
            .validate(req)
            .unwrap_or_else(|e| fail(&e.to_string()));
        validate += v0.elapsed();
        if std::env::var_os("BENCH_BREAKDOWN").is_some() {
            eprintln!(
                "after validate: hwm {} rss {} kB",
                status_kb("VmHWM:"),
                status_kb("VmRSS:")
            );
        }
        let resp = engine
            .run_plan(&plan, |_: &Event<'_>| events += 1, CancellationToken::new())
            .await;
        if !resp.success {
            fail(&format!("chain failed: {:?}", resp.error));
        }
        if std::env::var_os("BENCH_BREAKDOWN").is_some() {
            eprintln!(
                "after run: hwm {} rss {} kB",
                status_kb("VmHWM:"),
                status_kb("VmRSS:")
            );
        }
        nodes_run = resp.nodes_run as usize;
    }
    Measured {
        total: start.elapsed(),
        validate,
        cpu: cpu_time().saturating_sub(cpu0),
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
async fn peer(shape: &str, n: usize, reps: usize, edges: &[Vec<usize>]) -> Option<Duration> {
    if std::env::var_os("BENCH_NO_PEER").is_some() {
        return None;
    }
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
    Some(start.elapsed())
}

fn run_shape(shape: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("runtime: {e}")));
    let (kind, n, reps) = match shape {
        "linear5" => ("linear", 5, 20_000),
        "linear10k" => ("linear", 10_000, 5),
        "linear100k" => ("linear", 100_000, 1),
        "map100k" => ("map", 100_000, 1),
        "dag100k" => ("dag", 100_000, 1),
        other => fail(&format!("unknown shape {other}")),
    };
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

    let before_build = status_kb("VmRSS:");
    let req = match kind {
        "map" => map_shape(n),
        "dag" => dag_shape(&edges),
        _ => linear(n),
    };
    let after_build = status_kb("VmRSS:");
    reset_peak();
    let base = status_kb("VmRSS:");
    if std::env::var_os("BENCH_BREAKDOWN").is_some() {
        eprintln!(
            "base: rss {base} kB (request built: {} kB)",
            after_build.saturating_sub(before_build)
        );
    }
    // The request moves into the task (a clone would count as engine memory).
    let (m, req) = rt.block_on({
        let engine = engine.clone();
        async move {
            tokio::spawn(async move {
                let m = ours(&engine, &req, reps).await;
                (m, req)
            })
            .await
            .unwrap_or_else(|e| fail(&format!("join: {e}")))
        }
    });
    let peak = status_kb("VmHWM:");
    drop(req);
    let engine_bytes_per_node = (peak.saturating_sub(base) * 1024) as f64 / n as f64;
    let request_bytes_per_node =
        (after_build.saturating_sub(before_build) * 1024) as f64 / n as f64;
    let total_ns = m.total.as_nanos() as f64;
    let ns_per_node = total_ns / (reps * n) as f64;

    let peer_elapsed = rt.block_on(async move {
        let shape_kind = kind.to_owned();
        tokio::spawn(async move { peer(&shape_kind, n, reps, &edges).await })
            .await
            .ok()
            .flatten()
    });
    let mut line = json!({
        "shape": shape,
        "nodes": n,
        "reps": reps,
        "total_ms": round(total_ns / 1e6, 3),
        "ns_per_node": round(ns_per_node, 1),
        "peak_rss_mb": round(peak as f64 / 1024.0, 1),
        // Per-node memory is meaningful only for large chains (pages are 4 KiB).
        "engine_bytes_per_node": (n >= 10_000).then(|| round(engine_bytes_per_node, 0)),
        "request_bytes_per_node": (n >= 10_000).then(|| round(request_bytes_per_node, 0)),
        "validate_ns_per_node": round(m.validate.as_nanos() as f64 / (reps * n) as f64, 1),
        "cpu_ns_per_node": round(m.cpu.as_nanos() as f64 / (reps * n) as f64, 1),
        "nodes_run": m.nodes_run,
        "events": m.events,
    });
    if reps > 1 {
        line["us_per_chain"] = json!(round(total_ns / reps as f64 / 1e3, 2));
    }
    if let Some(p) = peer_elapsed {
        let peer_ns = p.as_nanos() as f64 / (reps * n) as f64;
        line["peer"] = json!("dagx");
        line["peer_ns_per_node"] = json!(round(peer_ns, 1));
        line["ratio"] = json!(round(ns_per_node / peer_ns, 2));
    }
    println!("{line}");
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}
