//! The host's hot path over stdio, beside the limit and a peer, in one run.
//!
//! `cargo xtask bench transport` runs it in release mode (with the client
//! SDK's WebSocket and HTTP bench after it). Three children of this program
//! answer one raw NDJSON client over their pipes:
//!
//! - `a2e`: the host (`serve_stdio`, the binary's allocator and runtime) with
//!   an `echo` and a `sleep10` tool;
//! - `raw`: a pipe echo with no protocol (`serde_json` and std I/O answer each
//!   line): the physical limit of a line round trip (a `chain/req` it answers
//!   with the host's answer, made once: the limit of carrying it);
//! - `rmcp`: an rmcp stdio server with an `echo` tool (MCP's `tools/call`).
//!
//! Each prints JSON lines: calls per second and p50/p99 latency for
//! sequential calls and for 64 in flight (the medians of five interleaved
//! rounds), the chain figures (medians of 61 rounds, each running every
//! figure in a shuffled order, each measured on its second run in a row
//! and after a pause, see `settle`): a 1000-node linear chain of `echo`
//! over stdio with and without events, the same chain in-process through
//! `chains::run_request` without a transport, with and without its events
//! (streamed into a channel a task drains), the same from its JSON line
//! (decoded, then run: the stdio chain without the transport), through the
//! engine alone with a no-op runner, a map of 100 `sleep10` items, and the
//! raw peer answering the chain's line with the host's answer prebuilt,
//! with and without its 2,000 event lines: the limit of carrying them),
//! each child's peak RSS, and last the ratios with their targets:
//!
//! ```text
//! {"ratio":"sequential_vs_raw","value":0.71,"target":">= 0.6","met":true}
//! ```
//!
//! `--calls N` sets the calls per sequential run (ten times that in flight);
//! `--only-host-chain N [--events|--plain]` runs only the in-process
//! chains, N trials (with `--events` only the streaming one, with `--plain`
//! only the host's run without events), and
//! `--only-stdio-chain N [--events]` only the chain over stdio (both
//! with `--pause-ms M`: a pause before each trial, as the full run's),
//! `--only-chains` the full run's chain figures without the calls, and
//! `--only-calls a2e|raw|rmcp` only one peer's calls (to profile), and
//! `--only-decode N` only the decode of the chain's request, N times; in
//! the three `--only-*` chain modes `--nodes K` sets the chain's length
//! (1000 by default).

#[path = "../src/allocator.rs"]
mod allocator;
#[path = "bench_transport/client.rs"]
mod client;
#[path = "bench_transport/lines.rs"]
mod lines;
#[path = "bench_transport/peers.rs"]
mod peers;

use std::time::Duration;

