//! `cargo xtask ci`: everything CI checks, in the order that fails fastest.
//! It also checks that the plugin crate stays light (no host-only dependency).

/// The seed of every property test under `cargo xtask ci`.
const PROPTEST_SEED: &str = "0";

/// fmt, clippy, schema drift, tests, the typed-plugin example, docs (broken
/// intra-doc links are errors), every library crate built from its packaged
/// form, and conformance.
pub fn run() -> Result<(), String> {
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
    plugin_crate_is_light()?;
    // Property tests run one fixed sequence of cases in CI, so that a run
    // fails only for a change; `cargo xtask fuzz --seed S` explores others.
    crate::cargo_env(
        &["test", "--workspace", "--all-features"],
        &[("PROPTEST_RNG_SEED", PROPTEST_SEED)],
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

/// Fails when `a2e-plugin` pulls in one of the [`HEAVY`] crates.
fn plugin_crate_is_light() -> Result<(), String> {
    eprintln!("$ cargo tree -p a2e-plugin -e normal");
    let out = std::process::Command::new(crate::cargo_program())
        .args([
            "tree",
            "-p",
            "a2e-plugin",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(crate::root())
        .output()
        .map_err(|e| format!("cannot run cargo tree: {e}"))?;
    if !out.status.success() {
        return Err("`cargo tree -p a2e-plugin` failed".into());
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    let heavy: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| HEAVY.contains(name))
        .collect();
    if heavy.is_empty() {
        Ok(())
    } else {
        Err(format!("a2e-plugin depends on {}", heavy.join(", ")))
    }
}
