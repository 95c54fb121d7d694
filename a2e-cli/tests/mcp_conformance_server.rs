//! The official MCP conformance suite against the host as an MCP server:
//! every server scenario (`--suite all`) against the host with the example
//! plugin set (`examples/mcp-everything`), and the scenarios any host passes
//! against a plain `a2e serve --mcp-http --root …`. No expected failures: a
//! failing scenario fails the test, and every scenario's result is printed.

use crate::mcp_conformance_support;

use std::process::Command;

use mcp_conformance_support::{Outcome, everything_example, plain_host, run, start, suite};

fn assert_all_pass(outcomes: &[Outcome], expected: &[&str], output: &str) {
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.failed > 0).collect();
    assert!(failed.is_empty(), "failing scenarios: {failed:?}\n{output}");
    for name in expected {
        assert!(
            outcomes.iter().any(|o| o.scenario == *name && o.passed > 0),
            "scenario {name} did not run\n{output}"
        );
    }
}

/// Every server scenario of the suite.
const ALL: [&str; 32] = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
];

#[test]
fn every_server_scenario_passes_with_the_example_plugin_set() {
    let Some((node, entry)) = suite("every_server_scenario_passes_with_the_example_plugin_set")
    else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.md"), "# Notes\n").unwrap();
    let mut cmd = Command::new(everything_example());
    cmd.arg("--root").arg(root.path());
    let server = start(cmd);
    let (output, outcomes) = run(
        &node,
        &entry,
        &["server", "--url", &server.url, "--suite", "all"],
        &[],
    );
    assert_all_pass(&outcomes, &ALL, &output);
    assert_eq!(outcomes.len(), ALL.len(), "{output}");
}

/// What any host passes, with only the built-ins.
const HOST_GENERIC: [&str; 7] = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "logging-set-level",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

#[test]
fn the_host_generic_scenarios_pass_against_a_plain_host() {
    let Some((node, entry)) = suite("the_host_generic_scenarios_pass_against_a_plain_host") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let server = plain_host(root.path());
    let mut all = Vec::new();
    let mut output = String::new();
    for scenario in HOST_GENERIC {
        let (text, outcomes) = run(
            &node,
            &entry,
            &["server", "--url", &server.url, "--scenario", scenario],
            &[],
        );
        output.push_str(&text);
        all.extend(outcomes);
    }
    assert_all_pass(&all, &HOST_GENERIC, &output);
}
