//! `cargo xtask bench structures [--rounds N] [SHAPE…]`: the chain engine's
//! own data structures against the standard ones they replace, in one run.
//!
//! The chain overhead benchmark (`a2e-chain`'s `bench_chain` example) is
//! built once as the crate ships and once per peer feature, each swapping one
//! structure: a std `HashMap` for the id table (`bench-std-ids`), a std
//! `BinaryHeap` for the ready bitset (`bench-heap-ready`), no prefetch hints
//! (`bench-no-prefetch`). The binaries then run the same shapes in
//! interleaved rounds (dagx left out); each line gives, per structure and
//! shape, the medians over the rounds and `speedup` = peer ÷ own time per
//! node (above 1: the crate's structure is faster). A structure is kept
//! where its best speedup is 1.10 or more.

use std::path::{Path, PathBuf};
use std::process::Command;

use a2e_bench::report::round;
use a2e_bench::stats::median;
use serde_json::{Value, json};

/// Each structure, the feature that swaps it for its peer, and the peer.
const PEERS: &[(&str, &str, &str)] = &[
    ("id table", "bench-std-ids", "std HashMap<&str, u32>"),
    ("ready bitset", "bench-heap-ready", "std BinaryHeap"),
    ("prefetch hints", "bench-no-prefetch", "no hints"),
];

/// The shapes run when none are named: the small chain whose cost is
/// validation, and the three large shapes the structures are for.
const SHAPES: &[&str] = &["linear5", "linear100k", "dag100k", "map100k"];

/// Builds the variants, runs them and prints one JSON line per structure and
/// shape, then one verdict per structure.
pub fn run(args: &[&str]) -> Result<(), String> {
    let mut rounds = 5usize;
    let mut shapes: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(&a) = it.next() {
        if a == "--rounds" {
            rounds = it
                .next()
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .ok_or("--rounds needs a positive number")?;
        } else {
            shapes.push(a);
        }
    }
    if shapes.is_empty() {
        shapes = SHAPES.to_vec();
    }
    let dir = crate::target_dir().join("bench-structures");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut bins = vec![("own", build(&dir, "own", None)?)];
    for (_, feature, _) in PEERS {
        bins.push((feature, build(&dir, feature, Some(feature))?));
    }
    // samples[variant][shape] = (ns_per_node, validate_ns_per_node) per round.
    let mut samples = vec![vec![Vec::new(); shapes.len()]; bins.len()];
    for round in 0..rounds {
        eprintln!("round {} of {rounds}", round + 1);
        for (s, shape) in shapes.iter().enumerate() {
            for (v, (_, bin)) in bins.iter().enumerate() {
                let line = run_shape(bin, shape)?;
                let ns = field(&line, "ns_per_node")?;
                let validate = field(&line, "validate_ns_per_node")?;
                if let Some(slot) = samples.get_mut(v).and_then(|x| x.get_mut(s)) {
                    slot.push((ns, validate));
                }
            }
        }
    }
    let median_of = |v: usize, s: usize, pick: fn(&(f64, f64)) -> f64| -> f64 {
        let mut xs: Vec<f64> = samples[v][s].iter().map(pick).collect();
        median(&mut xs)
    };
    for (p, (structure, feature, peer)) in PEERS.iter().enumerate() {
        let mut best = 0f64;
        for (s, shape) in shapes.iter().enumerate() {
            let own = median_of(0, s, |x| x.0);
            let theirs = median_of(p + 1, s, |x| x.0);
            let speedup = theirs / own;
            best = best.max(speedup);
            let line = json!({
                "structure": structure,
                "peer": peer,
                "feature": feature,
                "shape": shape,
                "rounds": rounds,
                "own_ns_per_node": round(own, 2),
                "peer_ns_per_node": round(theirs, 2),
                "own_validate_ns_per_node": round(median_of(0, s, |x| x.1), 2),
                "peer_validate_ns_per_node": round(median_of(p + 1, s, |x| x.1), 2),
                "speedup": round(speedup, 2),
            });
            println!("{line}");
        }
        let verdict = json!({
            "structure": structure,
            "peer": peer,
            "best_speedup": round(best, 2),
            "keep": best >= 1.10,
        });
        println!("{verdict}");
    }
    Ok(())
}

/// Builds the overhead bench with `feature` (none: as shipped) and copies
/// the binary to `dir/bench_chain-NAME`, so that the next build does not
/// overwrite it.
fn build(dir: &Path, name: &str, feature: Option<&str>) -> Result<PathBuf, String> {
    let mut args = vec![
        "build",
        "--quiet",
        "--release",
        "-p",
        "a2e-chain",
        "--example",
        "bench_chain",
    ];
    if let Some(f) = feature {
        args.extend(["--features", f]);
    }
    crate::cargo(&args)?;
    let built = crate::target_dir()
        .join("release")
        .join("examples")
        .join("bench_chain");
    let to = dir.join(format!("bench_chain-{name}"));
    std::fs::copy(&built, &to)
        .map_err(|e| format!("{} → {}: {e}", built.display(), to.display()))?;
    Ok(to)
}

/// One shape in one binary (dagx skipped): its JSON line.
fn run_shape(bin: &Path, shape: &str) -> Result<Value, String> {
    let out = Command::new(bin)
        .args(["--shape", shape])
        .env("BENCH_NO_PEER", "1")
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --shape {shape} failed ({}): {}",
            bin.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("{shape}: not a JSON line ({e}): {line}"))
}

fn field(line: &Value, name: &str) -> Result<f64, String> {
    line.get(name)
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("no `{name}` in {line}"))
}
