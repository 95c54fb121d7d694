//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::collections::BTreeMap;

use conformance::Outcome;
use serde_json::Value;

/// `fixtures/pending.json`.
pub fn pending() -> BTreeMap<String, String> {
    conformance::pending().expect("pending.json loads")
}

/// Panics listing every failed outcome that `pending.json` does not excuse.
pub fn assert_passed(outcomes: &[Outcome]) {
    let pending = pending();
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed && !pending.contains_key(&o.name))
        .map(ToString::to_string)
        .collect();
    assert!(failed.is_empty(), "failed:\n{}", failed.join("\n"));
}

/// Snapshots `value` as `tests/snapshots/<name>.snap` (also read by `run_all`).
pub fn assert_snapshot(name: &str, value: &Value) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(conformance::fixtures::snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_json_snapshot!(name, value));
}
