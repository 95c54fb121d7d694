//! `a2e graph` on the real binary: every example drawn in each format, the
//! SVG read back as XML, `--out` and the format from its extension, and an
//! invalid document refused with the words and exit code of `a2e validate`;
//! `--run` colouring the nodes by what the run journal says.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// `a2e ARGS` in `dir` (no configuration: `graph` needs none).
fn a2e(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2e"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn the_digest_chain_is_drawn_as_svg_with_its_nodes_and_edges() {
    let dir = tempfile::tempdir().unwrap();
    let digest = examples().join("chains/digest.json");
    let out = a2e(
        dir.path(),
        &["graph", digest.to_str().unwrap(), "--format", "svg"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let svg = text(&out.stdout);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let class_count = |prefix: &str| {
        doc.descendants()
            .filter(|n| n.has_tag_name("g"))
            .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with(prefix)))
            .count()
    };
    // 7 nodes; 6 edges: next, true, false, each, and two reads.
    assert_eq!(class_count("node "), 7);
    assert_eq!(class_count("edge "), 6);
    let ids: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("data-node-id"))
        .collect();
    assert_eq!(
        ids,
        [
            "find",
            "read_all",
            "read",
            "todos",
            "check",
            "report_todos",
            "report_clean"
        ]
    );
}

#[test]
fn every_example_is_drawn_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["chains", "dags", "ontheia"] {
        for entry in std::fs::read_dir(examples().join(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            for (format, starts) in [("mermaid", "%% "), ("dot", "digraph "), ("svg", "<svg ")] {
                let out = a2e(
                    dir.path(),
                    &["graph", path.to_str().unwrap(), "--format", format],
                );
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{}: {}",
                    path.display(),
                    text(&out.stderr)
                );
                assert!(text(&out.stdout).starts_with(starts), "{}", path.display());
            }
        }
    }
}

