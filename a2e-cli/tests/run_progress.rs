//! `a2e run`'s progress on the real binary: one style for chains, ACMP DAGs
//! and Ontheia chains (a `running` line when a node starts, its state and
//! duration when it ends, one summary line), and `--events` as JSON lines
//! for all three.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn a2e(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(args)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The line of `node` in state `state` (`done     a  DURATION`), if any.
fn line_of<'a>(err: &'a str, state: &str, node: &str) -> Option<&'a str> {
    err.lines().find(|l| {
        let mut words = l.split_whitespace();
        words.next() == Some(state) && words.next() == Some(node)
    })
}

/// Whether a node's `line` ends with a duration (`N ms` or `N.NN s`), maybe
/// followed by `: error`.
fn has_duration(line: &str) -> bool {
    ends_with_duration(line.split(": ").next().unwrap_or_default())
}

/// Whether `text` ends with a duration.
fn ends_with_duration(text: &str) -> bool {
    let mut words = text.rsplit(' ');
    let unit = words.next().unwrap_or_default();
    let number = words.next().unwrap_or_default();
    (unit == "ms" || unit == "s") && number.parse::<f64>().is_ok()
}

/// The JSON lines of `err` (log lines, which start with their time, left out).
fn json_lines(err: &str) -> Vec<Value> {
    err.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_chains_progress_gives_each_node_its_state_and_duration_and_a_summary() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "x").unwrap();
    // a done; b fails (its file is missing) and is skipped over; c done;
    // the branch's other side is skipped.
    let chain = json!({
        "chain_id": "progress", "entry_node": "a",
        "nodes": [
            {"node_id": "a", "kind": "tool", "name": "read_file",
             "input": {"path": "a.txt"}, "next_node": "b"},
            {"node_id": "b", "kind": "tool", "name": "read_file",
             "input": {"path": "missing.txt"}, "on_error": "skip", "next_node": "pick"},
            {"node_id": "pick", "kind": "branch", "condition": "`true`",
             "true_node": "c", "false_node": "d"},
            {"node_id": "c", "kind": "tool", "name": "list_dir", "input": {}},
            {"node_id": "d", "kind": "tool", "name": "list_dir", "input": {}}
        ]
    });
    let file = root.path().join("chain.json");
    std::fs::write(&file, chain.to_string()).unwrap();
    let out = a2e(root.path(), &["run", file.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(line_of(&err, "running", "a").is_some(), "{err}");
    let done = line_of(&err, "done", "a").unwrap_or_else(|| panic!("{err}"));
    assert!(has_duration(done), "{done}");
    let failed = line_of(&err, "failed", "b").unwrap_or_else(|| panic!("{err}"));
    assert!(
        has_duration(failed) && failed.contains("missing.txt"),
        "{failed}"
    );
    assert!(line_of(&err, "done", "c").is_some(), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("chain `progress` succeeded: ") && last.contains(" 1 failed"),
        "{err}"
    );
    assert!(ends_with_duration(last), "{last}");

    // --events: the chain/events as JSON lines, even when the file does not
    // ask for streaming.
    let out = a2e(root.path(), &["run", file.to_str().unwrap(), "--events"]);
    let err = stderr(&out);
    let events = json_lines(&err);
    assert!(!events.is_empty(), "{err}");
    assert!(events.iter().all(|e| e["type"] == "chain/event"), "{err}");
    assert!(
        events
            .iter()
            .any(|e| e["node_id"] == "b" && e["phase"] == "error"),
        "{err}"
    );
}

#[test]
fn a_dags_progress_and_events_have_the_style_of_a_chains() {
    // The example workspace has the skill the DAG's last task needs.
    let root = examples().join("workspace");
    let root = root.as_path();
    let dag = examples().join("dags/text-pipeline.json");
    let out = a2e(root, &["run", dag.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(line_of(&err, "running", "task_split").is_some(), "{err}");
    let done = line_of(&err, "done", "task_split").unwrap_or_else(|| panic!("{err}"));
    assert!(has_duration(done), "{done}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("DAG `dag_text_pipeline` completed: ") && ends_with_duration(last),
        "{err}"
    );

    let out = a2e(root, &["run", dag.to_str().unwrap(), "--events"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let events = json_lines(&err);
    assert!(
        events.iter().any(|e| e["type"] == "chain/event"
            && e["node_id"] == "task_split"
            && e["phase"] == "done"),
        "{err}"
    );
}

#[test]
fn an_ontheia_chains_progress_and_events_have_the_style_of_a_chains() {
    let root = tempfile::tempdir().unwrap();
    let doc = examples().join("ontheia/control-flow.json");
    let doc = doc.to_str().unwrap();
    let out = a2e(root.path(), &["run", doc, "--input", "weather"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(line_of(&err, "running", "gather").is_some(), "{err}");
    let done = line_of(&err, "done", "gather").unwrap_or_else(|| panic!("{err}"));
    assert!(has_duration(done), "{done}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("Ontheia chain succeeded: ") && ends_with_duration(last),
        "{err}"
    );

    let out = a2e(root.path(), &["run", doc, "--input", "weather", "--events"]);
    let err = stderr(&out);
    let events = json_lines(&err);
    assert!(
        events
            .iter()
            .any(|e| e["step_id"] == "gather" && e["event"] == "done"),
        "{err}"
    );
}

#[test]
fn run_and_validate_say_which_documents_they_take() {
    for cmd in ["run", "validate"] {
        let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
            .args([cmd, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        for kind in ["chain", "DAG", "Ontheia"] {
            assert!(help.contains(kind), "{cmd}: {kind}: {help}");
        }
    }
}
