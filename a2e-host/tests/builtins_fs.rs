//! File built-ins: confinement, read slices and caps, atomic writes, listing,
//! glob and grep.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::sync::Arc;

use a2e_host::builtins;
use a2e_host::plugin::{CallContext, ToolOutput, ToolPlugin};
use a2e_host::{CallOptions, Host, HostConfig, HostError, HostResult};
use a2e_proto::{ErrorCode, ToolCallRequest};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

fn config(root: &Path) -> HostConfig {
    HostConfig {
        root: root.to_path_buf(),
        ..HostConfig::default()
    }
}

async fn call_with(config: HostConfig, tool: &str, args: Value) -> HostResult<ToolOutput> {
    let tools = builtins::tools(Arc::new(config));
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    tools.call(tool, args, CallContext::detached()).await
}

async fn call(root: &Path, tool: &str, args: Value) -> HostResult<ToolOutput> {
    call_with(config(root), tool, args).await
}

fn assert_escape(result: HostResult<ToolOutput>) {
    match result {
        Err(HostError::Denied(m)) => assert!(m.contains("escapes the workspace root"), "{m}"),
        other => panic!("expected a denial, got {other:?}"),
    }
}

fn entry_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn read_file_whole_slice_and_past_the_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello world").unwrap();

    let out = call(dir.path(), "read_file", json!({"path": "a.txt"}))
        .await
        .unwrap();
    assert_eq!(out.data["content"], "hello world");
    assert_eq!(out.data["size"], 11);
    assert_eq!(out.data["bytes_read"], 11);
    assert_eq!(out.data["encoding"], "utf-8");
    assert!(!out.truncated);

    let out = call(
        dir.path(),
        "read_file",
        json!({"path": "a.txt", "offset": 6, "limit": 3}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["content"], "wor");
    assert_eq!(out.data["offset"], 6);
    assert_eq!(out.data["bytes_read"], 3);
    assert!(out.truncated, "more bytes follow the slice");

    let out = call(
        dir.path(),
        "read_file",
        json!({"path": "a.txt", "offset": 6, "limit": 100}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["content"], "world");
    assert!(!out.truncated);

    let out = call(
        dir.path(),
        "read_file",
        json!({"path": "a.txt", "offset": 50}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["content"], "");
    assert_eq!(out.data["bytes_read"], 0);
}

#[tokio::test]
async fn read_file_is_capped_by_the_host_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), "0123456789").unwrap();
    let mut cfg = config(dir.path());
    cfg.files.read_max_bytes = 4;
    let out = call_with(cfg, "read_file", json!({"path": "big.txt", "limit": 1000}))
        .await
        .unwrap();
    assert_eq!(out.data["content"], "0123");
    assert_eq!(out.data["size"], 10);
    assert!(out.truncated);
    assert_eq!(out.data["truncated"], true);
}

