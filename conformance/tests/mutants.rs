//! The checks bite: the `a2e` host behind `a2e-conformance mutant`, which
//! breaks one rule at a time, fails exactly the checks of that rule (besides
//! the host's own expected failures), none of them only skipped.

use crate::support;

use std::collections::BTreeSet;

use conformance::host::Target;
use conformance::profile::SLEEP;
use conformance::runner::Selection;
use conformance::scenario::{Fixture, Transport};

/// Each rule broken, and the checks that must then fail.
const MUTANTS: &[(&str, &[&str])] = &[
    (
        "seq-from-1",
        &[
            "tools.stream.seq",
            "tools.stream.per-request",
            "skills.events.seq",
            "chains.events-seq",
            "proc.read.seq",
        ],
    ),
    (
        "refusal-in-band",
        &[
            "core.error.wrong-shape",
            "tools.call.unknown-tool",
            "tools.schema.missing-required",
            "tools.schema.wrong-type",
            "tools.schema.no-tool-name",
            "tools.schema.no-arguments",
            "tools.schema.arguments-not-object",
        ],
    ),
    ("error-without-req-id", &["core.error.unknown-type-req-id"]),
    (
        "skill-streaming-default-off",
        &["skills.events.default-streaming"],
    ),
    ("chain-streaming-default-off", &["chains.streaming-default"]),
    (
        "echo-wraps-output",
        &[
            "tools.call.data",
            "tools.result.echo-unchanged",
            "tools.concurrent.correlated",
        ],
    ),
    ("echo-flag-flipped", &["tools.def.fixture-flags"]),
    ("sleep-unlisted", &["tools.def.fixtures-listed"]),
    ("echo-truncated", &["tools.result.echo-as-returned"]),
    ("duration-zero", &["tools.result.duration"]),
    (
        "echo-text-optional",
        &["tools.def.fixture-parameters", "tools.list.fixture"],
    ),
    ("echo-tags-dropped", &["tools.def.fixture-tags"]),
    ("version-changed", &["tools.def.fixture-version"]),
    ("toolkit-other", &["tools.def.fixture-toolkit"]),
    (
        "streaming-as-string",
        &[
            "tools.def.fields",
            "tools.served.fields",
            "tools.def.fixture-flags",
            "core.wire.schema",
        ],
    ),
    (
        "exit-code-string",
        &[
            "tools.result.fields",
            "tools.result.echo-as-returned",
            "core.wire.schema",
        ],
    ),
    (
        "failure-message-lost",
        &["tools.result.failure-as-returned"],
    ),
    (
        "list-refused",
        &["tools.served.list", "tools.served.fields"],
    ),
];

/// The checks of every host scenario on stdio that needs `fixture`.
fn needing(fixture: Fixture) -> BTreeSet<String> {
    conformance::host::entries()
        .into_iter()
        .filter(|e| e.on.includes(Transport::Stdio) && e.needs.contains(&fixture))
        .flat_map(|e| e.checks.iter().map(|c| c.id.to_owned()))
        .collect()
}

fn run(rule: &str) {
    run_failing(rule, BTreeSet::new());
}

/// Runs the suite against the mutant `rule`: the checks that fail are the
/// rule's, `also`, and the host's expected failures.
fn run_failing(rule: &str, also: BTreeSet<String>) {
    let Some(a2e) = support::a2e() else { return };
    let (_, breaks) = MUTANTS
        .iter()
        .find(|(r, _)| *r == rule)
        .expect("a known rule");
    let mut command = vec![
        support::me().display().to_string(),
        "mutant".into(),
        "--break".into(),
        rule.into(),
        "--".into(),
    ];
    command.extend(support::stdio_command(&a2e));
    let report = support::run_host(
        Target::Command(command),
        Some(support::TOKEN),
        &Selection::default(),
    );
    let failed: BTreeSet<String> = report
        .results
        .iter()
        .filter(|r| r.failed())
        .map(|r| r.def.id.to_owned())
        .collect();
    let mut want: BTreeSet<String> = breaks.iter().map(|s| (*s).to_owned()).collect();
    want.extend(also);
    want.extend(support::expected("a2e-host-stdio.txt"));
    assert_eq!(
        failed,
        want,
        "{}",
        support::failures(&report.results).join("\n")
    );
}

#[test]
fn events_numbered_from_one_fail_the_seq_checks() {
    run("seq-from-1");
}

#[test]
fn refusals_answered_in_band_fail_the_refusal_checks() {
    run("refusal-in-band");
}

#[test]
fn an_error_without_req_id_fails_the_req_id_check() {
    run("error-without-req-id");
}

#[test]
fn a_skill_streaming_default_of_false_fails_its_check() {
    run("skill-streaming-default-off");
}

#[test]
fn a_chain_streaming_default_of_false_fails_its_check() {
    run("chain-streaming-default-off");
}

#[test]
fn an_echo_that_wraps_its_output_fails_the_data_checks() {
    run("echo-wraps-output");
}

#[test]
fn a_flipped_flag_of_a_fixture_definition_fails_the_flags_check() {
    run("echo-flag-flipped");
}

#[test]
fn a_declared_fixture_missing_while_tools_is_accepted_fails_every_scenario_needing_it() {
    // The host lists the profile's other tools and accepted `tools`: it owes
    // the sleeping tool, so every scenario needing it fails, none is skipped.
    let owed = needing(Fixture::Tool(SLEEP));
    assert!(owed.len() > 10, "{owed:?}");
    run_failing("sleep-unlisted", owed);
}

#[test]
fn a_result_marked_truncated_fails_the_as_returned_check() {
    run("echo-truncated");
}

#[test]
fn a_duration_that_measures_nothing_fails_the_duration_check() {
    run("duration-zero");
}

#[test]
fn a_required_parameter_listed_as_optional_fails_the_parameter_checks() {
    run("echo-text-optional");
}

#[test]
fn a_fixture_listed_without_its_tags_fails_the_tags_check() {
    run("echo-tags-dropped");
}

#[test]
fn a_changed_version_fails_the_version_check() {
    run("version-changed");
}

#[test]
fn another_toolkit_fails_the_toolkit_check() {
    run("toolkit-other");
}

#[test]
fn a_flag_of_the_wrong_type_fails_the_definition_fields_check() {
    run("streaming-as-string");
}

#[test]
fn a_result_field_of_the_wrong_type_fails_the_result_fields_check() {
    run("exit-code-string");
}

#[test]
fn a_failure_that_loses_its_message_fails_the_as_returned_check() {
    run("failure-message-lost");
}

#[test]
fn a_tool_list_refused_though_tools_was_accepted_fails_and_does_not_only_skip() {
    // Listed nothing, the host still offers the profile's skills: it owes
    // every tool fixture, so every scenario needing one fails too.
    let owed: BTreeSet<String> = conformance::profile::declared_tools()
        .into_iter()
        .flat_map(|t| needing(Fixture::Tool(Box::leak(t.name.into_boxed_str()))))
        .collect();
    run_failing("list-refused", owed);
}
