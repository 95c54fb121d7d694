//! `cargo xtask fuzz --cases N [--seed S] [--out DIR] [--only session|decode]
//! [--without TOOL,…]`: the hostile-input campaign outside CI, in release mode.
//!
//! - `session`: `a2e-cli`'s `fuzz_many` drives real sessions with N generated cases
//!   (hostile lines over every message type and every conformance fixture) and checks
//!   that every request gets exactly one answer, a final `ping` is answered and nothing
//!   panics. It prints progress and `cases_per_s`; each failure is written to
//!   `DIR/failure-<seed>-<case>.jsonl`. A case that kills the process (a stack overflow,
//!   an abort) is the `current-<worker>.jsonl` it leaves, kept as `crash-….jsonl`.
//!   Copy a fixture to `a2e-cli/tests/fuzz_regressions/` and it is replayed by
//!   `cargo test` from then on.
//! - `decode`: the decoder fuzzers of `a2e-proto`, `acmp-dag` and `ontheia` (its JSON
//!   repair and document parser) with N cases each.
//!
//! `--without` leaves built-in tools with a known open finding out of the session
//! fuzzer's host, so that a long run can look for the next finding.
//!
//! The short form of each runs in `cargo test` (and so in `cargo xtask ci`), with
//! seed 0; `--seed` picks other cases.

use std::path::PathBuf;
use std::time::Instant;

struct Options {
    cases: u64,
    seed: u64,
    out: PathBuf,
    session: bool,
    decode: bool,
    without: String,
}

fn parse(args: &[&str]) -> Result<Options, String> {
    let mut o = Options {
        cases: 100_000,
        seed: 0,
        out: PathBuf::new(),
        session: true,
        decode: true,
        without: String::new(),
    };
    let mut out = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .map(|v| v.to_string())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match *arg {
            "--cases" => {
                let v = value("--cases")?.replace('_', "");
                o.cases = v
                    .parse()
                    .map_err(|_| format!("--cases: not a count: {v}"))?;
            }
            "--seed" => {
                let v = value("--seed")?;
                o.seed = v
                    .parse()
                    .map_err(|_| format!("--seed: not a number: {v}"))?;
            }
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--without" => o.without = value("--without")?,
            "--only" => match value("--only")?.as_str() {
                "session" => o.decode = false,
                "decode" => o.session = false,
                other => return Err(format!("--only: session or decode, not {other}")),
            },
            other => {
                return Err(format!(
                    "fuzz: unknown argument {other}; usage: cargo xtask fuzz --cases N [--seed S] [--out DIR] [--only session|decode] [--without TOOL,…]"
                ));
            }
        }
    }
    o.out = out.unwrap_or_else(|| {
        crate::root()
            .join("target/fuzz")
            .join(format!("seed-{}", o.seed))
    });
    Ok(o)
}

/// Runs the campaign.
pub fn run(args: &[&str]) -> Result<(), String> {
    let o = parse(args)?;
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let cases = o.cases.to_string();
    let seed = o.seed.to_string();
    let out = o.out.display().to_string();
    let mut summary = Vec::new();
    if o.session {
        let started = Instant::now();
        let result = crate::cargo_env(
            &[
                "test",
                "--release",
                "-p",
                "a2e-cli",
                "--test",
                "cli",
                "--",
                "--ignored",
                "--exact",
                "fuzz_session::fuzz_many",
                "--nocapture",
            ],
            &[
                ("A2E_FUZZ_CASES", &cases),
                ("A2E_FUZZ_SEED", &seed),
                ("A2E_FUZZ_OUT", &out),
                ("A2E_FUZZ_WITHOUT", &o.without),
            ],
        );
        if let Err(e) = result {
            return Err(format!("{e}\n{}", leftovers(&o)));
        }
        summary.push(serde_json::json!({"fuzz": "session", "cases": o.cases, "seed": o.seed, "wall_s": secs(started)}));
    }
    if o.decode {
        // proptest counts cases in a u32.
        let cases = o.cases.min(u64::from(u32::MAX)).to_string();
        let env = [
            ("A2E_FUZZ_CASES", cases.as_str()),
            ("A2E_FUZZ_SEED", seed.as_str()),
        ];
        // (crate, its features, its test binary, the filter naming the
        // decode tests in it)
        for (krate, extra, binary, filter) in [
            ("a2e-proto", Some("arbitrary"), "fuzz_decode", None),
            ("acmp-dag", None, "suite", Some("fuzz_decode::")),
            ("ontheia", None, "suite", Some("fuzz_decode::")),
        ] {
            let started = Instant::now();
            let mut args = vec!["test", "--release", "-p", krate];
            if let Some(features) = extra {
                args.extend(["--features", features]);
            }
            args.extend(["--test", binary]);
            args.extend(filter);
            crate::cargo_env(&args, &env)?;
            summary.push(serde_json::json!({"fuzz": format!("decode {krate}"), "cases": o.cases, "seed": o.seed, "wall_s": secs(started)}));
        }
    }
    for line in summary {
        println!("{line}");
    }
    Ok(())
}

fn secs(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 10.0).round() / 10.0
}

/// The fixtures a failed session run left: failures as they are, and the cases
/// in flight when the process died renamed to `crash-…`.
fn leftovers(o: &Options) -> String {
    let Ok(entries) = std::fs::read_dir(&o.out) else {
        return String::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(worker) = name.strip_prefix("current-") {
            let kept = o.out.join(format!("crash-{}-{worker}", o.seed));
            if std::fs::rename(&path, &kept).is_ok() {
                found.push(kept.display().to_string());
            }
        } else if name.starts_with("failure-") {
            found.push(path.display().to_string());
        }
    }
    found.sort();
    if found.is_empty() {
        return String::new();
    }
    format!(
        "fixtures (copy one to a2e-cli/tests/fuzz_regressions/ to keep it as a regression test; a crash-… file is one of the cases in flight when the process died):\n  {}",
        found.join("\n  ")
    )
}
