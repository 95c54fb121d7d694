//! What durability costs, and what the work queue buys:
//!
//! - `journal`: a 100-node linear chain of trivial in-process tools, run
//!   with no journal, with the SQLite journal (`synchronous=NORMAL`, the
//!   default: results survive SIGKILL; and `FULL`: they survive a power cut)
//!   and with the JetStream journal. Each node's start and result are
//!   journaled before its dependent starts (the observer awaits both
//!   writes: what a host does for a run that streams its events to its
//!   agent), and each event is journaled; the run's request and answer too.
//!   The `_deferred` modes queue each result and await the next start,
//!   which commits both (what a host does for a run that does not stream,
//!   on SQLite): one awaited write per node.
//!   Figures: µs per node, µs added per node, the ratio to no journal and
//!   to one synced SQLite commit (the physical floor of a durable write,
//!   measured in the same run on a connection of its own), and for SQLite
//!   the commits and disk syncs per node (counted by the store:
//!   `SqliteJournal::commit_stats`).
//! - `scaleout`: 1,000 calls of a tool that sleeps 10 ms (a `map`'s items),
//!   queued on the work-queue stream, then drained by 1, 2 and 3 worker
//!   hosts released together (each its own connection, 8 calls at a time,
//!   results journaled before the ack): calls per second, the ratio to one
//!   worker, and the share of the limit (every slot always busy).
//! - `recovery`: a worker takes a node and dies; the time until another
//!   worker has it again (bounded by `ack_wait`, here 1 s).
//!
//! `cargo run --release -p a2e-journal --example bench_cluster [journal|scaleout|recovery…]`
//! prints one JSON object per line. The JetStream parts start a
//! `nats-server -js` of their own (Debian's `nats-server`; skipped with a
//! note when it is missing). `BENCH_RUNS` sets the chain runs per mode
//! (default 40); `BENCH_MODES=sqlite` keeps only the named journal modes (and
//! `none`), e.g. under `perf`.

#[path = "common/sqlite_floor.rs"]
mod sqlite_floor;
#[path = "common/work_queue.rs"]
mod work_queue;

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2e_bench::args::env;
use a2e_bench::report::{emit, round};
use a2e_bench::stats::{median, median_of, us};
use a2e_chain::{Engine, NodeCall, RunOptions, runner_fn};
use a2e_journal::nats::{NatsJournal, NatsOptions};
use a2e_journal::{
    CommitStats, Durability, Journal, NewRun, RunId, RunKind, RunStatus, SqliteJournal,
    SqliteOptions,
};
use a2e_proto::{ChainNode, ChainRequest, NodeKind};
use a2e_test_kit::journaled_chain::{JournalObserver, JournalSink};
use a2e_test_kit::nats_server::NatsServer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The host's allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NODES: usize = 100;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let wanted: Vec<&str> = if args.is_empty() {
        vec!["journal", "scaleout", "recovery"]
    } else {
        args.iter().map(String::as_str).collect()
    };
    // `BENCH_RT=current`: the chain on a current-thread runtime (its
    // wake-ups stay on one thread; the journal's writer is the other).
    let rt = match std::env::var("BENCH_RT").as_deref() {
        Ok("current") => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
    .unwrap_or_else(|e| fail(&format!("runtime: {e}")));
    rt.block_on(async {
        let server = NatsServer::start();
        for w in wanted {
            match w {
                "journal" => journal(server.as_ref()).await,
                "scaleout" => match &server {
                    Some(s) => work_queue::scaleout(s).await,
                    None => skipped("scaleout"),
                },
                "recovery" => match &server {
                    Some(s) => work_queue::recovery(s).await,
                    None => skipped("recovery"),
                },
                other => fail(&format!(
                    "unknown part `{other}`; choose journal, scaleout, recovery"
                )),
            }
        }
    });
}

fn fail(msg: &str) -> ! {
    eprintln!("bench_cluster: {msg}");
    std::process::exit(1)
}

fn skipped(part: &str) {
    emit(&json!({"part": part, "skipped": "nats-server is not installed"}));
}

fn linear(n: usize) -> ChainRequest {
    let nodes = (0..n)
        .map(|i| {
            let mut node = ChainNode::new(&format!("n{i}"), NodeKind::TOOL, "echo");
            if i > 0 {
                node.input_map
                    .insert("prev".into(), json!(format!("n{}.output.v", i - 1)));
            }
            if i + 1 < n {
                node.next_node = format!("n{}", i + 1);
            }
            node
        })
        .collect();
    ChainRequest {
        id: "bench".into(),
        nodes,
        entry_node: "n0".into(),
        ..ChainRequest::default()
    }
}

