//! The client against a real host served in-process: over an in-memory pipe
//! (the crate docs' flow, for real), and over WebSocket with a host that dies
//! mid-call.

use std::time::Duration;

use a2e_client::{Client, ClientError, ToolCall};
use a2e_host::transport::stdio::{StdioOptions, serve};
use a2e_host::{Host, HostConfig};
use a2e_proto::{A2ECapability, ChainNode, ChainRequest, ErrorCode, NodeKind};
use futures::{SinkExt, StreamExt};
use serde_json::json;

async fn in_process(root: &std::path::Path) -> Client {
    let mut config = HostConfig {
        root: root.to_owned(),
        ..HostConfig::default()
    };
    config.commands.allow = vec!["cat".into()];
    let host = Host::builder(config).with_builtins().build().unwrap();
    let (client_w, host_r) = tokio::io::duplex(1 << 20);
    let (host_w, client_r) = tokio::io::duplex(1 << 20);
    tokio::spawn(serve(host, host_r, host_w, StdioOptions::default()));
    Client::builder()
        .agent_id("in-process")
        .capabilities([
            A2ECapability::TOOLS,
            A2ECapability::CHAINS,
            A2ECapability::PROC,
        ])
        .connect_io(client_r, client_w)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_documented_flow_runs_for_real() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# hello\n").unwrap();
    let client = in_process(dir.path()).await;
    assert!(!client.session_id().is_empty());
    assert!(client.has_capability(&A2ECapability::CHAINS));
    assert!(
        !client.has_capability(&A2ECapability::SKILL),
        "not asked for"
    );

    let tools = client.tools().list().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "read_file"));
    let read = client
        .tools()
        .call("read_file", json!({"path": "README.md"}))
        .await
        .unwrap();
    assert!(read.success);
    assert_eq!(read.data["content"], "# hello\n");
    let err = client
        .tools()
        .call("no_such_tool", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::UNKNOWN_TOOL));
    // Not accepted in the handshake: unauthorized.
    let err = client.skills().discover().await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::UNAUTHORIZED));

    let mut node = ChainNode::new("list", NodeKind::TOOL, "list_dir");
    node.input.insert("path".into(), json!("."));
    let req = ChainRequest {
        nodes: vec![node],
        entry_node: "list".into(),
        ..Default::default()
    };
    let mut run = client.chains().run(req).await.unwrap();
    let mut phases = Vec::new();
    while let Some(event) = run.next().await {
        phases.push(event.phase.to_string());
    }
    assert_eq!(phases, ["start", "done"]);
    let resp = run.finish().await.unwrap();
    assert!(resp.success);
    assert_eq!(resp.final_output["entries"][0]["name"], "README.md");

    let mut cat = client.proc().spawn(["cat"]).await.unwrap();
    cat.write("echoed\n").await.unwrap();
    let first = cat.next().await.unwrap();
    assert_eq!(first.data["text"], "echoed");
    cat.close_stdin().await.unwrap();
    let exit = cat.wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(exit.code, Some(0));

    client.shutdown(1).await.unwrap();
    assert!(client.is_closed());
}

#[tokio::test]
async fn a_websocket_host_dying_mid_call_fails_the_call_promptly() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // A host that answers the handshake, takes one call, then dies.
    let host = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let hello = ws.next().await.unwrap().unwrap();
        let hello: serde_json::Value = serde_json::from_str(hello.to_text().unwrap()).unwrap();
        let resp = json!({"type": "handshake/resp", "req_id": hello["id"], "session_id": "ws-1"});
        ws.send(tokio_tungstenite::tungstenite::Message::text(
            resp.to_string(),
        ))
        .await
        .unwrap();
        let _call = ws.next().await.unwrap().unwrap();
        drop(ws);
    });
    let client = Client::connect_ws(&format!("ws://{addr}/")).await.unwrap();
    assert_eq!(client.session_id(), "ws-1");
    let started = std::time::Instant::now();
    let err = client
        .tools()
        .call_with(ToolCall::new("t", json!({})).timeout_secs(60))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::ConnectionClosed(_)), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "failed promptly, not at the deadline"
    );
    host.await.unwrap();
}

#[tokio::test]
async fn connecting_to_nothing_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = Client::connect_ws(&format!("ws://{addr}/"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err}");
    let err = Client::connect_http(&format!("http://{addr}/"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err}");
    let err = Client::connect_http("https://example.invalid/")
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Invalid(_)), "{err}");
    let err = Client::connect_stdio(tokio::process::Command::new("/nonexistent/a2e"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err}");
}
