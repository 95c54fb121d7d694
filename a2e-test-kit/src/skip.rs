//! How a test says it skipped for a missing package: a `SKIPPED:` line on
//! stderr (the test harness shows it only with `--nocapture`), and the same
//! line appended to the file `A2E_SKIP_LOG` names, which `cargo xtask ci`
//! prints at its end so that a run without the packages never looks complete.
//!
//! Tests call it as `a2e_test_kit::skip::skipped("…")`.

use std::io::Write;
use std::path::Path;

/// Reports that the calling test skipped, and why.
pub fn skipped(why: &str) {
    eprintln!("SKIPPED: {why}");
    if let Some(path) = std::env::var_os("A2E_SKIP_LOG") {
        record(Path::new(&path), why);
    }
}

/// Appends `why` as one line to the skip log at `path`.
fn record(path: &Path, why: &str) {
    let line = format!("{why}\n");
    // One write per line: concurrent tests append whole lines.
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(line.as_bytes()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_skip_appends_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skipped.txt");
        record(&log, "nats-server is not installed");
        record(&log, "bubblewrap is not installed");
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text,
            "nats-server is not installed\nbubblewrap is not installed\n"
        );
    }
}