use a2e_bench::args::{flag, has};
use a2e_bench::report::{Target, emit, extend, ratio, round};
use a2e_bench::stats::{median, median_of, ms};
use client::{Peer, PeerKind};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde_json::{Value, json};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ROUNDS: usize = 5;
/// Rounds of the chain figures (after [`WARM_UPS`]), each figure once per round.
const CHAIN_ROUNDS: usize = 61;
const WARM_UPS: usize = 3;
const CHAIN_NODES: usize = 1000;
/// See [`settle`].
const SETTLE: Duration = Duration::from_millis(3);
const MAP_ITEMS: usize = 100;
const IN_FLIGHT: usize = 64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Every process of the bench allocates as the `a2e` binary does.
    allocator::tune();
    let args: Vec<String> = std::env::args().collect();
    if has(&args, "--serve") {
        return peers::serve(&flag::<String>(&args, "--serve").unwrap_or_default());
    }
    let calls: usize = flag(&args, "--calls").unwrap_or(5000);
    let nodes: usize = flag(&args, "--nodes").unwrap_or(CHAIN_NODES);

    // For profiling: the chain's request decoded, many times.
    if has(&args, "--only-decode") {
        let n = flag(&args, "--only-decode").unwrap_or(2000);
        let framed = linear_chain(nodes, false);
        // As the host's codec hands it on: without its newline.
        let line = framed.trim_end();
        let mut took = Vec::with_capacity(n);
        for _ in 0..n {
            let started = std::time::Instant::now();
            let msg = a2e_proto::decode(line.as_bytes())?;
            took.push(started.elapsed().as_secs_f64() * 1e6);
            drop(std::hint::black_box(msg));
        }
        let us = median(&mut took);
        emit(
            &json!({"figure": format!("decode_chain_req_{nodes}_nodes"), "us": round(us, 1), "bytes": line.len(), "trials": n}),
        );
        return Ok(());
    }
    // For profiling: the in-process chain alone, many times.
    if has(&args, "--only-host-chain") {
        let n = flag(&args, "--only-host-chain").unwrap_or(500);
        let in_process = peers::InProcess::new(&linear_chain(nodes, false))?;
        let mut host_ms = Vec::new();
        let mut engine_ms = Vec::new();
        let mut events_ms = Vec::new();
        let only_events = has(&args, "--events");
        let only_plain = has(&args, "--plain");
        let pause = pause_flag(&args);
        for _ in 0..n {
            pause_for(pause);
            if !only_events {
                host_ms.push(ms(in_process.host_trial()?));
            }
            if !only_events && !only_plain {
                engine_ms.push(ms(in_process.engine_trial()?));
            }
            if !only_plain {
                events_ms.push(ms(in_process.host_events_trial()?));
            }
        }
        let trials = json!({"trials": n});
        for (figure, mut runs) in [
            ("host_in_process_events", events_ms),
            ("host_in_process", host_ms),
            ("engine_noop", engine_ms),
        ] {
            let figure = format!("chain_linear{nodes}_{figure}");
            print_ms(&figure, median(&mut runs), trials.clone());
        }
        return Ok(());
    }
    if has(&args, "--only-calls") {
        let kind = match flag::<String>(&args, "--only-calls").as_deref() {
            Some("raw") => PeerKind::Raw,
            Some("rmcp") => PeerKind::Rmcp,
            _ => PeerKind::A2e,
        };
        let mut peer = Peer::spawn(kind)?;
        peer.warm_up(200)?;
        let seq = peer.sequential(calls)?;
        let par = peer.in_flight(calls * 10, IN_FLIGHT)?;
        for (mode, run) in [("sequential", seq), ("inflight64", par)] {
            emit(
                &json!({"peer": kind.name(), "mode": mode, "calls_per_sec": run.per_sec.round(), "p50_us": run.p50_us}),
            );
        }
        peer.close();
        return Ok(());
    }
    if has(&args, "--only-stdio-chain") {
        let n = flag(&args, "--only-stdio-chain").unwrap_or(500);
        let events = has(&args, "--events");
        let mut a2e = Peer::spawn(PeerKind::A2e)?;
        let chain = linear_chain(nodes, events);
        let pause = pause_flag(&args);
        let mut ms: Vec<f64> = (0..n)
            .map(|_| {
                pause_for(pause);
                a2e.chain(&chain).map(|r| r.0.as_secs_f64() * 1e3)
            })
            .collect::<Result<_, _>>()?;
        print_ms(
            &format!("chain_linear{nodes}_stdio"),
            median(&mut ms),
            json!({"trials": n, "events": events}),
        );
        a2e.close();
        return Ok(());
    }
    let mut a2e = Peer::spawn(PeerKind::A2e)?;
    let mut raw = Peer::spawn(PeerKind::Raw)?;
    let mut rmcp = Peer::spawn(PeerKind::Rmcp)?;

    // Calls: rounds interleave the three peers so that drift hits them alike.
    let mut figures: Vec<Figure> = Vec::new();
    for peer in [&a2e, &raw, &rmcp] {
        for mode in ["sequential", "inflight64"] {
            figures.push(Figure::new(peer.kind, mode));
        }
    }
    // `--only-chains`: the chain figures alone (the calls' ratios read 0).
    let call_rounds = if has(&args, "--only-chains") {
        0
    } else {
        ROUNDS
    };
    for _ in 0..call_rounds {
        for peer in [&mut a2e, &mut raw, &mut rmcp] {
            peer.warm_up(200)?;
            let seq = peer.sequential(calls)?;
            let par = peer.in_flight(calls * 10, IN_FLIGHT)?;
            for (mode, run) in [("sequential", seq), ("inflight64", par)] {
                let slot = figures
                    .iter_mut()
                    .find(|f| f.kind == peer.kind && f.mode == mode)
                    .ok_or("no slot")?;
                slot.rates.push(run.per_sec);
                slot.p50.push(run.p50_us);
                slot.p99.push(run.p99_us);
            }
        }
    }
    for f in &figures {
        let n = if f.mode == "sequential" {
            calls
        } else {
            calls * 10
        };
        emit(&json!({
            "peer": f.kind.name(), "mode": f.mode, "calls": n,
            "calls_per_sec": f.rate().round(),
            "p50_us": median_us(&f.p50), "p99_us": median_us(&f.p99),
            "rounds": ROUNDS,
        }));
    }
    let get = |k: PeerKind, m: &str| {
        figures
            .iter()
            .find(|f| f.kind == k && f.mode == m)
            .map_or(0.0, Figure::rate)
    };

    // Chains over stdio (a2e only: the other two have no chains).
    let linear = linear_chain(CHAIN_NODES, false);
    let linear_events = linear_chain(CHAIN_NODES, true);
    let map = map_chain(MAP_ITEMS);
    // Rounds interleave the nine figures, so that drift on a shared machine
    // hits each ratio's two sides alike, in an order shuffled every round,
    // and each figure is measured on its second run in a row: what a run
    // costs depends on what ran before it (in a fixed order the first stdio
    // chain after the in-process runs finds the host's memory out of the
    // CPU's caches), so each measured run follows an unmeasured one of its
    // own kind.
    let in_process = peers::InProcess::new(&linear)?;
    let mut rounds: [Vec<f64>; 9] = Default::default();
    let mut order = [0, 1, 2, 3, 4, 5, 6, 7, 8];
    // A fixed seed: every run of the bench measures in the same orders.
    let mut shuffle = rand::rngs::StdRng::seed_from_u64(0x9e37_79b9_7f4a_7c15);
    let mut events = 0;
    for round in 0..WARM_UPS + CHAIN_ROUNDS {
        order.shuffle(&mut shuffle);
        let mut figures = [0.0; 9];
        for &figure in &order {
            // Run twice, the first time unmeasured (see above).
            for _ in 0..2 {
                settle();
                figures[figure] = match figure {
                    0 => ms(a2e.chain(&linear)?.0),
                    1 => {
                        let (took, n) = a2e.chain(&linear_events)?;
                        events = n;
                        ms(took)
                    }
                    2 => ms(in_process.host_trial()?),
                    3 => ms(in_process.engine_trial()?),
                    4 => ms(a2e.chain(&map)?.0),
                    5 => ms(in_process.host_events_trial()?),
                    6 => ms(in_process.line_trial()?),
                    7 => ms(raw.chain(&linear)?.0),
                    _ => {
                        let (took, n) = raw.chain(&linear_events)?;
                        if n != 2 * CHAIN_NODES {
                            return Err(
                                format!("raw: {n} event lines, not {}", 2 * CHAIN_NODES).into()
                            );
                        }
                        ms(took)
                    }
                };
            }
        }
        if round >= WARM_UPS {
            for (all, one) in rounds.iter_mut().zip(figures) {
                all.push(one);
            }
        }
    }
    drop(in_process);
    let [
        stdio_ms,
        events_ms,
        host_ms,
        engine_ms,
        map_ms,
        host_events_ms,
        from_line_ms,
        raw_ms,
        raw_events_ms,
    ] = rounds.map(|mut v| median(&mut v));
    let nodes = json!({"nodes": CHAIN_NODES});
    let with_events = json!({"nodes": CHAIN_NODES, "events": events});
    for (figure, ms, extra) in [
        ("stdio", stdio_ms, &nodes),
        ("stdio_events", events_ms, &with_events),
        ("host_in_process", host_ms, &nodes),
        ("host_in_process_events", host_events_ms, &with_events),
        ("host_in_process_from_line", from_line_ms, &nodes),
        ("engine_noop", engine_ms, &nodes),
        ("raw_answer", raw_ms, &nodes),
        ("raw_answer_events", raw_events_ms, &with_events),
    ] {
        print_ms(&format!("chain_linear1000_{figure}"), ms, extra.clone());
    }
    let ideal_ms = MAP_ITEMS.div_ceil(IN_FLIGHT) as f64 * 10.0;
    print_ms(
        "map100_sleep10ms_stdio",
        map_ms,
        json!({"items": MAP_ITEMS, "ideal_ms": ideal_ms}),
    );

    // Peak RSS of each child, after everything above.
    for peer in [&a2e, &raw, &rmcp] {
        emit(&json!({"peer": peer.kind.name(), "peak_rss_kb": peer.peak_rss_kb()}));
    }

    let ratios = [
        (
            "sequential_vs_raw",
            get(PeerKind::A2e, "sequential") / get(PeerKind::Raw, "sequential"),
            Some(Target::AtLeast(0.6)),
        ),
        (
            "inflight64_vs_raw",
            get(PeerKind::A2e, "inflight64") / get(PeerKind::Raw, "inflight64"),
            Some(Target::AtLeast(0.6)),
        ),
        ("chain_stdio_vs_host", stdio_ms / host_ms, None),
        (
            "chain_host_vs_engine",
            host_ms / engine_ms,
            Some(Target::AtMost(2.0)),
        ),
        // Where the stdio chain's cost beyond the run is: decoding its line
        // (in-process, from the line) against carrying it.
        (
            "chain_stdio_vs_line_in_process",
            stdio_ms / from_line_ms,
            None,
        ),
        ("chain_events_vs_none", events_ms / stdio_ms, None),
        // The same ratio if making the events cost nothing and carrying
        // them no more than the raw peer's prebuilt lines take over a pipe
        // to this client: the limit of the ratio on this machine.
        (
            "chain_events_vs_none_carry_limit",
            (stdio_ms + (raw_events_ms - raw_ms).max(0.0)) / stdio_ms,
            None,
        ),
        // Where the events' cost is: making them (in-process, into a
        // channel a task drains) against carrying them.
        (
            "chain_events_vs_none_in_process",
            host_events_ms / host_ms,
            None,
        ),
        ("map_vs_ideal", map_ms / ideal_ms, Some(Target::AtMost(1.3))),
        (
            "sequential_vs_rmcp",
            get(PeerKind::A2e, "sequential") / get(PeerKind::Rmcp, "sequential"),
            None,
        ),
        (
            "inflight64_vs_rmcp",
            get(PeerKind::A2e, "inflight64") / get(PeerKind::Rmcp, "inflight64"),
            None,
        ),
        (
            "peak_rss_vs_rmcp",
            a2e.peak_rss_kb() as f64 / rmcp.peak_rss_kb().max(1) as f64,
            None,
        ),
    ];
    for (name, value, target) in ratios {
        emit(&ratio(name, value, target));
    }
    for peer in [a2e, raw, rmcp] {
        peer.close();
    }
    Ok(())
}

