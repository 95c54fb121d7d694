//! Workspace tasks: `cargo xtask <task>`.
//!
//! - `schema [--check]` writes the JSON Schemas of every wire type under `schemas/`, or
//!   checks that the committed files match the code.
//! - `conformance` replays the spec's wire examples and the negative fixtures, one line each;
//!   `conformance host|client|list …` runs the `a2e-conformance` binary with those arguments.
//! - `bench <name|all>` runs a benchmark in release mode (JSON lines): chain, dag,
//!   transport, mcp, ontheia, repair, memory, llm, sandbox, approvals; `bench structures` measures
//!   the chain engine's own structures against std and foldhash peers.
//! - `fuzz --cases N [--seed S]` runs the hostile-input fuzzers in release mode.
//! - `package` builds every library crate from its packaged form (as CI does).
//! - `ci` runs everything CI runs: fmt, clippy, schema drift, tests, the typed-plugin
//!   example, docs, packaging, conformance.
//!
//! - `tidy` checks that `a2e-host`'s modules import only downward through its layers
//!   (`tidy.rs`), that every path `ARCHITECTURE.md` names exists (`tidy_paths.rs`), that
//!   every test file is compiled and that no library returns `Result<_, String>`; each
//!   check is also a test of this crate, so `cargo test` runs it.

mod bench;
mod ci;
mod conformance;
mod fuzz;
mod package;
mod rust_source;
mod schema;
mod structures;
mod tidy;
mod tidy_errors;
mod tidy_paths;
mod tidy_sizes;
mod tidy_tests;

use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: cargo xtask <task>\n\n\
         tasks:\n  \
         schema [--check]          write (or check) the committed JSON Schemas\n  \
         conformance [host|client|list …]\n                            replay every fixture (or run a2e-conformance)\n  \
         bench <name|all>          run a benchmark (JSON lines; chain, structures,\n                            dag, transport, mcp, ontheia, repair, memory, llm,\n                            sandbox, approvals)\n  \
         fuzz --cases N [--seed S] run the session and decoder fuzzers (release)\n  \
         package                   build each library crate from its package\n  \
         tidy                      check a2e-host's layers, ARCHITECTURE.md's paths,\n                            test files and String errors\n  \
         ci                        fmt, clippy, tests, schema drift, conformance"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let result = match args.first().map(String::as_str) {
        Some("schema") => schema::run(rest.contains(&"--check")),
        Some("conformance") => conformance::run(&rest),
        Some("bench") => bench::run(&rest),
        Some("fuzz") => fuzz::run(&rest),
        Some("package") => package::run(),
        Some("ci") => ci::run(),
        Some("tidy") => tidy::run(),
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate).
pub(crate) fn root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The cargo that runs this task (`$CARGO`), else `cargo` on the path.
pub(crate) fn cargo_program() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Where cargo puts its builds (`CARGO_TARGET_DIR`, else `target/`).
pub(crate) fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// Runs `cargo` with `args` in the workspace root, failing on a non-zero exit.
pub(crate) fn cargo(args: &[&str]) -> Result<(), String> {
    cargo_env(args, &[])
}

/// `cargo metadata` of the workspace's own packages (no dependencies), as JSON.
pub(crate) fn workspace_metadata() -> Result<serde_json::Value, String> {
    let output = std::process::Command::new(cargo_program())
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo metadata` failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata printed no JSON: {e}"))
}

/// [`cargo`] with extra environment variables.
pub(crate) fn cargo_env(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    eprintln!("$ cargo {}", args.join(" "));
    let started = std::time::Instant::now();
    let status = std::process::Command::new(cargo_program())
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    // Each step's time, so a slow CI run shows where it went.
    eprintln!(
        "$ cargo {}: {:.0} s",
        args.first().copied().unwrap_or_default(),
        started.elapsed().as_secs_f64()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}
