//! `cargo xtask conformance`: the fixture replays, one line each and a
//! closing `N passed, N failed`. With `host …`, `client …` or `list …` it is a
//! front for the `a2e-conformance` binary: it builds it and runs it with
//! those arguments (`--host CMD…` is `host -- CMD…`).

use std::process::Command;

/// The subcommands handed to `a2e-conformance`.
const FORWARDED: &[&str] = &["host", "client", "list", "fixture-plugin", "client-driver"];

/// Runs the fixture replays, or `a2e-conformance` with `args`.
pub fn run(args: &[&str]) -> Result<(), String> {
    match args.first() {
        Some(first) if FORWARDED.contains(first) => forward(args),
        Some(&"--host") => {
            let mut forwarded = vec!["host", "--"];
            forwarded.extend(args.iter().skip(1));
            if forwarded.len() == 2 {
                return Err(
                    "--host needs the host command, e.g. --host target/debug/a2e serve --stdio"
                        .into(),
                );
            }
            forward(&forwarded)
        }
        Some(other) => Err(format!(
            "unknown argument `{other}` (host, client, list, or none for the fixture replays)"
        )),
        None => fixtures(),
    }
}

/// Builds `a2e-conformance` and runs it with `args`.
fn forward(args: &[&str]) -> Result<(), String> {
    crate::cargo(&[
        "build",
        "--quiet",
        "-p",
        "conformance",
        "--bin",
        "a2e-conformance",
    ])?;
    let program = crate::target_dir().join("debug").join("a2e-conformance");
    let status = Command::new(&program)
        .args(args)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "a2e-conformance {} failed ({status})",
            args.join(" ")
        ))
    }
}

/// Replays every conformance fixture.
fn fixtures() -> Result<(), String> {
    let outcomes = conformance::run_all();
    let mut failed = 0usize;
    for outcome in &outcomes {
        if outcome.passed {
            println!("ok     {}", outcome.name);
        } else {
            failed += 1;
            println!("FAILED {}: {}", outcome.name, outcome.detail);
        }
    }
    println!("{} passed, {} failed", outcomes.len() - failed, failed);
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} conformance fixture(s) failed"))
    }
}
