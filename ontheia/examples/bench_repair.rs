//! JSON repair throughput on 1 MiB and 10 MiB of malformed model-style JSON
//! (single quotes, unquoted keys, Python literals, missing and trailing
//! commas, comments), and the ratio of the two times: 10 means linear. The
//! peer, in the same run, is `serde_json` parsing the repaired (valid) text.
//!
//! `cargo xtask bench repair` (or `cargo run --release -p ontheia --example
//! bench_repair [-- TRIALS]`). One JSON line per size, then the scaling line.

use std::hint::black_box;
use std::time::Duration;

use a2e_bench::report::{emit, round};
use a2e_bench::stats::{interleaved, median_of};
use serde_json::json;

const RECORD: &str = "{'id': 1, name: 'Ada \"the\" first', \"tags\": ['a' 'b',], ok: True, none: None, // note\n \"text\": \"line\nbreak\", n: .5,},\n";

fn input(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + RECORD.len() + 2);
    s.push('[');
    while s.len() + RECORD.len() < bytes {
        s.push_str(RECORD);
    }
    s.push(']');
    s
}

fn main() {
    let trials: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(9);
    let sizes = [1usize, 10];
    let texts: Vec<String> = sizes.iter().map(|mib| input(mib << 20)).collect();
    let repaired: Vec<String> = texts
        .iter()
        .map(|t| {
            ontheia::repair::repair(t).unwrap_or_else(|e| {
                eprintln!("bench_repair: {e}");
                std::process::exit(1)
            })
        })
        .collect();
    let mut records = Vec::new();
    for r in &repaired {
        let parsed: serde_json::Value = serde_json::from_str(r).unwrap_or_else(|e| {
            eprintln!("bench_repair: the repaired text does not parse: {e}");
            std::process::exit(1)
        });
        records.push(parsed.as_array().map_or(0, Vec::len));
    }
    // Trials alternate between the sizes, so that both see the same machine.
    let repair = |k: usize| {
        black_box(
            ontheia::repair::repair(black_box(&texts[k]))
                .map(|s| s.len())
                .unwrap_or(0),
        );
    };
    let parse = |k: usize| {
        black_box(serde_json::from_str::<serde_json::Value>(black_box(&repaired[k])).is_ok());
    };
    let medians: Vec<f64> = interleaved(
        0,
        trials,
        &mut [
            &mut || repair(0),
            &mut || parse(0),
            &mut || repair(1),
            &mut || parse(1),
        ],
    )
    .into_iter()
    .map(|times| median_of(times.iter().map(Duration::as_secs_f64)))
    .collect();
    let mut repair_med = Vec::new();
    let mut parse_med = Vec::new();
    for (k, pair) in medians.chunks(2).enumerate() {
        let (repair_s, parse_s) = (pair[0], pair[1]);
        let mb = texts[k].len() as f64 / 1e6;
        emit(&json!({
            "bench": "repair",
            "input_bytes": texts[k].len(),
            "records": records[k],
            "samples": trials,
            "repair_ms": round(repair_s * 1e3, 1),
            "repair_mb_per_s": round(mb / repair_s, 1),
            "vs": "serde_json parsing the repaired text",
            "vs_parse_mb_per_s": round(repaired[k].len() as f64 / 1e6 / parse_s, 1),
            "ratio": round(repair_s / parse_s, 1),
        }));
        repair_med.push(repair_s);
        parse_med.push(parse_s);
    }
    emit(&json!({
        "bench": "repair_scaling",
        "sizes_mib": sizes,
        "time_ratio": round(repair_med[1] / repair_med[0], 2),
        "vs_parse_time_ratio": round(parse_med[1] / parse_med[0], 2),
        "linear_would_be": 10.0,
    }));
}
