//! The session fuzzer (see `fuzz_support`): a real `Session` on a host with
//! the built-in tools, driven with hostile lines. A few thousand cases run
//! here; `cargo xtask fuzz --cases N [--seed S]` runs `fuzz_many` in release
//! mode for millions, and every failure it finds becomes a fixture in
//! `tests/fuzz_regressions/`, replayed by `regressions_stay_fixed`.

use crate::fuzz_support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use fuzz_support::*;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestRng, TestRunner};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn sessions_answer_every_request_once_under_hostile_input() {
    let _one = EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner());
    install_panic_hook();
    let rt = runtime();
    let fuzz = FuzzHost::new();
    let host = fuzz.host.clone();
    // A fixed seed in CI (reproducible); `cargo xtask fuzz` explores others.
    let seed = env_u64("A2E_FUZZ_SEED").unwrap_or(0);
    let mut runner = TestRunner::new(Config {
        cases: env_u64("A2E_FUZZ_SESSION_CASES").unwrap_or(2_000) as u32,
        failure_persistence: None,
        max_shrink_iters: 200,
        rng_seed: RngSeed::Fixed(seed),
        ..Config::default()
    });
    let result = runner.run(&case_strategy(), |case| {
        rt.block_on(run_case(&host, &case))
            .map_err(|Failure(why)| TestCaseError::fail(why))
    });
    if let Err(e) = result {
        let text = e.to_string();
        let cut: String = text.chars().take(4_000).collect();
        panic!("{cut}");
    }
}

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions")
}

#[test]
fn regressions_stay_fixed() {
    let _one = EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner());
    install_panic_hook();
    let rt = runtime();
    let fuzz = FuzzHost::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(regressions_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no fixtures in {}",
        regressions_dir().display()
    );
    for file in files {
        let case = read_fixture(&std::fs::read_to_string(&file).unwrap());
        assert!(!case.lines.is_empty(), "{}", file.display());
        if let Err(Failure(why)) = rt.block_on(run_case(&fuzz.host, &case)) {
            panic!("{}: {why}", file.display());
        }
    }
}

/// The long run, for `cargo xtask fuzz`: `A2E_FUZZ_CASES` cases (default
/// 100,000) from `A2E_FUZZ_SEED` (default 0), run several at a time, into
/// `A2E_FUZZ_OUT` (default: a temporary directory). Each worker keeps the
/// case it runs in `current-<w>.jsonl`, so a case that kills the process is
/// still on disk; a case that fails is written to `failure-<seed>-<n>.jsonl`.
/// Prints JSON lines: progress, then `{"cases", "seconds", "cases_per_s",
/// "failures"}`.
#[test]
#[ignore = "the long run: cargo xtask fuzz"]
fn fuzz_many() {
    let _one = EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner());
    install_panic_hook();
    let cases = env_u64("A2E_FUZZ_CASES").unwrap_or(100_000);
    let seed = env_u64("A2E_FUZZ_SEED").unwrap_or(0);
    let out = std::env::var_os("A2E_FUZZ_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("a2e-fuzz-{seed}")));
    std::fs::create_dir_all(&out).unwrap();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get() * 2);
    if let Ok(without) = std::env::var("A2E_FUZZ_WITHOUT")
        && !without.is_empty()
    {
        println!("{}", serde_json::json!({ "without": without }));
    }

    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let strategy = case_strategy();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let fuzz = FuzzHost::new();
    let host = fuzz.host.clone();
    let started = Instant::now();
    let failures = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::sync_channel::<(u64, Case)>(workers * 4);
    let rx = Arc::new(std::sync::Mutex::new(rx));
    let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut handles = Vec::new();
    for w in 0..workers {
        let (rx, host, out, failures, done) = (
            rx.clone(),
            host.clone(),
            out.clone(),
            failures.clone(),
            done.clone(),
        );
        let handle = rt.handle().clone();
        handles.push(std::thread::spawn(move || {
            let slot = out.join(format!("current-{w}.jsonl"));
            loop {
                let next = rx.lock().unwrap().recv();
                let Ok((n, case)) = next else { break };
                let mut f = std::fs::File::create(&slot).unwrap();
                f.write_all(write_fixture(&case, &format!("seed {seed}, case {n}")).as_bytes())
                    .unwrap();
                if let Err(Failure(why)) = handle.block_on(run_case(&host, &case)) {
                    failures.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let file = out.join(format!("failure-{seed}-{n}.jsonl"));
                    std::fs::write(&file, write_fixture(&case, &why)).unwrap();
                    println!(
                        "{}",
                        serde_json::json!({"failure": why, "case": n, "fixture": file.display().to_string()})
                    );
                }
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            let _ = std::fs::remove_file(&slot);
        }));
    }
    let mut last_report = Instant::now();
    for n in 0..cases {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        tx.send((n, case)).unwrap();
        if last_report.elapsed().as_secs() >= 10 {
            last_report = Instant::now();
            let d = done.load(std::sync::atomic::Ordering::SeqCst);
            let secs = started.elapsed().as_secs_f64();
            println!(
                "{}",
                serde_json::json!({"progress": d, "of": cases, "seconds": secs.round(), "cases_per_s": (d as f64 / secs).round()})
            );
        }
        if failures.load(std::sync::atomic::Ordering::SeqCst) >= 10 {
            break;
        }
    }
    drop(tx);
    for h in handles {
        h.join().unwrap();
    }
    let d = done.load(std::sync::atomic::Ordering::SeqCst);
    let secs = started.elapsed().as_secs_f64();
    let failed = failures.load(std::sync::atomic::Ordering::SeqCst);
    println!(
        "{}",
        serde_json::json!({"cases": d, "seconds": (secs * 10.0).round() / 10.0, "cases_per_s": (d as f64 / secs).round(), "failures": failed, "seed": seed})
    );
    println!("{}", serde_json::json!({ "answers": answers() }));
    assert_eq!(
        failed,
        0,
        "fixtures of the failures are in {}",
        out.display()
    );
}

