//! End to end over real stdio pipes against the built `a2e` binary: the
//! specs' wire examples, handshake, path escapes, denied commands, malformed
//! lines, a hanging tool's timeout, and a client vanishing mid-chain.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use a2e_host::proc::pids_with_arg;
use conformance::child::HostProcess;

use serde_json::{Value, json};

const CODE_REVIEW_SKILL: &str = r#"---
name: code_review
version: 1.0.0
description: Review code for quality and security
triggers: ["review code", "code review"]
tags: [coding, review]
category: development
when_to_use: Use when code needs quality review
argument_hint: Provide the code to review
input_schema:
  type: object
  properties: { code: { type: string } }
  required: [code]
max_turns: 10
timeout_seconds: 120
---
Review the provided code: store it, then list its function definitions.

```chain
{ "entry_node": "store", "nodes": [
  { "node_id": "store", "kind": "tool", "name": "write_file",
    "input": { "path": "review/input.py", "create_dirs": true },
    "input_map": { "content": "input.code" }, "next_node": "defs" },
  { "node_id": "defs", "kind": "tool", "name": "grep",
    "input": { "pattern": "def ", "path": "review" } } ] }
```
"#;

/// A running `a2e serve --stdio` in a fresh workspace root.
struct Host {
    process: HostProcess,
    root: tempfile::TempDir,
}