#[test]
fn out_writes_the_file_in_the_format_its_extension_names() {
    let dir = tempfile::tempdir().unwrap();
    let dag = examples().join("dags/text-pipeline.json");
    let dot = dir.path().join("pipeline.dot");
    let out = a2e(
        dir.path(),
        &[
            "graph",
            dag.to_str().unwrap(),
            "--out",
            dot.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&dot).unwrap();
    assert!(
        written.starts_with("digraph \"DAG dag_text_pipeline\" {"),
        "{written}"
    );
    assert_eq!(written.matches(" -> ").count(), 6);
    // Without --format or --out: Mermaid on stdout.
    let out = a2e(dir.path(), &["graph", dag.to_str().unwrap()]);
    assert!(text(&out.stdout).contains("flowchart TD"));
    // An unknown format is refused by the parser.
    let out = a2e(
        dir.path(),
        &["graph", dag.to_str().unwrap(), "--format", "png"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown format `png`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_invalid_document_is_refused_as_validate_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "cycle.json",
            r#"{"entry_node": "a", "nodes": [
                {"node_id": "a", "kind": "tool", "name": "t", "input_map": {"x": "b.output"}},
                {"node_id": "b", "kind": "tool", "name": "t", "input_map": {"y": "a.output"}}]}"#,
            "chain has a cycle",
        ),
        (
            "dag.json",
            r#"{"dag_id": "d", "tasks": [
                {"task_id": "a", "capability": "c", "input": {"source": {"from_task": "z"}}}],
                "edges": []}"#,
            "invalid DAG: ",
        ),
        ("none.json", r#"{"foo": 1}"#, "not a document the host runs"),
        (
            "loop.json",
            r#"{"steps": [{"id": "l", "type": "loop", "count": 99, "steps": []}]}"#,
            "not a valid Ontheia chain",
        ),
    ];
    for (name, doc, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, doc).unwrap();
        let graph = a2e(dir.path(), &["graph", path.to_str().unwrap()]);
        let validate = a2e(
            dir.path(),
            &[
                "validate",
                path.to_str().unwrap(),
                "--root",
                dir.path().to_str().unwrap(),
            ],
        );
        assert_eq!(graph.status.code(), Some(2), "{name}");
        assert_eq!(validate.status.code(), Some(2), "{name}");
        let said = text(&graph.stderr);
        assert!(said.contains(expected), "{name}: {said}");
        assert_eq!(said, text(&validate.stderr), "{name}");
        assert!(graph.stdout.is_empty(), "{name}");
    }
    let missing = a2e(dir.path(), &["graph", "no-such-file.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).starts_with("a2e: no-such-file.json: "));
}

/// A run journaled as the host journals one: `a` done, `b` failed, `c`
/// skipped, `d` not reached.
async fn journal_a_run(root: &Path, chain: &serde_json::Value) -> String {
    use a2e_journal::{Journal, NewRun, NodeKey, NodeOutcome, RunId, RunKind, RunStatus};
    let config = a2e_host::HostConfig {
        root: root.to_owned(),
        ..a2e_host::HostConfig::default()
    };
    let path = config.journal_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let journal = a2e_journal::SqliteJournal::open(&path, Default::default())
        .await
        .unwrap();
    let run = RunId::generate();
    journal
        .create_run(NewRun {
            run_id: run.clone(),
            kind: RunKind::Chain,
            agent: "agent".into(),
            request: chain.clone(),
        })
        .await
        .unwrap();
    let key = |node: &str| NodeKey::new(run.clone(), node, 1).unwrap();
    let events = [
        ("a", "start"),
        ("a", "done"),
        ("b", "start"),
        ("b", "error"),
        ("c", "skip"),
    ];
    for (seq, (node, phase)) in events.iter().enumerate() {
        if *phase == "start" {
            journal.node_started(&key(node)).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        }
        if *phase == "done" {
            let output = NodeOutcome::output(serde_json::json!({"ok": true}));
            journal.node_finished(&key(node), &output).await.unwrap();
        }
        if *phase == "error" {
            let error = NodeOutcome::error("tool_error", "it broke");
            journal.node_finished(&key(node), &error).await.unwrap();
        }
        let event =
            serde_json::json!({"type": "chain/event", "node_id": node, "phase": phase, "seq": seq});
        journal
            .append_event(&run, seq as u64, &event)
            .await
            .unwrap();
    }
    let answer = serde_json::json!({"type": "chain/resp", "success": false});
    journal
        .finish_run(&run, RunStatus::Failed, &answer)
        .await
        .unwrap();
    journal.flush().await.unwrap();
    run.to_string()
}

#[tokio::test]
async fn a_run_from_the_journal_colours_the_nodes_and_labels_their_durations() {
    let dir = tempfile::tempdir().unwrap();
    let chain = serde_json::json!({
        "type": "chain/req", "id": "r1", "chain_id": "four", "entry_node": "a",
        "nodes": [
            {"node_id": "a", "kind": "tool", "name": "echo", "next_node": "b"},
            {"node_id": "b", "kind": "tool", "name": "echo", "next_node": "c", "on_error": "skip"},
            {"node_id": "c", "kind": "tool", "name": "echo", "next_node": "d"},
            {"node_id": "d", "kind": "tool", "name": "echo"}
        ]
    });
    let file = dir.path().join("four.json");
    std::fs::write(&file, chain.to_string()).unwrap();
    let run = journal_a_run(dir.path(), &chain).await;
    let root = dir.path().to_str().unwrap();
    let file = file.to_str().unwrap();

    let out = a2e(
        dir.path(),
        &[
            "graph", file, "--format", "dot", "--run", &run, "--root", root,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let dot = text(&out.stdout);
    let label = |node: &str| {
        let start = dot
            .find(&format!("label=\"{node}\\n"))
            .unwrap_or_else(|| panic!("{dot}"));
        let rest = &dot[start..];
        rest[..rest.find("\"]").unwrap_or(rest.len())].to_owned()
    };
    assert!(
        label("a").contains("done · ") && label("a").contains(" ms"),
        "{}",
        label("a")
    );
    assert!(label("b").contains("failed · "), "{}", label("b"));
    assert!(label("c").contains("skipped"), "{}", label("c"));
    assert!(label("d").contains("not-reached"), "{}", label("d"));

    let out = a2e(
        dir.path(),
        &[
            "graph", file, "--format", "svg", "--run", &run, "--root", root,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let svg = text(&out.stdout);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let states: Vec<(&str, &str)> = doc
        .descendants()
        .filter_map(|n| Some((n.attribute("data-node-id")?, n.attribute("data-state")?)))
        .collect();
    assert_eq!(
        states,
        [
            ("a", "done"),
            ("b", "failed"),
            ("c", "skipped"),
            ("d", "not-reached")
        ]
    );

    // An unknown run, an invalid id, no journal: refused with a message.
    let other = a2e_journal::RunId::generate().to_string();
    let out = a2e(
        dir.path(),
        &["graph", file, "--run", &other, "--root", root],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no run"),
        "{}",
        text(&out.stderr)
    );
    let out = a2e(
        dir.path(),
        &["graph", file, "--run", "../x", "--root", root],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let empty = tempfile::tempdir().unwrap();
    let empty_root = empty.path().to_str().unwrap();
    let out = a2e(
        dir.path(),
        &["graph", file, "--run", &run, "--root", empty_root],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no run journal at"),
        "{}",
        text(&out.stderr)
    );
}