/// The classes of the hostile-input report, each over the real binary
/// (`a2e serve --stdio`): the exact answer, and the host alive afterwards.
#[test]
fn hostile_classes_over_the_binary() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use serde_json::{Value, json};

    let root = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--stdio", "--root"])
        .arg(root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let mut send = |msg: Value| {
        let mut line = serde_json::to_vec(&msg).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).unwrap();
        stdin.flush().unwrap();
    };
    let answer = |id: &str| -> Value {
        loop {
            let msg = lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no answer to {id}"));
            let kind = msg["type"].as_str().unwrap_or("");
            if msg["req_id"] == id && !kind.ends_with("event") {
                return msg;
            }
        }
    };

    send(
        json!({"type": "handshake/req", "id": "hs", "agent_id": "t", "agent_caps": ["tools", "skill", "chains"]}),
    );
    let hs = answer("hs");
    // `skill` is accepted though the root has no `skills/` folder.
    let caps = hs["accepted_caps"].as_array().unwrap();
    assert!(
        caps.iter()
            .any(|c| c["capability"] == "skill" && c["enabled"] == true),
        "{hs}"
    );

    let tool = |input_map: Value| json!({"node_id": "t", "kind": "tool", "name": "text_stats", "input": {"text": "a"}, "input_map": input_map});
    let bang = "!".repeat(200_000) + "input";
    let parens = "(".repeat(100_000) + "input" + &")".repeat(100_000);
    let brackets = "input".to_owned() + &"[".repeat(100_000) + &"]".repeat(100_000);
    let bombs = [
        (
            "b1",
            json!({"entry_node": "t", "nodes": [tool(json!({"x": bang}))]}),
            "input_map.x",
        ),
        (
            "b2",
            json!({"entry_node": "b", "nodes": [
            {"node_id": "b", "kind": "branch", "condition": parens, "true_node": "t"}, tool(json!({}))]}),
            "condition",
        ),
        (
            "b3",
            json!({"entry_node": "m", "nodes": [
            {"node_id": "m", "kind": "map", "items_path": brackets, "map_node": "t"}, tool(json!({}))]}),
            "items_path",
        ),
    ];
    for (id, body, field) in bombs {
        let mut req = body;
        req["type"] = json!("chain/req");
        req["id"] = json!(id);
        send(req);
        let e = answer(id);
        assert_eq!(e["type"], "error", "{id}");
        assert_eq!(e["code"], "schema_violation", "{id}");
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(field), "{id}: {message}");
        assert!(
            message.contains("the limit is 4096") || message.contains("deeper than 64"),
            "{id}: {message}"
        );
    }

    // Absurd chain, node and item timeouts: clamped, answered.
    send(
        json!({"type": "chain/req", "id": "t1", "entry_node": "t", "timeout": u64::MAX,
        "nodes": [{"node_id": "t", "kind": "tool", "name": "text_stats", "input": {"text": "a b", "timeout": 1e300}}]}),
    );
    let resp = answer("t1");
    assert_eq!(resp["type"], "chain/resp", "{resp}");
    assert_eq!(resp["success"], true, "{resp}");

    // Skills with no skill plugin: an empty list, and unknown_skill.
    send(json!({"type": "skill/discover/req", "id": "d1"}));
    let d = answer("d1");
    assert_eq!(d["type"], "skill/discover/resp", "{d}");
    assert_eq!(d["skills"], json!([]));
    send(json!({"type": "skill/call/req", "id": "d2", "name": "nope", "arguments": {}}));
    let e = answer("d2");
    assert_eq!(e["code"], "unknown_skill", "{e}");

    send(json!({"type": "ping", "id": "alive"}));
    assert_eq!(answer("alive")["type"], "pong");
    assert!(
        child.try_wait().unwrap().is_none(),
        "the host is still running"
    );
    let _ = child.kill();
    let _ = child.wait();
}
