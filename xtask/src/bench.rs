//! `cargo xtask bench <name|all>`: benchmarks in release mode, as JSON lines (names in
//! [`BENCHES`], and `structures`). Their statistics come from the `a2e-bench` crate.

const BENCHES: &[(&str, &str, &str)] = &[
    ("chain", "a2e-chain", "bench_chain"),
    ("dag", "acmp-dag", "bench_dag"),
    ("acmp", "a2e-cli", "bench_acmp"),
    ("transport", "a2e-cli", "bench_transport"),
    ("transport", "a2e-client", "bench_client"),
    ("mcp", "a2e-mcp", "bench_mcp"),
    ("ontheia", "ontheia", "bench_ontheia"),
    ("repair", "ontheia", "bench_repair"),
    ("memory", "a2e-memory", "bench_memory"),
    ("llm", "a2e-llm", "bench_llm"),
    ("sandbox", "a2e-sandbox", "bench_sandbox"),
    ("telemetry", "a2e-telemetry", "bench_telemetry"),
    ("cluster", "a2e-journal", "bench_cluster"),
    ("approvals", "a2e-host-approvals", "bench_approvals"),
    ("a2a", "a2e-cli", "bench_a2a"),
];

/// Runs the named benchmarks.
pub fn run(args: &[&str]) -> Result<(), String> {
    let which = args.first().copied().unwrap_or("all");
    if which == "structures" {
        return crate::structures::run(args.get(1..).unwrap_or_default());
    }
    let selected: Vec<_> = BENCHES
        .iter()
        .filter(|(name, _, _)| which == "all" || *name == which)
        .collect();
    if selected.is_empty() {
        let mut names: Vec<&str> = BENCHES.iter().map(|(name, _, _)| *name).collect();
        names.dedup();
        return Err(format!(
            "unknown benchmark `{which}`; choose one of: {}, structures, all",
            names.join(", ")
        ));
    }
    let extra: Vec<&str> = args.iter().skip(1).copied().collect();
    for (_, package, example) in selected {
        let mut cmd = vec![
            "run",
            "--quiet",
            "--release",
            "-p",
            package,
            "--example",
            example,
        ];
        if !extra.is_empty() {
            cmd.push("--");
            cmd.extend(extra.iter().copied());
        }
        crate::cargo(&cmd)?;
    }
    Ok(())
}
