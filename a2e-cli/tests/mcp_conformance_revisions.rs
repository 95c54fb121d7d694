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

use mcp_conformance_support::{everything_example, plain_host, run_with_status, start, suite_in};

/// The protocol revisions the 0.2 line freezes requirement sets for.
const REVISIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// Where `.ci/install-mcp-conformance.sh` puts the 0.2 line.
const NEXT: &str = "mcp-conformance-0.2";

/// The baseline of `side` (`server`, `client`, `host`) at `revision`.
fn baseline(side: &str, revision: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/expected-failures")
        .join(format!("{side}-{revision}.yaml"))
}

/// Runs the suite (`node`, `entry`) with `args` against `expected`; the
/// suite's output when something fails outside the baseline or an entry of
/// it passes.
fn outside_baseline(
    node: &Path,
    entry: &Path,
    args: &[&str],
    expected: &Path,
    envs: &[(&str, &str)],
) -> Option<String> {
    let mut args = args.to_vec();
    args.extend(["--expected-failures", expected.to_str().unwrap()]);
    let (ok, output, _) = run_with_status(node, entry, &args, envs);
    (!ok).then_some(output)
}

/// Fails naming the scenario runs (`failing`: each with the suite's output)
/// that went outside baseline `expected`.
fn held_to(expected: &Path, failing: &[String]) {
    assert!(
        failing.is_empty(),
        "outside {} or stale in it:\n{}",
        expected.display(),
        failing.join("\n")
    );
}

#[test]
fn the_server_meets_each_revisions_requirements_but_its_baseline() {
    let test = "the_server_meets_each_revisions_requirements_but_its_baseline";
    let Some((node, entry)) = suite_in(test, NEXT) else {
        return;
    };
    for revision in REVISIONS {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("notes.md"), "# Notes\n").unwrap();
        let mut cmd = Command::new(everything_example());
        cmd.arg("--root").arg(root.path());
        let server = start(cmd);
        let expected = baseline("server", revision);
        let args = ["server", "--url", &server.url, "--requirements", revision];
        if let Some(output) = outside_baseline(&node, &entry, &args, &expected, &[]) {
            panic!(
                "server, requirements {revision}: outside {} or stale in it\n{output}",
                expected.display()
            );
        }
    }
}

#[test]
fn the_client_meets_each_revisions_requirements_but_its_baseline() {
    let test = "the_client_meets_each_revisions_requirements_but_its_baseline";
    let Some((node, entry)) = suite_in(test, NEXT) else {
        return;
    };
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/conformance_client.sh");
    let envs = [("A2E_BIN", env!("CARGO_BIN_EXE_a2e"))];
    for revision in REVISIONS {
        let expected = baseline("client", revision);
        let args = [
            "client",
            "--command",
            driver.to_str().unwrap(),
            "--requirements",
            revision,
        ];
        if let Some(output) = outside_baseline(&node, &entry, &args, &expected, &envs) {
            panic!(
                "client, requirements {revision}: outside {} or stale in it\n{output}",
                expected.display()
            );
        }
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
    let Some((node, entry)) = suite_in(test, NEXT) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let server = plain_host(root.path());
    let expected = baseline("host", "2026-07-28");
    let failing: Vec<String> = HOST_GENERIC_2026
        .iter()
        .filter_map(|scenario| {
            let args = [
                "server",
                "--url",
                &server.url,
                "--scenario",
                scenario,
                "--spec-version",
                "2026-07-28",
            ];
            outside_baseline(&node, &entry, &args, &expected, &[])
                .map(|output| format!("{scenario}\n{output}"))
        })
        .collect();
    held_to(&expected, &failing);
}

/// The scenarios of 2026-07-28 the suite runs but does not score, by side:
/// extensions (tasks, the client's other grants and DPoP), those added after
/// the release and those pending. Each is run alone against its baseline.
const UNSCORED_2026: [(&str, &str); 20] = [
    ("server", "tasks-lifecycle"),
    ("server", "tasks-capability-negotiation"),
    ("server", "tasks-wire-fields"),
    ("server", "tasks-request-state-removal"),
    ("server", "tasks-mrtr-input"),
    ("server", "tasks-request-headers"),
    ("server", "tasks-dispatch-and-envelope"),
    ("server", "tasks-status-notifications"),
    ("server", "tasks-required-task-error"),
    ("server", "tasks-mrtr-composition"),
    ("server", "json-schema-2020-12"),
    ("server", "http-header-validation"),
    ("server", "http-custom-header-server-validation"),
    ("client", "auth/client-credentials-jwt"),
    ("client", "auth/client-credentials-basic"),
    ("client", "auth/enterprise-managed-authorization"),
    ("client", "auth/dpop"),
    ("client", "auth/dpop-nonce"),
    ("client", "auth/wif-jwt-bearer"),
    ("client", "json-schema-2020-12-preservation"),
];

#[test]
fn the_unscored_scenarios_of_2026_07_28_hold_to_their_baseline() {
    let test = "the_unscored_scenarios_of_2026_07_28_hold_to_their_baseline";
    let Some((node, entry)) = suite_in(test, NEXT) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.md"), "# Notes\n").unwrap();
    let mut cmd = Command::new(everything_example());
    cmd.arg("--root").arg(root.path());
    let server = start(cmd);
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/conformance_client.sh");
    let envs = [("A2E_BIN", env!("CARGO_BIN_EXE_a2e"))];
    let expected = baseline("unscored", "2026-07-28");
    let failing: Vec<String> = UNSCORED_2026
        .iter()
        .filter_map(|(side, scenario)| {
            let target = match *side {
                "server" => ["--url", server.url.as_str()],
                _ => ["--command", driver.to_str().unwrap()],
            };
            // `--force`: an extension is not on the revision's timeline, and
            // the suite skips it at a version without.
            let args = [
                side,
                target[0],
                target[1],
                "--scenario",
                scenario,
                "--spec-version",
                "2026-07-28",
                "--force",
            ];
            outside_baseline(&node, &entry, &args, &expected, &envs)
                .map(|output| format!("{side} {scenario}\n{output}"))
        })
        .collect();
    held_to(&expected, &failing);
}
