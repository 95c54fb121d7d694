//! The client against the `a2e` binary: over stdio (built-ins, chains with
//! events, proc, refusals), the host killed mid-call, and `a2e serve --ws
//! --http` with graceful shutdown on SIGTERM and the bind rule.

use crate::net_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use a2e_client::{Client, ClientError, ToolCall};
use a2e_proto::{ChainNode, ChainRequest, ErrorCode, NodeKind};
use futures::StreamExt;
use net_support::{alive, eventually};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

fn a2e(root: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.arg("--root")
        .arg(root)
        .args(["--allow-command", "sleep"]);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let mut cmd = a2e(dir.path());
    cmd.args(["serve", "--stdio"]);
    let client = Client::builder()
        .agent_id("stdio-agent")
        .connect_stdio(cmd)
        .await
        .unwrap();
    assert!(client.child_id().is_some());

    let tools = client.tools().list().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "read_file"));
    let read = client
        .tools()
        .call("read_file", json!({"path": "notes.txt"}))
        .await
        .unwrap();
    assert!(read.success, "{read:?}");
    assert_eq!(read.data["content"], "alpha\nbeta\n");
    let err = client
        .tools()
        .call("read_file", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::SCHEMA_VIOLATION));

    // A chain: write, then read back what was written; events as they arrive.
    let mut write = ChainNode::new("write", NodeKind::TOOL, "write_file");
    write.input.insert("path".into(), json!("out.txt"));
    write
        .input_map
        .insert("content".into(), json!("input.text"));
    write.next_node = "read".into();
    let mut read = ChainNode::new("read", NodeKind::TOOL, "read_file");
    read.input_map
        .insert("path".into(), json!("write.output.path"));
    let mut req = ChainRequest {
        nodes: vec![write, read],
        entry_node: "write".into(),
        ..ChainRequest::default()
    };
    req.initial_input.insert("text".into(), json!("gamma"));
    let mut run = client.chains().run(req).await.unwrap();
    let mut events = 0;
    while let Some(event) = run.next().await {
        assert_eq!(event.seq, events);
        events += 1;
    }
    assert_eq!(events, 4);
    let resp = run.finish().await.unwrap();
    assert!(resp.success, "{resp:?}");
    assert_eq!(resp.final_output["content"], "gamma");

    // A process.
    let mut sleeper = client.proc().spawn(["sleep", "0.1"]).await.unwrap();
    let exit = sleeper.wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(exit.code, Some(0));

    // Shutdown ends the host process.
    let pid = client.child_id().unwrap();
    client.shutdown(2).await.unwrap();
    assert!(client.is_closed());
    eventually(Duration::from_secs(10), || !alive(pid)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_call_fails_pending_requests_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = a2e(dir.path());
    cmd.args(["serve", "--stdio"]);
    let client = Client::connect_stdio(cmd).await.unwrap();
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .tools()
                    .call_with(
                        ToolCall::new("run_command", json!({"argv": ["sleep", "30"]}))
                            .timeout_secs(60),
                    )
                    .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = client.child_id().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let started = Instant::now();
    for call in calls {
        let err = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("the call fails promptly")
            .unwrap()
            .unwrap_err();
        assert!(matches!(err, ClientError::ConnectionClosed(_)), "{err}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    // New requests fail at once.
    let err = client.ping().await.unwrap_err();
    assert!(matches!(err, ClientError::ConnectionClosed(_)), "{err}");
}

/// Starts `a2e serve` with `args`, returning the child and the addresses it printed.
async fn serve(
    root: &std::path::Path,
    args: &[&str],
    lines: usize,
) -> (tokio::process::Child, Vec<String>) {
    let mut cmd = a2e(root);
    cmd.arg("serve")
        .args(args)
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut urls = Vec::new();
    while urls.len() < lines {
        let line = tokio::time::timeout(Duration::from_secs(20), stderr.next_line())
            .await
            .expect("the server says where it listens")
            .unwrap()
            .expect("the server runs");
        if let Some(url) = line.split(" on ").nth(1) {
            urls.push(url.to_owned());
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    (child, urls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_calls_in_flight_then_exits() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, urls) = serve(
        dir.path(),
        &["--ws", "127.0.0.1:0", "--http", "127.0.0.1:0"],
        2,
    )
    .await;
    let ws = urls.iter().find(|u| u.starts_with("ws://")).unwrap();
    let http = urls.iter().find(|u| u.starts_with("http://")).unwrap();
    let a = Client::connect_ws(ws).await.unwrap();
    let b = Client::connect_http(http).await.unwrap();
    let sleep = ToolCall::new("run_command", json!({"argv": ["sleep", "1"]}));
    let call_a = a.tools().start(sleep.clone()).await.unwrap();
    let call_b = b.tools().start(sleep).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id().unwrap() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let (ra, rb) = tokio::join!(call_a.finish(), call_b.finish());
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert!(ra.success && rb.success, "{ra:?} {rb:?}");
    assert_eq!(ra.exit_code, Some(0));
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the server exits")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        a.is_closed()
            || tokio::time::timeout(Duration::from_secs(5), a.closed())
                .await
                .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_listener_serves_both_protocols() {
    let dir = tempfile::tempdir().unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let (mut child, urls) = serve(dir.path(), &["--ws", &addr, "--http", &addr], 2).await;
    assert!(urls.iter().all(|u| u.contains(&addr)), "{urls:?}");
    let a = Client::connect_ws(&format!("ws://{addr}/ws"))
        .await
        .unwrap();
    let b = Client::connect_http(&format!("http://{addr}"))
        .await
        .unwrap();
    a.ping().await.unwrap();
    b.ping().await.unwrap();
    child.start_kill().unwrap();
}

#[tokio::test]
async fn binding_beyond_loopback_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let out = a2e(dir.path())
        .args(["serve", "--ws", "0.0.0.0:0"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("auth_token"), "{stderr}");
    // With a token in the configuration it binds.
    std::fs::write(
        dir.path().join("a2e.toml"),
        "auth_token = \"s3cret\"\nroot = \".\"\n",
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.arg("--config").arg(dir.path().join("a2e.toml"));
    cmd.args(["serve", "--ws", "0.0.0.0:0"])
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    // Other lines (a warning that a sandbox layer is missing) may come first.
    let serving = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("serving WebSocket") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap();
    assert!(serving, "the host never said it serves WebSocket");
    child.start_kill().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_kills_the_spawned_host() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = a2e(dir.path());
    cmd.args(["serve", "--stdio"]);
    let client = Client::connect_stdio(cmd).await.unwrap();
    let pid = client.child_id().unwrap();
    let sleeper = client.proc().spawn(["sleep", "30"]).await.unwrap();
    let sleeper_pid = sleeper.pid();
    assert!(alive(pid) && alive(sleeper_pid));
    let other = client.clone();
    drop(client);
    assert!(alive(pid), "a clone still holds the connection");
    drop(sleeper);
    drop(other);
    eventually(Duration::from_secs(10), || !alive(pid)).await;
    // The host ended its session first: its processes are gone too.
    eventually(Duration::from_secs(10), || !alive(sleeper_pid)).await;
}
