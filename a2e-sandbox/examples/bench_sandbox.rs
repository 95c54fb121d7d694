//! Cost of starting a sandboxed child: runs `true` many times through each
//! layer set and prints one JSON line per variant, with the ratio against a
//! plain `tokio::process::Command` (own process group, cleared environment)
//! measured in the same run.
//!
//! `cargo run --release -p a2e-sandbox --example bench_sandbox [RUNS]`
//!
//! The example is also its own exec wrapper (the hidden subcommand
//! `__sandbox-exec`), the way a host binary wires the crate in.

use std::process::Stdio;
use std::time::{Duration, Instant};

use a2e_bench::report::{emit, round};
use a2e_bench::stats;
use a2e_sandbox::{BubblewrapUse, Policy, RunOptions, Sandbox, SandboxConfig, Wrapper, exec_main};
use serde_json::json;

const SUBCOMMAND: &str = "__sandbox-exec";

fn main() {
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|a| a == SUBCOMMAND) {
        // Before any runtime or thread exists.
        exec_main(args.skip(1));
    }
    let runs: usize = args
        .next()
        .and_then(|a| a.to_str().and_then(|s| s.parse().ok()))
        .unwrap_or(200);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(bench(runs));
}

/// The mean and the median start, in microseconds.
fn stats(samples: &[Duration]) -> (f64, f64) {
    let mut us: Vec<f64> = samples.iter().copied().map(stats::us).collect();
    (stats::mean(&us), stats::median(&mut us))
}

async fn plain(runs: usize, dir: &std::path::Path) -> Vec<Duration> {
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let status = tokio::process::Command::new("true")
            .env_clear()
            .envs(std::env::var_os("PATH").map(|p| ("PATH", p)))
            .current_dir(dir)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .await
            .expect("true");
        assert!(status.status.success());
        out.push(start.elapsed());
    }
    out
}

async fn sandboxed(sb: &Sandbox, policy: &Policy, runs: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let report = sb
            .run(policy, "true", [] as [&str; 0], &RunOptions::default())
            .await
            .expect("run");
        assert!(report.termination.success(), "{:?}", report);
        out.push(start.elapsed());
    }
    out
}

async fn bench(runs: usize) {
    let wrapper = Wrapper::current_exe(SUBCOMMAND).expect("own path");
    let dir = tempfile::tempdir().expect("tempdir");
    let (peer_mean, peer_p50) = stats(&plain(runs, dir.path()).await);
    emit(
        &json!({"bench": "sandbox", "variant": "plain_command", "runs": runs,
        "mean_us": round(peer_mean, 1), "p50_us": round(peer_p50, 1)}),
    );
    let direct = SandboxConfig {
        namespaces: false,
        landlock: false,
        bubblewrap: BubblewrapUse::Never,
        force_user_namespace: false,
    };
    let bwrap = SandboxConfig {
        bubblewrap: BubblewrapUse::Prefer,
        ..SandboxConfig::default()
    };
    let variants: [(&str, SandboxConfig, Policy); 5] = [
        ("wrapper_only", direct, Policy::process(dir.path())),
        (
            "process_policy",
            SandboxConfig::default(),
            Policy::process(dir.path()),
        ),
        (
            "skill_policy",
            SandboxConfig::default(),
            Policy::skill(dir.path()),
        ),
        (
            "skill_policy_user_ns",
            SandboxConfig {
                force_user_namespace: true,
                bubblewrap: BubblewrapUse::Never,
                ..SandboxConfig::default()
            },
            Policy::skill(dir.path()),
        ),
        ("skill_policy_bwrap", bwrap, Policy::skill(dir.path())),
    ];
    for (name, config, policy) in variants {
        let sb = Sandbox::new(wrapper.clone(), config).await.expect("probe");
        let applied = sb.applied(&policy);
        if name.ends_with("bwrap") && !sb.capabilities().bubblewrap.is_available() {
            emit(
                &json!({"bench": "sandbox", "variant": name, "skipped": "bubblewrap unavailable"}),
            );
            continue;
        }
        let (mean, p50) = stats(&sandboxed(&sb, &policy, runs).await);
        emit(&json!({"bench": "sandbox", "variant": name, "runs": runs,
            "mean_us": round(mean, 1), "p50_us": round(p50, 1),
            "ratio_mean_vs_plain": round(mean / peer_mean, 2),
            "containment": format!("{:?}", applied.containment),
            "network": format!("{:?}", applied.network),
            "filesystem": applied.filesystem}));
    }
}
