//! `cargo xtask ci`: everything CI checks, in the order that fails fastest.
//! It also checks that the plugin crate and the host without its features stay
//! light (no store, MCP, model client or sandbox crate), that the host's
//! imports point down its layers, and that its features are additive (it
//! builds with none, each alone, and all).

/// The seed of every property test under `cargo xtask ci`.
const PROPTEST_SEED: &str = "0";

/// fmt, clippy, schema drift, tests, the typed-plugin example, docs (broken
/// intra-doc links are errors), every library crate built from its packaged
/// form, and conformance.
pub fn run() -> Result<(), String> {
    let skip_log = crate::root().join("target").join("ci-skipped.txt");
    let _ = std::fs::remove_file(&skip_log);
    let outcome = checks(&skip_log.to_string_lossy());
    print_skipped(&skip_log);
    outcome
}

/// Every check in order; tests report skips to the file `skip_log`.
fn checks(skip_log: &str) -> Result<(), String> {
    crate::cargo(&["fmt", "--all", "--", "--check"])?;
    crate::cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ])?;
    crate::schema::run(true)?;
    crate::tidy::run()?;
    is_light(&["-p", "a2e-plugin"], HEAVY)?;
    is_light(&["-p", "a2e-host", "--no-default-features"], HOST_HEAVY)?;
    // The host without its features builds, passes clippy and its own tests.
    crate::cargo(&[
        "clippy",
        "-p",
        "a2e-host",
        "-p",
        "a2e-host-core",
        "--no-default-features",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    crate::cargo(&[
        "test",
        "-p",
        "a2e-host",
        "-p",
        "a2e-host-core",
        "--no-default-features",
        "--lib",
    ])?;
    feature_matrix("a2e-host")?;
    // A user may depend on one crate of the host alone: each builds, and
    // passes clippy, without its default features.
    for package in HOST_CRATES {
        crate::cargo(&[
            "clippy",
            "-p",
            package,
            "--no-default-features",
            "--",
            "-D",
            "warnings",
        ])?;
    }
    // Property tests run one fixed sequence of cases in CI, so that a run
    // fails only for a change; `cargo xtask fuzz --seed S` explores others.
    crate::cargo_env(
        &["test", "--workspace", "--all-features"],
        &[
            ("PROPTEST_RNG_SEED", PROPTEST_SEED),
            ("A2E_SKIP_LOG", skip_log),
        ],
    )?;
    crate::cargo(&[
        "run",
        "--quiet",
        "-p",
        "a2e-host",
        "--example",
        "custom_plugin",
    ])?;
    crate::cargo_env(
        &["doc", "--workspace", "--no-deps", "--all-features"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    crate::package::run()?;
    // Last: its closing line is the suite's `N passed, N failed`.
    crate::conformance::run(&[])
}

/// `package` checked with no features, each feature of its `[features]`
/// alone, and all of them: a feature that needs another it does not enable,
/// or code that compiles only beside some feature, fails here. Clippy with
/// `-D warnings` rather than `cargo check`, at the same cost: a combination
/// that only warns (an import or a `mut` another feature uses) fails too.
fn feature_matrix(package: &str) -> Result<(), String> {
    let features = features_of(package)?;
    let started = std::time::Instant::now();
    let check = |selection: &[&str]| {
        let lint = ["--", "-D", "warnings"];
        crate::cargo(&[&["clippy", "-p", package], selection, &lint[..]].concat())
    };
    check(&["--no-default-features"])?;
    for feature in &features {
        check(&["--no-default-features", "--features", feature.as_str()])?;
    }
    check(&["--all-features"])?;
    eprintln!(
        "$ features of {package} (none, {} alone, all): {:.0} s",
        features.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The features `package` declares, but `default`, in name order.
fn features_of(package: &str) -> Result<Vec<String>, String> {
    let metadata = crate::workspace_metadata()?;
    let found = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == package)
        .ok_or_else(|| format!("no package `{package}` in the workspace"))?;
    let mut features: Vec<String> = found["features"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, _)| name.clone())
        .filter(|name| name != "default")
        .collect();
    features.sort();
    Ok(features)
}

/// Prints the tests that skipped for a missing package (the harness swallows
/// their `SKIPPED:` lines), so that a run without them never looks complete.
fn print_skipped(skip_log: &std::path::Path) {
    let text = std::fs::read_to_string(skip_log).unwrap_or_default();
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    lines.sort_unstable();
    lines.dedup();
    if lines.is_empty() {
        eprintln!("no test skipped");
        return;
    }
    eprintln!("{} skipped for a missing package or setting:", lines.len());
    for line in lines {
        eprintln!("  SKIPPED: {line}");
    }
}

/// Crates a plugin author must not have to compile: `a2e-plugin`'s normal
/// dependency tree holds none of them.
const HEAVY: &[&str] = &[
    "rusqlite",
    "rmcp",
    "axum",
    "reqwest",
    "hyper",
    "landlock",
    "tokio-tungstenite",
    "jsonschema",
    "clap",
];

/// The crates of the host below `a2e-host`, which `a2e-host`'s features
/// reach only together.
const HOST_CRATES: &[&str] = &[
    "a2e-host-core",
    "a2e-host-ontheia",
    "a2e-host-acmp",
    "a2e-host-mcp",
    "a2e-host-runs",
    "a2e-host-skills",
    "a2e-host-approvals",
    "a2e-host-serve",
    "a2e-host-a2a",
];

/// What `a2e-host` without its default features (the embeddable runtime)
/// must not compile: the stores, MCP, the sandbox and the command line. (Its
/// `http_request` tool sends with reqwest, the client every crate shares.)
const HOST_HEAVY: &[&str] = &["rusqlite", "rmcp", "landlock", "clap", "a2e-llm"];

/// Fails when the package `selection` names (`-p NAME` and flags) pulls in
/// one of the `heavy` crates through its normal dependencies.
fn is_light(selection: &[&str], heavy: &[&str]) -> Result<(), String> {
    let shown = selection.join(" ");
    eprintln!("$ cargo tree {shown} -e normal");
    let out = std::process::Command::new(crate::cargo_program())
        .arg("tree")
        .args(selection)
        .args(["-e", "normal", "--prefix", "none"])
        .current_dir(crate::root())
        .output()
        .map_err(|e| format!("cannot run cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(format!("`cargo tree {shown}` failed"));
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    let found: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| heavy.contains(name))
        .collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!("{shown} depends on {}", found.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crate_of_the_host_is_checked_alone() {
        let metadata = crate::workspace_metadata().unwrap();
        let mut found: Vec<String> = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["name"].as_str())
            .filter(|name| name.starts_with("a2e-host-"))
            .map(str::to_owned)
            .collect();
        found.sort();
        let mut listed: Vec<String> = HOST_CRATES.iter().map(|s| (*s).to_owned()).collect();
        listed.sort();
        assert_eq!(found, listed);
    }
}
