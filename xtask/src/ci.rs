//! `cargo xtask ci`: everything CI checks, in the order that fails fastest.

/// fmt, clippy, tests, schema drift, conformance.
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
    crate::cargo(&["test", "--workspace", "--all-features"])?;
    crate::schema::run(true)?;
    crate::conformance::run(&[])
}
