//! `a2e-conformance plugin`: a2e-plugin's `notes` example and the Python
//! example plugin pass every check; a broken plugin fails, each failure
//! naming the rule it broke.

use std::path::{Path, PathBuf};
use std::time::Duration;

use a2e_test_kit::skip;
use conformance::check::{CheckResult, Status};
use conformance::plugin::PluginOptions;

/// Runs the plugin suite against `command`.
async fn run(command: Vec<String>) -> Vec<CheckResult> {
    let opts = PluginOptions {
        answer_timeout: Duration::from_secs(5),
        ..PluginOptions::default()
    };
    let results = conformance::plugin::run(&command, opts, |_| {}).await;
    results.unwrap_or_else(|e| panic!("{command:?}: {e}"))
}

/// The ids of the checks that did not pass, and every result shown.
fn not_passed(results: &[CheckResult]) -> (Vec<&str>, String) {
    let ids = results
        .iter()
        .filter(|r| !r.passed())
        .map(|r| r.def.id)
        .collect();
    let shown = results
        .iter()
        .map(conformance::report::line)
        .collect::<Vec<_>>()
        .join("\n");
    (ids, shown)
}

/// Whether `python3` runs; when it does not, the test says it skipped.
fn python3(test: &str) -> bool {
    let runs = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !runs {
        skip::skipped(&format!("{test} needs python3"));
    }
    runs
}

/// a2e-plugin's `notes` example binary, which a workspace build (`cargo
/// test --workspace`, `cargo build -p a2e-plugin --example notes`) leaves
/// beside this crate's binaries. `None` (with `SKIPPED`) when there is none;
/// with `CI` set that is a failure.
fn notes_example() -> Option<PathBuf> {
    let me = PathBuf::from(env!("CARGO_BIN_EXE_a2e-conformance"));
    let path = me.with_file_name("examples").join("notes");
    if path.is_file() {
        return Some(path);
    }
    let why = format!(
        "the notes example is not at {} (build it: cargo build -p a2e-plugin --example notes)",
        path.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    skip::skipped(&why);
    None
}

/// A file of the workspace, from this crate's directory.
fn workspace_file(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(path)
        .display()
        .to_string()
}

#[tokio::test]
async fn the_notes_example_passes_every_check() {
    let Some(notes) = notes_example() else { return };
    let results = run(vec![notes.display().to_string()]).await;
    let (failed, shown) = not_passed(&results);
    assert!(failed.is_empty(), "{shown}");
    assert!(results.len() >= 20, "{shown}");
}

#[tokio::test]
async fn the_python_example_passes_every_check() {
    if !python3("the_python_example_passes_every_check") {
        return;
    }
    let plugin = workspace_file("../examples/plugins/wordcount.py");
    let results = run(vec!["python3".into(), plugin]).await;
    let (failed, shown) = not_passed(&results);
    assert!(failed.is_empty(), "{shown}");
}

#[tokio::test]
async fn a_broken_plugin_fails_naming_each_rule_it_breaks() {
    if !python3("a_broken_plugin_fails_naming_each_rule_it_breaks") {
        return;
    }
    let plugin = workspace_file("tests/fixtures/broken_plugin.py");
    let results = run(vec!["python3".into(), plugin]).await;
    let (failed, shown) = not_passed(&results);
    for rule in [
        "plugin.list.definitions",
        "plugin.call.unknown-tool",
        "plugin.garbage.answered",
        "plugin.exit.stdin-closed",
        "plugin.wire.object",
        "plugin.wire.id",
    ] {
        assert!(failed.contains(&rule), "{rule} did not fail:\n{shown}");
    }
    // What it does right passes: the handshake, the listing, a call answered.
    for rule in [
        "plugin.handshake.answered",
        "plugin.list.answered",
        "plugin.call.answered",
        "plugin.garbage.survives",
    ] {
        assert!(!failed.contains(&rule), "{rule} failed:\n{shown}");
    }
    let garbage = results
        .iter()
        .find(|r| r.def.id == "plugin.garbage.answered")
        .map(|r| &r.status);
    assert!(
        matches!(garbage, Some(Status::Failed { expected, .. }) if expected.contains("parse_error")),
        "{shown}"
    );
}

#[tokio::test]
async fn a_plugin_that_cannot_start_is_an_error_not_a_pass() {
    let results = conformance::plugin::run(
        &["/nonexistent/plugin".into()],
        PluginOptions::default(),
        |_| {},
    )
    .await;
    let err = results.unwrap_err();
    assert!(err.contains("cannot start"), "{err}");
}