/// One peer's runs in one mode, over the rounds.
struct Figure {
    kind: PeerKind,
    mode: &'static str,
    rates: Vec<f64>,
    p50: Vec<u64>,
    p99: Vec<u64>,
}

impl Figure {
    fn new(kind: PeerKind, mode: &'static str) -> Self {
        Self {
            kind,
            mode,
            rates: Vec::new(),
            p50: Vec::new(),
            p99: Vec::new(),
        }
    }

    /// The median calls per second.
    fn rate(&self) -> f64 {
        median_of(self.rates.iter().copied())
    }
}

/// `--pause-ms M`: a pause before each trial of the single-figure modes
/// (the full run's [`settle`] is one).
fn pause_flag(args: &[String]) -> Duration {
    Duration::from_millis(flag(args, "--pause-ms").unwrap_or(0))
}

/// The median of round trips in whole microseconds.
fn median_us(v: &[u64]) -> u64 {
    median_of(v.iter().map(|&us| us as f64)).round() as u64
}

fn print_ms(figure: &str, ms: f64, extra: Value) {
    // Microseconds too: a short chain takes a fraction of a millisecond.
    let mut line = json!({"figure": figure, "ms": round(ms, 2), "us": round(ms * 1e3, 1), "trials": CHAIN_ROUNDS});
    extend(&mut line, extra);
    emit(&line);
}

