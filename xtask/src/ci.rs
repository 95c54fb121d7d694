//! `cargo xtask ci`: everything CI checks, in the order that fails fastest.

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
    crate::cargo(&["test", "--workspace", "--all-features"])?;
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
    crate::cargo(&[
        "package",
        "--workspace",
        "--exclude",
        "xtask",
        "--exclude",
        "conformance",
        "--allow-dirty",
        "--quiet",
    ])?;
    // Last: its closing line is the suite's `N passed, N failed`.
    crate::conformance::run(&[])
}