impl Host {
    fn start(extra: &[&str]) -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("skills")).unwrap();
        std::fs::write(root.path().join("skills/code_review.md"), CODE_REVIEW_SKILL).unwrap();
        std::fs::write(root.path().join("hello.txt"), "hello\n").unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
        cmd.arg("serve")
            .arg("--stdio")
            .arg("--root")
            .arg(root.path())
            .args(extra);
        Self {
            process: HostProcess::spawn(cmd).unwrap(),
            root,
        }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn send(&mut self, line: &str) {
        self.process.send(line.as_bytes()).unwrap();
    }

    fn recv(&self) -> Value {
        let line = self
            .process
            .recv_line(Duration::from_secs(20))
            .expect("an answer within 20 s");
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until the message answering `req_id` that is not an event.
    fn answer(&self, req_id: &str) -> (Value, Vec<Value>) {
        self.process
            .answer(req_id, Duration::from_secs(20), |_| {})
            .unwrap()
    }

    fn handshake(&mut self) -> Value {
        self.send(r#"{"type":"handshake/req","id":"hs","agent_id":"e2e"}"#);
        self.answer("hs").0
    }
}

fn pid_alive(pid: i32) -> bool {
    // A zombie is as good as gone; read its state.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn wait_gone(pid: i32, within: Duration) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if !pid_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    !pid_alive(pid)
}

#[test]
fn spec_wire_examples_are_answered() {
    let mut h = Host::start(&[]);
    let hs = h.handshake();
    assert_eq!(hs["ok"], true);

    // tools: list
    h.send(r#"{"type":"tool/list/req","id":"a1b2c3","version":"1.0","ts":1716123456.789,"filter_kind":"","filter_tags":[]}"#);
    let (resp, _) = h.answer("a1b2c3");
    assert_eq!(resp["type"], "tool/list/resp");
    let names: Vec<&str> = resp["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for builtin in [
        "read_file",
        "write_file",
        "list_dir",
        "glob",
        "grep",
        "run_command",
        "http_request",
    ] {
        assert!(names.contains(&builtin), "{builtin} missing from {names:?}");
    }

    // tools: call — /etc/hostname is outside the workspace root.
    h.send(r#"{"type":"tool/call/req","id":"g7h8i9","version":"1.0","ts":1716123457.100,"session_id":"s1k2l3","tool_name":"read_file","arguments":{"path":"/etc/hostname"},"correlation_id":"","streaming":true,"timeout":30}"#);
    let (resp, _) = h.answer("g7h8i9");
    assert_eq!(resp["type"], "error");
    assert_eq!(resp["code"], "tool_denied");

    // The same call inside the root succeeds.
    h.send(r#"{"type":"tool/call/req","id":"rf","tool_name":"read_file","arguments":{"path":"hello.txt"},"streaming":true}"#);
    let (resp, _) = h.answer("rf");
    assert_eq!(resp["type"], "tool/call/resp");
    assert_eq!(resp["data"]["success"], true);
    assert_eq!(resp["data"]["data"]["content"], "hello\n");

    // skills: discover
    h.send(r#"{"type":"skill/discover/req","id":"sd1","version":"1.0","ts":1716123456.789,"filter_tags":["coding"],"filter_categories":[]}"#);
    let (resp, _) = h.answer("sd1");
    assert_eq!(resp["type"], "skill/discover/resp");
    assert_eq!(resp["skills"][0]["name"], "code_review");
    assert_eq!(resp["skills"][0]["status"], "Published");
    assert_eq!(
        resp["skills"][0]["input_schema"]["required"],
        json!(["code"])
    );

    // skills: call, with streaming
    h.send(r#"{"type":"skill/call/req","id":"sc1","version":"1.0","ts":1716123457.100,"name":"code_review","arguments":{"code":"def add(a, b): return a + b"},"correlation_id":"","timeout":60,"streaming":true,"llm_override":null,"metadata":{}}"#);
    let (resp, events) = h.answer("sc1");
    assert_eq!(resp["type"], "skill/call/resp");
    assert_eq!(resp["name"], "code_review");
    assert_eq!(resp["data"]["success"], true, "{resp}");
    assert_eq!(
        resp["data"]["data"]["matches"][0]["text"],
        "def add(a, b): return a + b"
    );
    assert!(!events.is_empty());
    for (i, ev) in events.iter().enumerate() {
        assert_eq!(ev["type"], "skill/event");
        assert_eq!(ev["seq"], i as u64);
    }

    // skills: arguments violating input_schema
    h.send(r#"{"type":"skill/call/req","id":"sc2","name":"code_review","arguments":{"code":5}}"#);
    let (resp, _) = h.answer("sc2");
    assert_eq!(resp["type"], "error");
    assert_eq!(resp["code"], "schema_violation");

    // chains: the spec's linear chain — /data/input.txt is outside the root.
    h.send(r#"{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"read_file","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"skill","name":"text_summarizer","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}"#);
    let (resp, events) = h.answer("c1");
    assert_eq!(resp["type"], "chain/resp");
    assert_eq!(resp["chain_id"], "abc123");
    assert_eq!(resp["success"], false);
    assert_eq!(resp["error"]["node_id"], "read");
    let phases: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["node_id"].as_str().unwrap(), e["phase"].as_str().unwrap()))
        .collect();
    assert_eq!(phases.first(), Some(&("read", "start")));
    assert!(phases.contains(&("read", "error")));

    // The same chain shape inside the root runs to the end.
    h.send(r#"{"type":"chain/req","id":"c2","entry_node":"read","nodes":[{"node_id":"read","kind":"tool","name":"read_file","input":{"path":"hello.txt"},"next_node":"copy"},{"node_id":"copy","kind":"tool","name":"write_file","input":{"path":"copy.txt"},"input_map":{"content":"read.output.content"}}]}"#);
    let (resp, events) = h.answer("c2");
    assert_eq!(resp["success"], true, "{resp}");
    assert_eq!(resp["nodes_run"], 2);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(
        std::fs::read_to_string(h.root().join("copy.txt")).unwrap(),
        "hello\n"
    );

    // A cyclic chain is refused before anything runs.
    h.send(r#"{"type":"chain/req","id":"c3","entry_node":"a","nodes":[{"node_id":"a","kind":"tool","name":"read_file","next_node":"b"},{"node_id":"b","kind":"tool","name":"read_file","next_node":"a"}]}"#);
    let (resp, _) = h.answer("c3");
    assert_eq!(resp["type"], "error");
    assert_eq!(resp["code"], "chain_cycle");

    // ping
    h.send(r#"{"type":"ping","id":"p1"}"#);
    assert_eq!(h.answer("p1").0["type"], "pong");

    // shutdown: the host exits.
    h.send(r#"{"type":"shutdown","id":"bye","timeout":2}"#);
    assert!(
        h.process.wait_exit(Duration::from_secs(10)).is_some(),
        "host did not exit after shutdown"
    );
}

#[test]
fn path_escapes_and_denied_commands_are_refused() {
    let mut h = Host::start(&[]);
    h.handshake();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s3cret").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), h.root().join("link.txt"))
        .unwrap();
    std::os::unix::fs::symlink(outside.path(), h.root().join("linkdir")).unwrap();
    let attempts = [
        json!({"tool_name": "read_file", "arguments": {"path": "../../etc/passwd"}}),
        json!({"tool_name": "read_file", "arguments": {"path": "/etc/passwd"}}),
        json!({"tool_name": "read_file", "arguments": {"path": "link.txt"}}),
        json!({"tool_name": "read_file", "arguments": {"path": "linkdir/secret.txt"}}),
        json!({"tool_name": "write_file", "arguments": {"path": "linkdir/new.txt", "content": "x"}}),
        json!({"tool_name": "write_file", "arguments": {"path": "../escape.txt", "content": "x"}}),
        json!({"tool_name": "list_dir", "arguments": {"path": ".."}}),
        json!({"tool_name": "run_command", "arguments": {"argv": ["rm", "-rf", "/"]}}),
        json!({"tool_name": "run_command", "arguments": {"argv": ["/bin/sh", "-c", "id"]}}),
        json!({"tool_name": "http_request", "arguments": {"url": "http://127.0.0.1:9/"}}),
    ];
    for (i, attempt) in attempts.iter().enumerate() {
        let mut req = attempt.clone();
        req["type"] = json!("tool/call/req");
        req["id"] = json!(format!("x{i}"));
        h.send(&req.to_string());
        let (resp, _) = h.answer(&format!("x{i}"));
        assert_eq!(resp["type"], "error", "{attempt} → {resp}");
        assert_eq!(resp["code"], "tool_denied", "{attempt} → {resp}");
    }
    assert!(!outside.path().join("new.txt").exists());
    assert!(!h.root().parent().unwrap().join("escape.txt").exists());
}

#[test]
fn malformed_lines_get_their_codes_and_the_session_goes_on() {
    let mut h = Host::start(&[]);
    h.send("this is not json");
    assert_eq!(h.recv()["code"], "parse_error");
    h.handshake();
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let cases: Vec<(String, &str)> = vec![
        (
            "{\"type\":\"tool/call/req\",\"id\":\"t\"".into(),
            "parse_error",
        ),
        ("{\"no_type\":1}".into(), "invalid_message"),
        ("\"just a string\"".into(), "invalid_message"),
        (deep, "invalid_message"),
        (
            "{\"type\":\"ping\",\"version\":\"9.1\"}".into(),
            "version_mismatch",
        ),
        (
            "{\"type\":\"chain/req\",\"id\":\"c\",\"nodes\":[{\"node_id\":\"a\",\"kind\":5}]}"
                .into(),
            "schema_violation",
        ),
        (
            "{\"type\":\"skill/call/req\",\"id\":\"s\",\"name\":\"nope\",\"arguments\":{}}".into(),
            "unknown_skill",
        ),
        (
            "{\"type\":\"proc/status/req\",\"id\":\"ps\",\"proc_id\":\"p-none\"}".into(),
            "unknown_proc",
        ),
    ];
    h.process.send(b"\xff\xfe{\"type\":\"ping\"}").unwrap();
    assert_eq!(h.recv()["code"], "parse_error");
    for (line, code) in cases {
        h.send(&line);
        let msg = h.recv();
        assert_eq!(msg["type"], "error", "{}", &line[..line.len().min(60)]);
        assert_eq!(msg["code"], code, "{} → {msg}", &line[..line.len().min(60)]);
    }
    h.send(r#"{"type":"ping","id":"alive"}"#);
    assert_eq!(h.answer("alive").0["type"], "pong");
}

#[test]
fn a_hanging_command_times_out_on_time_and_its_process_is_gone() {
    let mut h = Host::start(&["--allow-command", "sh"]);
    h.handshake();
    let started = Instant::now();
    // A sleep with an argument no other process has, found through /proc (the
    // command may run in a PID namespace, where `$$` is not the host's pid).
    h.send(r#"{"type":"tool/call/req","id":"hang","tool_name":"run_command","arguments":{"argv":["sh","-c","echo started; sleep 30.0417 & wait"]},"streaming":true,"timeout":1}"#);
    let (resp, events) = h.answer("hang");
    let took = started.elapsed();
    assert_eq!(resp["type"], "tool/call/resp");
    assert_eq!(resp["data"]["success"], false);
    assert_eq!(resp["data"]["error_code"], "timeout");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        events.iter().any(|e| e["data"]["message"] == "started"),
        "the command ran: {events:?}"
    );
    let end = Instant::now() + Duration::from_secs(5);
    while !pids_with_arg("30.0417").is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        pids_with_arg("30.0417"),
        Vec::<u32>::new(),
        "survived the timeout"
    );
}

#[test]
fn a_client_vanishing_mid_chain_leaves_no_process_behind() {
    let root = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--stdio", "--allow-command", "sh", "--root"])
        .arg(root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdin
        .write_all(b"{\"type\":\"handshake/req\",\"id\":\"hs\"}\n")
        .unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("handshake/resp"), "{line}");
    stdin.write_all(br#"{"type":"chain/req","id":"long","entry_node":"work","nodes":[{"node_id":"work","kind":"tool","name":"run_command","input":{"argv":["sh","-c","sleep 60.0418 & wait"],"timeout":120}}],"timeout":300}"#).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.flush().unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    let pid: i32 = loop {
        if let Some(pid) = pids_with_arg("60.0418").first() {
            break *pid as i32;
        }
        assert!(Instant::now() < end, "the chain's command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(pid_alive(pid));
    // The client goes away: both of its pipe ends close.
    drop(stdin);
    drop(stdout);
    assert!(
        wait_gone(pid, Duration::from_secs(10)),
        "process {pid} outlived its session"
    );
    let end = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "the host did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn run_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.txt"), "x").unwrap();
    let ok = r#"{"entry_node":"r","nodes":[{"node_id":"r","kind":"tool","name":"read_file","input":{"path":"in.txt"}}]}"#;
    let failing = r#"{"entry_node":"r","nodes":[{"node_id":"r","kind":"tool","name":"read_file","input":{"path":"missing.txt"}}]}"#;
    let cyclic =
        r#"{"entry_node":"a","nodes":[{"node_id":"a","kind":"tool","name":"x","next_node":"a"}]}"#;
    for (name, body, code) in [
        ("ok.json", ok, 0),
        ("fail.json", failing, 1),
        ("cyc.json", cyclic, 2),
        ("bad.json", "{nope", 2),
    ] {
        std::fs::write(dir.path().join(name), body).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
            .args(["run", name, "--root", "."])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if code < 2 {
            let resp: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(resp["type"], "chain/resp");
            assert_eq!(resp["success"], code == 0);
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["run", "ok.json", "--root", ".", "--input", "[1]"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn proc_messages_spawn_stream_write_and_kill() {
    let mut h = Host::start(&["--allow-command", "cat", "--allow-command", "sleep"]);
    h.handshake();
    h.send(r#"{"type":"proc/spawn/req","id":"sp1","cmd":["cat"],"stdin_mode":"pipe"}"#);
    let (spawn, _) = h.answer("sp1");
    assert_eq!(spawn["type"], "proc/spawn/resp");
    assert_eq!(spawn["ok"], true, "{spawn}");
    let proc_id = spawn["proc_id"].as_str().unwrap().to_owned();
    assert!(spawn["pid"].as_u64().unwrap() > 0);
    h.send(&format!(
        r#"{{"type":"proc/write/req","id":"w1","proc_id":"{proc_id}","data":"ping\n","eof":true}}"#
    ));
    let mut got_write = false;
    let mut lines = Vec::new();
    let mut exit = None;
    while !(got_write && exit.is_some()) {
        let msg = h.recv();
        match msg["type"].as_str().unwrap() {
            "proc/write/resp" => {
                assert_eq!(msg["ok"], true);
                got_write = true;
            }
            "proc/read/event" => {
                assert_eq!(msg["req_id"], "sp1");
                assert_eq!(msg["proc_id"], proc_id.as_str());
                match msg["stream_type"].as_str().unwrap() {
                    "stdout" => lines.push(msg["data"]["text"].as_str().unwrap().to_owned()),
                    "killed" => exit = Some(msg["data"]["code"].clone()),
                    other => panic!("unexpected stream {other}"),
                }
            }
            other => panic!("unexpected {other}: {msg}"),
        }
    }
    assert_eq!(lines.concat().trim(), "ping");
    assert_eq!(exit, Some(json!(0)));
    h.send(&format!(
        r#"{{"type":"proc/status/req","id":"st1","proc_id":"{proc_id}"}}"#
    ));
    assert_eq!(h.answer("st1").0["status"], "stopped");

    h.send(r#"{"type":"proc/spawn/req","id":"sp2","cmd":["sleep","30"],"stdin_mode":"null"}"#);
    let (spawn, _) = h.answer("sp2");
    let sleeper = spawn["proc_id"].as_str().unwrap().to_owned();
    let pid = spawn["pid"].as_i64().unwrap() as i32;
    h.send(&format!(
        r#"{{"type":"proc/kill/req","id":"k1","proc_id":"{sleeper}","signal":"SIGKILL"}}"#
    ));
    let (kill, _) = h.answer("k1");
    assert_eq!(kill["type"], "proc/kill/resp");
    assert_eq!(kill["ok"], true);
    assert!(wait_gone(pid, Duration::from_secs(5)));
    h.send(r#"{"type":"proc/spawn/req","id":"sp3","cmd":["rm","-rf","x"]}"#);
    let (denied, _) = h.answer("sp3");
    assert_eq!(denied["type"], "error");
    assert_eq!(denied["code"], "tool_denied");
}

fn a2e(args: &[&str], dir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_lists_tools_skills_schemas_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("skills")).unwrap();
    std::fs::write(dir.path().join("skills/code_review.md"), CODE_REVIEW_SKILL).unwrap();
    let (code, out, _) = a2e(&["tools", "--root", "."], dir.path());
    assert_eq!(code, 0);
    assert!(out.lines().any(|l| l.starts_with("read_file")), "{out}");
    let (_, out, _) = a2e(
        &["tools", "--query", "search files regex", "--root", "."],
        dir.path(),
    );
    assert!(out.lines().next().unwrap().starts_with("grep"), "{out}");
    let (_, out, _) = a2e(&["skills", "--root", "."], dir.path());
    assert!(
        out.contains("code_review") && out.contains("Published"),
        "{out}"
    );
    let (code, out, _) = a2e(&["schema", "tool/call/req"], dir.path());
    assert_eq!(code, 0);
    let schema: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(schema["properties"]["type"]["const"], "tool/call/req");
    let (code, out, _) = a2e(&["schema"], dir.path());
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 29);
    let (code, _, err) = a2e(&["schema", "nope/req"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("unknown message type"));
    std::fs::write(
        dir.path().join("bad.json"),
        r#"{"entry_node":"a","nodes":[{"node_id":"a","kind":"tool","name":"x","input_map":{"v":"ghost.output"}}]}"#,
    )
    .unwrap();
    let (code, _, err) = a2e(&["validate", "bad.json"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("ghost"), "{err}");
}

#[test]
fn sigterm_ends_the_stdio_host_and_its_processes() {
    let root = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--stdio", "--allow-command", "sleep", "--root"])
        .arg(root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdin
        .write_all(b"{\"type\":\"handshake/req\",\"id\":\"hs\"}\n{\"type\":\"proc/spawn/req\",\"id\":\"sp\",\"cmd\":[\"sleep\",\"60\"],\"stdin_mode\":\"null\"}\n")
        .unwrap();
    let mut pid = None;
    for _ in 0..4 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "proc/spawn/resp" {
            pid = v["pid"].as_i64();
            break;
        }
    }
    let pid = pid.expect("spawned") as i32;
    assert!(pid_alive(pid));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "the host ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        wait_gone(pid, Duration::from_secs(5)),
        "process {pid} outlived the host"
    );
}
