//! Shared test helpers: finding the packages `.ci/install-mcp.sh` installs.
#![allow(dead_code)]

use a2e_test_kit::ci_tools::dir as tools_dir;
use a2e_test_kit::skip;

use std::path::PathBuf;

/// `path` under the tools dir if it exists. Otherwise: with `CI` set, a
/// panic naming the package; without, a SKIPPED line and `None`.
pub fn need(test: &str, package: &str, relative: &str) -> Option<PathBuf> {
    let path = tools_dir().join(relative);
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{test} needs {package} ({} is missing; run .ci/install-mcp.sh)",
            path.display()
        );
    }
    skip::skipped(&format!("{test} needs {package} (run .ci/install-mcp.sh)"));
    None
}

/// The venv's Python (with the `mcp` SDK).
pub fn python(test: &str) -> Option<PathBuf> {
    need(test, "PyPI mcp", "mcp-venv/bin/python")
}

/// The `mcp-server-time` console script.
pub fn time_server(test: &str) -> Option<PathBuf> {
    need(test, "PyPI mcp-server-time", "mcp-venv/bin/mcp-server-time")
}

/// server-everything's entry point (run with `node`).
pub fn everything(test: &str) -> Option<PathBuf> {
    need(
        test,
        "npm @modelcontextprotocol/server-everything",
        "node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

/// A file in this crate's `tests/` folder.
pub fn test_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

/// Whether a process is gone (no such pid, or a zombie).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Waits (polling, bounded) until `pid` is gone.
pub async fn wait_gone(pid: i32) -> bool {
    for _ in 0..200 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    false
}