/// A pause before each chain figure, so that none starts while the
/// previous one's process still frees its state or spins down its workers
/// (on two cores that work would run beside the figure, and only beside the
/// figures that follow a stdio chain).
fn settle() {
    pause_for(SETTLE);
}

/// A pause of `pause` (none if zero).
fn pause_for(pause: Duration) {
    if !pause.is_zero() {
        std::thread::sleep(pause);
    }
}

/// `chain/req` of `n` `echo` nodes, each reading the one before.
fn linear_chain(n: usize, streaming: bool) -> String {
    let nodes: Vec<Value> = (0..n)
        .map(|i| {
            let mut node = json!({"node_id": format!("n{i}"), "kind": "tool", "name": "echo"});
            if i == 0 {
                node["input"] = json!({"x": 0});
            } else {
                node["input_map"] = json!({"x": format!("n{}.output.x", i - 1)});
            }
            node
        })
        .collect();
    chain_line(&format!("linear{n}"), nodes, json!({}), streaming)
}

/// `chain/req` of one `map` node over `items` calls of `sleep10`.
fn map_chain(items: usize) -> String {
    let nodes = vec![
        json!({"node_id": "m", "kind": "map", "items_path": "input.items", "map_node": "t"}),
        json!({"node_id": "t", "kind": "tool", "name": "sleep10", "input_map": {"i": "item"}}),
    ];
    let input = json!({"items": (0..items).collect::<Vec<_>>()});
    chain_line("map", nodes, input, false)
}

/// A `chain/req` line, with its newline (sent in one write).
fn chain_line(chain_id: &str, nodes: Vec<Value>, input: Value, streaming: bool) -> String {
    let req = json!({
        "type": "chain/req", "id": format!("chain-{chain_id}"), "version": "1.0",
        "ts": 1716123450.125, "chain_id": chain_id, "entry_node": nodes[0]["node_id"],
        "initial_input": input, "nodes": nodes, "streaming": streaming, "timeout": 120,
    });
    format!("{req}\n")
}