fn echo() -> impl a2e_chain::NodeRunner {
    runner_fn(|call: NodeCall| async move {
        let prev = call.input.get("prev").and_then(|v| v.as_u64()).unwrap_or(0);
        Ok(json!({"v": prev + 1}))
    })
}

/// One run of the chain; journaled on `journal` when given.
async fn one_run(engine: &Engine, req: &ChainRequest, journal: Option<&Mode>) -> Duration {
    let plan = engine
        .validate(req)
        .unwrap_or_else(|e| fail(&format!("invalid chain: {e}")));
    let started = Instant::now();
    match journal {
        None => {
            let resp = engine.run_plan(&plan, (), CancellationToken::new()).await;
            assert!(resp.success);
        }
        Some(mode) => {
            let j = &mode.journal;
            let run = RunId::generate();
            let request = serde_json::to_value(req).unwrap_or_default();
            // The run is journaled before it starts (a host answers the
            // agent with its id only then).
            j.create_run(NewRun {
                run_id: run.clone(),
                kind: RunKind::Chain,
                agent: "bench".into(),
                request,
            })
            .await
            .unwrap_or_else(|e| fail(&format!("create_run: {e}")));
            let sink = JournalSink {
                journal: j.clone(),
                run: run.clone(),
                req_id: req.id.clone(),
            };
            let observer = Arc::new(JournalObserver {
                journal: j.clone(),
                run: run.clone(),
                await_start: mode.await_start,
                defer_results: mode.defer_results,
                pending: Default::default(),
            });
            let resp = engine
                .run_plan_with(
                    &plan,
                    sink,
                    CancellationToken::new(),
                    RunOptions {
                        resume: None,
                        observer: Some(observer),
                    },
                )
                .await;
            assert!(resp.success, "{:?}", resp.error);
            let answer = serde_json::to_value(&resp).unwrap_or_default();
            j.finish_run(&run, RunStatus::Succeeded, &answer)
                .await
                .unwrap_or_else(|e| fail(&format!("finish_run: {e}")));
        }
    }
    started.elapsed()
}

/// A journal, and whether calls wait for their start to be durable.
struct Mode {
    journal: Arc<dyn Journal>,
    /// The same journal when it is SQLite's (its commits are counted).
    sqlite: Option<(SqliteJournal, Durability)>,
    await_start: bool,
    defer_results: bool,
}

/// Runs before the timed ones of each measurement.
const WARMUP: usize = 3;

async fn measure(engine: &Engine, req: &ChainRequest, journal: Option<&Mode>, runs: usize) -> f64 {
    for _ in 0..WARMUP {
        one_run(engine, req, journal).await;
    }
    let mut per_node = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = one_run(engine, req, journal).await;
        per_node.push(us(t) / NODES as f64);
    }
    median(&mut per_node)
}

