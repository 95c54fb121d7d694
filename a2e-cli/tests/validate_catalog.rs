//! `a2e validate` and `a2e run` check a chain against the host's catalog
//! under `--config`/`--root` before anything runs: an unknown tool is
//! refused (exit 2) naming it with the closest known name, static arguments
//! are checked against the tool's schema, and `run` starts no node of such
//! a chain (the write before the typo does not happen).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

fn a2e(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2e"))
        .current_dir(dir)
        .args(["--root", "."])
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A chain that writes a file, then calls `second` with `input`.
fn write_then(dir: &Path, second: &str, input: serde_json::Value) {
    let chain = json!({
        "type": "chain/req", "chain_id": "typo", "entry_node": "write",
        "nodes": [
            {"node_id": "write", "kind": "tool", "name": "write_file",
             "input": {"path": "side-effect.txt", "content": "written"}, "next_node": "read"},
            {"node_id": "read", "kind": "tool", "name": second, "input": input}
        ]
    });
    std::fs::write(dir.join("chain.json"), chain.to_string()).unwrap();
}

#[test]
fn an_unknown_tool_is_refused_with_a_suggestion_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    write_then(dir.path(), "read_fil", json!({"path": "side-effect.txt"}));
    let out = a2e(dir.path(), &["validate", "chain.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("node `read` calls tool `read_fil`")
            && said.contains("did you mean `read_file`?")
            && said.contains("unknown_tool"),
        "{said}"
    );
    let out = a2e(dir.path(), &["run", "chain.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("read_fil"), "{}", stderr(&out));
    assert!(
        !dir.path().join("side-effect.txt").exists(),
        "a node ran before the unknown tool was refused"
    );
}

#[test]
fn static_arguments_that_break_the_tools_schema_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_then(dir.path(), "read_file", json!({"path": 5}));
    let out = a2e(dir.path(), &["validate", "chain.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("node `read`: its input does not fit tool `read_file`")
            && said.contains("/path"),
        "{said}"
    );
}

#[test]
fn a_chain_whose_tools_exist_still_validates_and_a_mapped_argument_is_not_required() {
    let dir = tempfile::tempdir().unwrap();
    // `path` comes from the input map, not the static input.
    let chain = json!({
        "type": "chain/req", "chain_id": "ok", "entry_node": "read",
        "initial_input": {"file": "x.txt"},
        "nodes": [{"node_id": "read", "kind": "tool", "name": "read_file",
                   "input_map": {"path": "input.file"}}]
    });
    std::fs::write(dir.path().join("chain.json"), chain.to_string()).unwrap();
    let out = a2e(dir.path(), &["validate", "chain.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let digest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/chains/digest.json");
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace");
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .arg("--root")
        .arg(&workspace)
        .arg("validate")
        .arg(&digest)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn an_unknown_skill_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let chain = json!({
        "type": "chain/req", "chain_id": "s", "entry_node": "s",
        "nodes": [{"node_id": "s", "kind": "skill", "name": "no_such_skill"}]
    });
    std::fs::write(dir.path().join("chain.json"), chain.to_string()).unwrap();
    let out = a2e(dir.path(), &["validate", "chain.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("skill `no_such_skill`, which this host does not offer"),
        "{}",
        stderr(&out)
    );
}
