//! The client against the host over WebSocket: the whole API, isolation
//! between sessions, the bearer token, oversize frames, slow readers, rate
//! limits, an agent vanishing mid-chain, graceful shutdown.

use crate::net_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use a2e_client::{Client, ClientError, ToolCall};
use a2e_host::transport::net::NetOptions;
use a2e_proto::{ChainNode, ChainRequest, ErrorCode, NodeKind};
use futures::{SinkExt, StreamExt};
use net_support::*;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_api_over_websocket() {
    let (_dir, counters, host) = setup("");
    let server = Server::start(host, NetOptions::default()).await;
    let client = Client::builder()
        .agent_id("ws-agent")
        .connect_ws(&server.ws_url())
        .await
        .unwrap();
    api_suite(&client, &counters).await;
    client.close().await;
    server.wait_no_sessions().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_isolated() {
    let (_dir, _counters, host) = setup("");
    let server = Server::start(host, NetOptions::default()).await;
    let a = Client::connect_ws(&server.ws_url()).await.unwrap();
    let b = Client::connect_ws(&server.ws_url()).await.unwrap();
    assert_ne!(a.session_id(), b.session_id());
    assert_eq!(server.state.active_sessions(), 2);
    let sleeper = a.proc().spawn(["sleep", "30"]).await.unwrap();
    let err = b.proc().status(sleeper.id()).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::UNKNOWN_PROC));
    assert!(b.proc().status_all().await.unwrap().is_empty());
    // Closing one leaves the other working; its processes die with it.
    a.close().await;
    eventually(Duration::from_secs(10), || !alive(sleeper.pid())).await;
    b.ping().await.unwrap();
    b.close().await;
    server.wait_no_sessions().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_checked_on_upgrade_and_in_the_handshake() {
    let (_dir, _counters, host) = setup("s3cret");
    let server = Server::start(host, NetOptions::default()).await;
    // No bearer header: 401, reported as a refused handshake.
    let err = Client::connect_ws(&server.ws_url()).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::HandshakeRefused { reason } if reason == "auth_failed"),
        "{err}"
    );
    let err = Client::builder()
        .auth_token("wrong")
        .connect_ws(&server.ws_url())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::HandshakeRefused { reason } if reason == "auth_failed"),
        "{err}"
    );
    // The right bearer but a wrong handshake token: the handshake is refused.
    let mut request = server.ws_url().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket
        .send(WsMessage::text(
            r#"{"type":"handshake/req","id":"h1","auth_token":"nope"}"#,
        ))
        .await
        .unwrap();
    let answer = next_json(&mut socket).await;
    assert_eq!(answer["type"], "handshake/resp");
    assert_eq!(answer["ok"], false);
    assert_eq!(answer["reason"], "auth_failed");
    socket
        .send(WsMessage::text(r#"{"type":"tool/list/req","id":"l1"}"#))
        .await
        .unwrap();
    let answer = next_json(&mut socket).await;
    assert_eq!(answer["code"], "unauthorized");
    // The right token both ways.
    let client = Client::builder()
        .auth_token("s3cret")
        .connect_ws(&server.ws_url())
        .await
        .unwrap();
    client.ping().await.unwrap();
}

async fn next_json<S>(socket: &mut S) -> serde_json::Value
where
    S: futures::Stream<Item = Result<WsMessage, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("an answer within 10 s")
            .expect("the stream is open")
            .unwrap();
        if let WsMessage::Text(text) = msg {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_on_one_session_leave_every_session_working() {
    let (_dir, _counters, host) = setup("");
    let server = Server::start(host, NetOptions::default()).await;
    let bystander = Client::connect_ws(&server.ws_url()).await.unwrap();
    let (mut socket, _) = tokio_tungstenite::connect_async(server.ws_url())
        .await
        .unwrap();
    let bangs = format!("{}input", "!".repeat(200_000));
    let parens = format!("{}input{}", "(".repeat(100_000), ")".repeat(100_000));
    let hostile = [
        json!({"type": "handshake/req", "id": "hs"}),
        json!({"type": "chain/req", "id": "c1", "entry_node": "a", "nodes": [
            {"node_id": "a", "kind": "tool", "name": "echo", "input_map": {"x": bangs}}]}),
        json!({"type": "chain/req", "id": "c2", "entry_node": "a", "nodes": [
            {"node_id": "a", "kind": "tool", "name": "echo", "input_map": {"x": parens}}]}),
        json!({"type": "tool/call/req", "id": "t1", "tool_name": "echo",
               "arguments": {}, "timeout": 10_000_000_000_000_000_000u64}),
        json!({"type": "chain/req", "id": "c3", "timeout": 10_000_000_000_000_000_000u64,
               "entry_node": "a", "nodes": [{"node_id": "a", "kind": "tool", "name": "echo"}]}),
        json!({"type": "ping", "id": "alive"}),
    ];
    for msg in &hostile {
        socket.send(WsMessage::text(msg.to_string())).await.unwrap();
    }
    let mut answers = std::collections::HashMap::new();
    while answers.len() < hostile.len() {
        let msg = next_json(&mut socket).await;
        if let Some(req_id) = msg["req_id"].as_str()
            && !msg["type"].as_str().unwrap_or_default().ends_with("event")
        {
            answers.insert(req_id.to_owned(), msg);
        }
    }
    for id in ["c1", "c2"] {
        assert_eq!(answers[id]["type"], "error", "{}", answers[id]);
        assert_eq!(answers[id]["code"], "schema_violation", "{}", answers[id]);
    }
    assert_eq!(answers["t1"]["data"]["success"], true, "{}", answers["t1"]);
    assert_eq!(answers["c3"]["type"], "chain/resp", "{}", answers["c3"]);
    assert_eq!(answers["alive"]["type"], "pong");
    // The other session never noticed.
    bystander.ping().await.unwrap();
    let result = bystander
        .tools()
        .call("echo", json!({"n": 1}))
        .await
        .unwrap();
    assert!(result.success);
    assert_eq!(server.state.active_sessions(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_frame_closes_that_connection_only() {
    let dir = tempfile::tempdir().unwrap();
    let counters = Arc::new(Counters::default());
    let host = a2e_host::Host::builder(a2e_host::HostConfig {
        root: dir.path().to_owned(),
        max_message_bytes: 64 * 1024,
        ..Default::default()
    })
    .with_tool_plugin(TestTools(counters))
    .build()
    .unwrap();
    let server = Server::start(host, NetOptions::default()).await;
    let other = Client::connect_ws(&server.ws_url()).await.unwrap();
    let client = Client::connect_ws(&server.ws_url()).await.unwrap();
    let big = "x".repeat(100 * 1024);
    let err = client
        .tools()
        .call("echo", json!({"big": big}))
        .await
        .unwrap_err();
    match &err {
        ClientError::ConnectionClosed(reason) => assert!(reason.contains("1009"), "{reason}"),
        other => panic!("expected the connection to close, got {other}"),
    }
    assert!(client.is_closed());
    // Other sessions go on; a message under the limit is fine.
    let small = "y".repeat(1024);
    let result = other
        .tools()
        .call("echo", json!({"s": small}))
        .await
        .unwrap();
    assert!(result.success);
    eventually(Duration::from_secs(10), || {
        server.state.active_sessions() == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_agent_has_its_chain_cancelled_and_processes_killed() {
    let (_dir, counters, host) = setup("");
    let server = Server::start(host, NetOptions::default()).await;
    let client = Client::connect_ws(&server.ws_url()).await.unwrap();
    let mut sleeper = ChainNode::new("sleeper", NodeKind::PROC, "");
    sleeper
        .input
        .insert("cmd".into(), json!(["sleep", "31.4159"]));
    let hang = ChainNode::new("hang", NodeKind::TOOL, "hang");
    let req = ChainRequest {
        nodes: vec![sleeper, hang],
        entry_node: "sleeper".into(),
        ..ChainRequest::default()
    };
    let mut run = client.chains().run(req).await.unwrap();
    let mut started = 0;
    while started < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), run.next())
            .await
            .unwrap()
            .unwrap();
        if event.phase == "start" {
            started += 1;
        }
    }
    eventually(Duration::from_secs(10), || {
        !pids_running("31.4159").is_empty() && counters.running.load(Ordering::SeqCst) == 1
    })
    .await;
    // The agent vanishes without a word.
    drop(run);
    drop(client);
    eventually(Duration::from_secs(15), || {
        pids_running("31.4159").is_empty()
    })
    .await;
    eventually(Duration::from_secs(15), || {
        counters.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    server.wait_no_sessions().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_cannot_keep_up_is_disconnected() {
    let (_dir, _counters, host) = setup("");
    let options = NetOptions {
        write_stall: Duration::from_millis(500),
        ..NetOptions::default()
    };
    let server = Server::start(host, options).await;
    let (mut socket, _) = tokio_tungstenite::connect_async(server.ws_url())
        .await
        .unwrap();
    socket
        .send(WsMessage::text(r#"{"type":"handshake/req","id":"h"}"#))
        .await
        .unwrap();
    let _ = next_json(&mut socket).await;
    // Ask for far more output than the socket buffers hold, and never read it.
    let (mut sink, stream) = socket.split();
    let payload = "z".repeat(60 * 1024);
    let flood = tokio::spawn(async move {
        for i in 0..400 {
            let line = json!({"type": "tool/call/req", "id": format!("c{i}"), "tool_name": "echo", "arguments": {"p": payload}});
            if sink.send(WsMessage::text(line.to_string())).await.is_err() {
                break;
            }
        }
    });
    server.wait_no_sessions().await;
    drop(stream);
    flood.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_over_the_rate_limit_is_slowed_down() {
    let (_dir, _counters, host) = setup("");
    let options = NetOptions {
        rate_per_sec: 20.0,
        burst: 5.0,
        ..NetOptions::default()
    };
    let server = Server::start(host, options).await;
    let client = Client::connect_ws(&server.ws_url()).await.unwrap();
    let started = std::time::Instant::now();
    for _ in 0..30 {
        client.ping().await.unwrap();
    }
    // 31 messages with the handshake, 5 free: at least 26 / 20 s.
    assert!(
        started.elapsed() >= Duration::from_millis(1200),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_drains_calls_in_flight() {
    let (_dir, _counters, host) = setup("");
    let server = Server::start(host, NetOptions::default()).await;
    let url = server.ws_url();
    let client = Client::connect_ws(&url).await.unwrap();
    let call = client
        .tools()
        .start(ToolCall::new("slow", json!({"ms": 1500})))
        .await
        .unwrap();
    // Let the call start before shutting down.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let state = server.state.clone();
    let stopping = tokio::spawn(server.shutdown());
    let result = call.finish().await.unwrap();
    assert!(result.success, "the call in flight finished: {result:?}");
    assert_eq!(result.data, json!({"slept": 1500}));
    tokio::time::timeout(Duration::from_secs(10), client.closed())
        .await
        .unwrap();
    assert!(
        client.close_reason().unwrap().contains("1001"),
        "{:?}",
        client.close_reason()
    );
    stopping.await.unwrap();
    assert_eq!(state.active_sessions(), 0);
    assert!(
        Client::connect_ws(&url).await.is_err(),
        "no longer accepting"
    );
}