async fn journal(server: Option<&NatsServer>) {
    let runs: usize = env("BENCH_RUNS").unwrap_or(40);
    let engine = Engine::new(echo());
    let req = linear(NODES);
    let dir = tempfile::tempdir().unwrap_or_else(|e| fail(&format!("tempdir: {e}")));
    let mut modes: Vec<(&str, Option<Mode>)> = vec![("none", None)];
    for (name, durability) in [
        ("sqlite", Durability::ProcessCrash),
        ("sqlite_full", Durability::PowerLoss),
    ] {
        let sqlite = SqliteJournal::open(
            dir.path().join(format!("{name}.db")),
            SqliteOptions {
                durability,
                ..SqliteOptions::default()
            },
        )
        .await
        .unwrap_or_else(|e| fail(&format!("open sqlite: {e}")));
        let j: Arc<dyn Journal> = Arc::new(sqlite.clone());
        modes.push((
            name,
            Some(Mode {
                journal: j.clone(),
                sqlite: Some((sqlite.clone(), durability)),
                await_start: true,
                defer_results: false,
            }),
        ));
        modes.push((
            if name == "sqlite" {
                "sqlite_deferred"
            } else {
                "sqlite_full_deferred"
            },
            Some(Mode {
                journal: j,
                sqlite: Some((sqlite, durability)),
                await_start: true,
                defer_results: true,
            }),
        ));
    }
    match server {
        Some(s) => {
            let j: Arc<dyn Journal> = Arc::new(
                NatsJournal::connect(&s.url(), NatsOptions::default())
                    .await
                    .unwrap_or_else(|e| fail(&format!("open jetstream: {e}"))),
            );
            modes.push((
                "jetstream",
                Some(Mode {
                    journal: j,
                    sqlite: None,
                    await_start: true,
                    defer_results: false,
                }),
            ));
        }
        None => skipped("journal/jetstream"),
    }
    // `BENCH_MODES=sqlite,none`: only those modes (e.g. under a profiler).
    if let Ok(only) = std::env::var("BENCH_MODES") {
        let only: Vec<&str> = only.split(',').collect();
        modes.retain(|(name, _)| *name == "none" || only.contains(name));
    }
    // Interleaved rounds, so that a busy moment of the machine hits every
    // mode alike; the median of the rounds' medians is reported.
    // The commits of every SQLite mode are counted over all its runs.
    // The floor is measured right after each mode, and each mode's ratio
    // to it is the median of the rounds' ratios: a busy moment of the
    // machine slows both alike.
    let floor = |sync: &str, name: String| {
        sqlite_floor::commit_us(&dir.path().join(name), sync)
            .unwrap_or_else(|e| fail(&format!("floor: {e}")))
    };
    let mut figures: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut floors: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut counted = vec![(CommitStats::default(), 0usize); modes.len()];
    let (mut synced, mut unsynced) = (Vec::new(), Vec::new());
    for round in 0..3 {
        for (i, (_, j)) in modes.iter().enumerate() {
            let sqlite = j.as_ref().and_then(|m| m.sqlite.as_ref());
            let before = sqlite.map(|(s, _)| s.commit_stats());
            let us = measure(&engine, &req, j.as_ref(), runs).await;
            let f = floor("FULL", format!("floor_{round}_{i}.db"));
            synced.push(f);
            if let (Some(us_r), Some(f_r)) = (figures.get_mut(i), floors.get_mut(i)) {
                us_r.push(us);
                f_r.push(f);
            }
            if let (Some((s, _)), Some(before), Some(c)) = (sqlite, before, counted.get_mut(i)) {
                let after = s.commit_stats();
                c.0.commits += after.commits - before.commits;
                c.0.checkpoints += after.checkpoints - before.checkpoints;
                c.1 += (runs + WARMUP) * NODES;
            }
        }
        unsynced.push(floor("NORMAL", format!("floor_normal_{round}.db")));
    }
    let (synced, unsynced) = (median(&mut synced), median(&mut unsynced));
    emit(&json!({
        "part": "journal",
        "floor": "one commit of one row, SQLite WAL, its own connection",
        "synced_commit_us": round(synced, 2),
        "unsynced_commit_us": round(unsynced, 2),
    }));
    let base_rounds = figures.first().cloned().unwrap_or_default();
    let base = median_of(base_rounds.iter().copied());
    for ((((name, mode), f), fl), (stats, nodes)) in
        modes.iter().zip(figures).zip(floors).zip(counted)
    {
        let to_floor = median_of(
            f.iter()
                .zip(&base_rounds)
                .zip(&fl)
                .map(|((us, b), floor)| (us - b) / floor),
        );
        let us = median_of(f);
        let mut line = json!({
            "part": "journal",
            "mode": name,
            "nodes": NODES,
            "runs": runs * 3,
            "us_per_node": round(us, 2),
            "us_added_per_node": round(us - base, 2),
            "ratio_to_none": round(us / base, 2),
            "ratio_to_synced_commit": round(to_floor, 2),
        });
        if let (Some((_, durability)), Some(obj)) = (
            mode.as_ref().and_then(|m| m.sqlite.as_ref()),
            line.as_object_mut(),
        ) {
            let per_node = |n: u64| round(n as f64 / nodes.max(1) as f64, 2);
            obj.insert("commits_per_node".into(), json!(per_node(stats.commits)));
            obj.insert(
                "syncs_per_node".into(),
                json!(per_node(syncs(&stats, *durability))),
            );
        }
        emit(&line);
    }
}

/// The disk syncs SQLite makes for `stats`: with `synchronous=FULL` one per
/// commit (of the WAL); with either, two per checkpoint (the WAL before it
/// is copied, the file after).
fn syncs(stats: &CommitStats, durability: Durability) -> u64 {
    let per_commit = u64::from(durability == Durability::PowerLoss);
    stats.commits * per_commit + 2 * stats.checkpoints
}