#[tokio::test]
async fn read_file_does_not_split_a_character_and_labels_invalid_utf8() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("u.txt"), "aé!").unwrap();
    let out = call(
        dir.path(),
        "read_file",
        json!({"path": "u.txt", "limit": 2}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["content"], "a");
    assert_eq!(
        out.data["bytes_read"], 1,
        "the cut backs off to a char boundary"
    );

    std::fs::write(dir.path().join("bin"), [b'a', 0xff, b'b']).unwrap();
    let out = call(dir.path(), "read_file", json!({"path": "bin"}))
        .await
        .unwrap();
    assert_eq!(out.data["content"], "a\u{fffd}b");
    assert_eq!(out.data["encoding"], "utf-8-lossy");

    let out = call(
        dir.path(),
        "read_file",
        json!({"path": "bin", "encoding": "base64"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["content"], "Yf9i");
    assert_eq!(out.data["encoding"], "base64");
}

#[tokio::test]
async fn read_file_errors_for_directories_and_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let err = call(dir.path(), "read_file", json!({"path": "sub"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, HostError::Tool(m) if m.contains("directory")),
        "{err:?}"
    );
    let err = call(dir.path(), "read_file", json!({"path": "nope.txt"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, HostError::Tool(m) if m.contains("does not exist")),
        "{err:?}"
    );
}

#[tokio::test]
async fn escapes_are_denied_for_every_file_tool() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    symlink(outside.path(), dir.path().join("link-out")).unwrap();
    symlink(
        outside.path().join("secret.txt"),
        dir.path().join("secret-link"),
    )
    .unwrap();
    let abs_outside = outside.path().join("secret.txt");
    let abs_outside = abs_outside.to_str().unwrap();

    for path in [
        "../secret.txt",
        "a/../../secret.txt",
        abs_outside,
        "/etc/passwd",
        "link-out/secret.txt",
        "secret-link",
    ] {
        assert_escape(call(dir.path(), "read_file", json!({"path": path})).await);
    }
    for path in ["../new.txt", "link-out/new.txt", "secret-link", abs_outside] {
        assert_escape(
            call(
                dir.path(),
                "write_file",
                json!({"path": path, "content": "x", "create_dirs": true}),
            )
            .await,
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret"
    );
    assert!(!outside.path().join("new.txt").exists());
    for path in ["..", "link-out", "/"] {
        assert_escape(call(dir.path(), "list_dir", json!({"path": path})).await);
        assert_escape(call(dir.path(), "glob", json!({"pattern": "*", "path": path})).await);
        assert_escape(call(dir.path(), "grep", json!({"pattern": "s", "path": path})).await);
    }
}

#[tokio::test]
async fn absolute_paths_inside_the_root_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.txt"), "inside").unwrap();
    let abs = dir.path().join("in.txt");
    let out = call(
        dir.path(),
        "read_file",
        json!({"path": abs.to_str().unwrap()}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["content"], "inside");
    assert_eq!(out.data["path"], "in.txt");
}

#[tokio::test]
async fn write_file_replaces_atomically_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(
        dir.path(),
        "write_file",
        json!({"path": "notes.txt", "content": "first"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["path"], "notes.txt");
    assert_eq!(out.data["bytes_written"], 5);
    assert_eq!(out.data["created"], true);

    std::fs::set_permissions(
        dir.path().join("notes.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let out = call(
        dir.path(),
        "write_file",
        json!({"path": "notes.txt", "content": "second, longer"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["created"], false);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "second, longer"
    );
    let mode = std::fs::metadata(dir.path().join("notes.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o600,
        "permissions of the replaced file are kept"
    );
    assert_eq!(entry_names(dir.path()), vec!["notes.txt"]);
}

#[tokio::test]
async fn write_file_needs_create_dirs_for_missing_parents() {
    let dir = tempfile::tempdir().unwrap();
    let err = call(
        dir.path(),
        "write_file",
        json!({"path": "a/b/c.txt", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, HostError::Tool(m) if m.contains("create_dirs")),
        "{err:?}"
    );
    assert!(!dir.path().join("a").exists());

    call(
        dir.path(),
        "write_file",
        json!({"path": "a/b/c.txt", "content": "x", "create_dirs": true}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "x"
    );
    assert_eq!(entry_names(&dir.path().join("a/b")), vec!["c.txt"]);
}

#[tokio::test]
async fn write_file_refuses_content_over_the_cap_and_directories() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.files.write_max_bytes = 4;
    let err = call_with(
        cfg,
        "write_file",
        json!({"path": "x.txt", "content": "12345"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, HostError::Denied(_)), "{err:?}");
    assert!(!dir.path().join("x.txt").exists());

    std::fs::create_dir(dir.path().join("d")).unwrap();
    let err = call(
        dir.path(),
        "write_file",
        json!({"path": "d", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, HostError::Tool(_)), "{err:?}");
}

#[tokio::test]
async fn write_through_an_inside_symlink_writes_its_target() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("target.txt"), "old").unwrap();
    symlink(
        dir.path().canonicalize().unwrap().join("target.txt"),
        dir.path().join("alias.txt"),
    )
    .unwrap();
    let out = call(
        dir.path(),
        "write_file",
        json!({"path": "alias.txt", "content": "new"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["path"], "target.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("target.txt")).unwrap(),
        "new"
    );
    assert!(
        std::fs::symlink_metadata(dir.path().join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn list_dir_sorts_reports_kinds_and_caps() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.txt"), "12345").unwrap();
    std::fs::create_dir(dir.path().join("a-dir")).unwrap();
    symlink("b.txt", dir.path().join("c-link")).unwrap();
    let out = call(dir.path(), "list_dir", json!({})).await.unwrap();
    assert_eq!(
        out.data["entries"],
        json!([
            {"name": "a-dir", "kind": "dir", "size": std::fs::symlink_metadata(dir.path().join("a-dir")).unwrap().len()},
            {"name": "b.txt", "kind": "file", "size": 5},
            {"name": "c-link", "kind": "symlink", "size": 5},
        ])
    );
    assert!(!out.truncated);

    let mut cfg = config(dir.path());
    cfg.files.max_results = 2;
    let out = call_with(cfg, "list_dir", json!({"path": "."}))
        .await
        .unwrap();
    assert_eq!(out.data["entries"].as_array().unwrap().len(), 2);
    assert_eq!(out.data["total"], 3);
    assert!(out.truncated);

    let err = call(dir.path(), "list_dir", json!({"path": "b.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err.code().as_str(), "tool_error", "{err:?}");
}

fn tree(root: &Path) {
    for (path, content) in [
        ("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n"),
        ("src/lib.rs", "pub fn hello() {}\n// TODO: more\n"),
        ("src/deep/mod.rs", "// Hello again\n"),
        ("README.md", "hello readme\n"),
        ("notes.txt", "nothing here\n"),
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    std::fs::write(root.join("src/blob.bin"), b"hello\0binary").unwrap();
}

#[tokio::test]
async fn glob_matches_sorted_relative_paths() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    let out = call(dir.path(), "glob", json!({"pattern": "**/*.rs"}))
        .await
        .unwrap();
    assert_eq!(
        out.data["matches"],
        json!(["src/deep/mod.rs", "src/lib.rs", "src/main.rs"])
    );
    let out = call(
        dir.path(),
        "glob",
        json!({"pattern": "*.rs", "path": "src"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.data["matches"],
        json!(["src/lib.rs", "src/main.rs"]),
        "`*` stays within one directory"
    );
    let out = call(dir.path(), "glob", json!({"pattern": "*.md"}))
        .await
        .unwrap();
    assert_eq!(out.data["matches"], json!(["README.md"]));

    let mut cfg = config(dir.path());
    cfg.files.max_results = 2;
    let out = call_with(cfg, "glob", json!({"pattern": "**/*.rs"}))
        .await
        .unwrap();
    assert_eq!(
        out.data["matches"],
        json!(["src/deep/mod.rs", "src/lib.rs"])
    );
    assert_eq!(out.data["total"], 3);
    assert!(out.truncated);

    let err = call(dir.path(), "glob", json!({"pattern": "a{b"}))
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Schema { .. }), "{err:?}");
}

#[tokio::test]
async fn glob_and_grep_do_not_follow_symlinks_out_of_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("leak.rs"), "hello outside\n").unwrap();
    std::fs::write(dir.path().join("in.rs"), "hello inside\n").unwrap();
    symlink(outside.path(), dir.path().join("ext")).unwrap();
    let out = call(dir.path(), "glob", json!({"pattern": "**/*.rs"}))
        .await
        .unwrap();
    assert_eq!(out.data["matches"], json!(["in.rs"]));
    let out = call(dir.path(), "grep", json!({"pattern": "hello"}))
        .await
        .unwrap();
    let paths: Vec<&str> = out.data["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["in.rs"]);
}

#[tokio::test]
async fn grep_finds_lines_skips_binaries_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    let out = call(dir.path(), "grep", json!({"pattern": "hello"}))
        .await
        .unwrap();
    assert_eq!(
        out.data["matches"],
        json!([
            {"path": "README.md", "line": 1, "text": "hello readme"},
            {"path": "src/lib.rs", "line": 1, "text": "pub fn hello() {}"},
            {"path": "src/main.rs", "line": 2, "text": "    println!(\"hello\");"},
        ]),
        "case-sensitive, binary blob skipped"
    );

    let out = call(
        dir.path(),
        "grep",
        json!({"pattern": "^// ", "glob": "*.rs", "ignore_case": true}),
    )
    .await
    .unwrap();
    let found: Vec<(String, u64)> = out.data["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_owned(),
                m["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![
            ("src/deep/mod.rs".to_owned(), 1),
            ("src/lib.rs".to_owned(), 2)
        ]
    );

    let out = call(
        dir.path(),
        "grep",
        json!({"pattern": "hello", "ignore_case": true, "path": "src/deep/mod.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["matches"].as_array().unwrap().len(), 1);

    let out = call(
        dir.path(),
        "grep",
        json!({"pattern": "hello", "max_matches": 2}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["matches"].as_array().unwrap().len(), 2);
    assert!(out.truncated);

    let err = call(dir.path(), "grep", json!({"pattern": "("}))
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Schema { .. }), "{err:?}");
}

#[tokio::test]
async fn through_the_host_escapes_are_refused_and_results_carry_truncation() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "abcdef").unwrap();
    let host = Host::builder(config(dir.path()))
        .with_builtins()
        .build()
        .unwrap();
    let token = CancellationToken::new();

    let req = ToolCallRequest::new("read_file", json!({"path": "../../etc/passwd"}));
    let err = host
        .call_tool(req.clone(), CallOptions::new().session("s").cancel(&token))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TOOL_DENIED);
    assert!(err.is_refusal());

    let req = ToolCallRequest::new("read_file", json!({"path": "a.txt", "limit": 2}));
    let result = host
        .call_tool(req.clone(), CallOptions::new().session("s").cancel(&token))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    assert!(result.truncated);
    assert_eq!(result.data["content"], "ab");

    let req = ToolCallRequest::new("read_file", json!({"offset": 2}));
    let err = host
        .call_tool(req.clone(), CallOptions::new().session("s").cancel(&token))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION);

    let req = ToolCallRequest::new("read_file", json!({"path": "missing"}));
    let result = host
        .call_tool(req.clone(), CallOptions::new().session("s").cancel(&token))
        .await
        .unwrap();
    assert!(!result.success);
    assert_eq!(result.error_code, Some(ErrorCode::TOOL_ERROR));
}

#[tokio::test]
async fn arguments_of_the_wrong_type_are_schema_errors_even_without_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = Map::new();
    args.insert("path".into(), json!("a"));
    args.insert("offset".into(), json!(-1));
    let err = call(dir.path(), "read_file", Value::Object(args))
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Schema { .. }), "{err:?}");
}
