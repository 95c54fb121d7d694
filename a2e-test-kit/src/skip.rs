//! How a test says it skipped for a missing package: a `SKIPPED:` line on
//! stderr (the test harness shows it only with `--nocapture`), and the same
//! line appended to the file `A2E_SKIP_LOG` names, which `cargo xtask ci`
//! prints at its end so that a run without the packages never looks complete.
//!
//! Test files include it with `#[path = "…/test-support/skip.rs"] mod skip;`.

use std::io::Write;

/// Reports that the calling test skipped, and why.
pub fn skipped(why: &str) {
    eprintln!("SKIPPED: {why}");
    if let Some(path) = std::env::var_os("A2E_SKIP_LOG") {
        let line = format!("{why}\n");
        // One write per line: concurrent tests append whole lines.
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| file.write_all(line.as_bytes()));
    }
}
