//! `cargo xtask tidy`: the checks that run with the workspace's tests.
//! The host's layers are crates (`a2e-host-core` at the bottom, `a2e-host`
//! on top), so cargo keeps their imports pointing down; these checks keep
//! what cargo does not see.

/// `cargo xtask tidy`: fails on a test file no test target compiles, on a
/// path in `ARCHITECTURE.md` that does not exist, on a crate above
/// [`crate::tidy_sizes::MAX_SHARE_PERCENT`] of the workspace's source lines,
/// and on a public function of a library crate that returns
/// `Result<_, String>`.
pub fn run() -> Result<(), String> {
    let orphans = crate::tidy_tests::orphans(&crate::root())?;
    if !orphans.is_empty() {
        for orphan in &orphans {
            eprintln!("{orphan}: compiled by no test target (declare it in the crate's test root)");
        }
        return Err(format!("{} test file(s) never build", orphans.len()));
    }
    let stale = crate::tidy_paths::missing(&crate::root())?;
    if !stale.is_empty() {
        for path in &stale {
            eprintln!("{}:{path} does not exist", crate::tidy_paths::DOC);
        }
        return Err(format!(
            "{} path(s) in {} do not exist",
            stale.len(),
            crate::tidy_paths::DOC
        ));
    }
    let sizes = crate::tidy_sizes::sizes(&crate::workspace_metadata()?)?;
    let large = crate::tidy_sizes::too_large(&sizes);
    for (size, tenths) in &large {
        eprintln!(
            "{}: {} lines, {}.{} % of the workspace's source",
            size.name,
            size.lines,
            tenths / 10,
            tenths % 10
        );
    }
    if !large.is_empty() {
        return Err(format!(
            "{} crate(s) above {} % of the workspace's source lines",
            large.len(),
            crate::tidy_sizes::MAX_SHARE_PERCENT
        ));
    }
    let string_errors = crate::tidy_errors::string_errors(&crate::root())?;
    for found in &string_errors {
        eprintln!("{found}: returns Result<_, String>");
    }
    if !string_errors.is_empty() {
        return Err(format!(
            "{} public function(s) return Result<_, String>",
            string_errors.len()
        ));
    }
    let largest = sizes.first().map_or(String::new(), |s| {
        format!(" (largest: {}, {} lines)", s.name, s.lines)
    });
    eprintln!(
        "tidy: ARCHITECTURE.md's paths exist; no crate above {} % of the source{largest}; \
         no public String errors",
        crate::tidy_sizes::MAX_SHARE_PERCENT
    );
    Ok(())
}
