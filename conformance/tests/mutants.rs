//! The checks bite: the `a2e` host behind `a2e-conformance mutant`, which
//! breaks one rule at a time, fails exactly the checks of that rule (besides
//! the host's own expected failures).

use crate::support;

use std::collections::BTreeSet;

use conformance::host::Target;
use conformance::runner::Selection;

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
];

fn run(rule: &str) {
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
