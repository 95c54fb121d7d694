//! What a newcomer meets on the command line, over the real binary:
//! `--json` on the list commands (`tools`, `skills`, `runs list`, `mcp
//! list`), `serve` naming its live view, and a `--root` that does not exist
//! refused.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn a2e(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(args)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap()
}

/// Stdout as JSON lines.
fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn the_list_commands_print_json_lines_with_json() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("skills")).unwrap();
    std::fs::write(
        root.path().join("skills/hello.md"),
        "---\nname: hello\ndescription: Says hello\n---\nSay hello.\n\n```chain\n\
         {\"entry_node\": \"a\", \"nodes\": [{\"node_id\": \"a\", \"kind\": \"tool\", \
         \"name\": \"list_dir\", \"input\": {}}]}\n```\n",
    )
    .unwrap();

    let tools = a2e(root.path(), &["tools", "--json"]);
    assert!(tools.status.success());
    let tools = json_lines(&tools);
    let read = tools.iter().find(|t| t["name"] == "read_file");
    assert!(
        read.is_some_and(|t| t["description"].is_string() && t["input_parameters"].is_array()),
        "{tools:?}"
    );

    let skills = a2e(root.path(), &["skills", "--json"]);
    assert!(skills.status.success());
    let skills = json_lines(&skills);
    let hello = skills.iter().find(|s| s["name"] == "hello");
    assert!(
        hello.is_some_and(|s| s["kind"] == "chain" && s["description"] == "Says hello"),
        "{skills:?}"
    );

    // A server that cannot start: a line that says so, exit 1.
    let config = root.path().join("a2e.toml");
    std::fs::write(
        &config,
        "[[mcp.servers]]\nname = \"gone\"\ncommand = \"/nonexistent/server\"\n",
    )
    .unwrap();
    let mcp = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["mcp", "list", "--json", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(mcp.status.code(), Some(1));
    let servers = json_lines(&mcp);
    assert_eq!(servers.len(), 1, "{servers:?}");
    assert_eq!(servers[0]["name"], "gone");
    assert_eq!(servers[0]["ok"], false);
    assert!(servers[0]["error"].is_string(), "{servers:?}");
}

#[test]
fn a_root_that_does_not_exist_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    for args in [&["tools"][..], &["serve", "--stdio"], &["runs", "list"]] {
        let out = a2e(&missing, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--root") && err.contains("no such directory"),
            "{args:?}: {err}"
        );
    }
    assert!(!missing.exists());
}

#[test]
fn serve_names_the_live_view_of_its_listener() {
    let root = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--http", "127.0.0.1:0", "--root"])
        .arg(root.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let end = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let url = loop {
        assert!(Instant::now() < end, "{seen:?}");
        let Some(Ok(line)) = lines.next() else {
            panic!("serve ended: {seen:?}");
        };
        if let Some(url) = line.strip_prefix("a2e: live view on ") {
            break url.to_owned();
        }
        seen.push(line);
    };
    // The address serves the page.
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_once('/').unwrap();
    assert_eq!(path, "ui");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        conn,
        "GET /ui HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 12];
    conn.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    let _ = child.kill();
    let _ = child.wait();
}
