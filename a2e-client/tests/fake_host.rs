//! The client against a scripted host: correlation, out-of-order answers,
//! events, push handlers, pings from the host, duplicate and late answers,
//! malformed lines, a refused handshake, a connection that drops mid-request.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_client::{Client, ClientBuilder, ClientError, ToolCall};
use a2e_proto::Message;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// The host's end of the pipe.
struct FakeHost {
    lines: Lines<BufReader<DuplexStream>>,
    writer: DuplexStream,
}

impl FakeHost {
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a line within 10 s")
            .unwrap()
            .expect("the client is connected");
        serde_json::from_str(&line).unwrap()
    }

    async fn send(&mut self, value: Value) {
        self.send_raw(&value.to_string()).await;
    }

    async fn send_raw(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
        self.writer.flush().await.unwrap();
    }
}

/// Connects a client to a fake host that accepts the handshake (or refuses it).
async fn connect_with(
    builder: ClientBuilder,
    refuse: Option<&str>,
) -> (Result<Client, ClientError>, FakeHost) {
    let (client_w, host_r) = tokio::io::duplex(1 << 16);
    let (host_w, client_r) = tokio::io::duplex(1 << 16);
    let connecting = tokio::spawn(builder.connect_io(client_r, client_w));
    let mut host = FakeHost {
        lines: BufReader::new(host_r).lines(),
        writer: host_w,
    };
    let hello = host.recv().await;
    assert_eq!(hello["type"], "handshake/req");
    let mut resp = json!({
        "type": "handshake/resp", "req_id": hello["id"], "session_id": "s-1",
        "accepted_caps": [{"capability": "tools", "enabled": true}, {"capability": "chains", "enabled": false}],
        "max_parallel": 8
    });
    if let Some(reason) = refuse {
        resp["ok"] = json!(false);
        resp["reason"] = json!(reason);
    }
    host.send(resp).await;
    (connecting.await.unwrap(), host)
}

async fn connect() -> (Client, FakeHost) {
    let (client, host) = connect_with(Client::builder().agent_id("fake-test"), None).await;
    (client.unwrap(), host)
}

fn tool_resp(req_id: &Value, data: Value) -> Value {
    json!({"type": "tool/call/resp", "req_id": req_id, "data": {"success": true, "tool_name": "t", "data": data, "duration_ms": 1}})
}

#[tokio::test]
async fn the_handshake_carries_the_agent_and_exposes_the_session() {
    let (client, _host) = connect().await;
    assert_eq!(client.session_id(), "s-1");
    assert_eq!(client.max_parallel(), 8);
    assert!(client.has_capability(&a2e_proto::A2ECapability::TOOLS));
    assert!(
        !client.has_capability(&a2e_proto::A2ECapability::CHAINS),
        "disabled caps are not usable"
    );
    assert_eq!(client.accepted_caps().len(), 2);
}

#[tokio::test]
async fn a_refused_handshake_is_an_error_naming_the_reason() {
    let (result, _host) =
        connect_with(Client::builder().auth_token("bad"), Some("auth_failed")).await;
    match result {
        Err(ClientError::HandshakeRefused { reason }) => assert_eq!(reason, "auth_failed"),
        other => panic!("expected a refused handshake, got {other:?}"),
    }
}

#[tokio::test]
async fn answers_in_any_order_reach_their_requests() {
    let (client, mut host) = connect().await;
    let calls: Vec<_> = (0..3)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move { client.tools().call("t", json!({"n": n})).await })
        })
        .collect();
    let mut reqs = Vec::new();
    for _ in 0..3 {
        reqs.push(host.recv().await);
    }
    assert!(reqs.iter().all(|r| r["session_id"] == "s-1"));
    for req in reqs.iter().rev() {
        host.send(tool_resp(&req["id"], req["arguments"].clone()))
            .await;
    }
    for (n, call) in calls.into_iter().enumerate() {
        let result = call.await.unwrap().unwrap();
        assert_eq!(result.data, json!({"n": n}));
    }
    assert_eq!(client.pending_requests(), 0);
}

#[tokio::test]
async fn events_stream_in_order_then_the_result() {
    let (client, mut host) = connect().await;
    let mut call = client
        .tools()
        .start(ToolCall::new("t", json!({})).correlation_id("turn-7"))
        .await
        .unwrap();
    let req = host.recv().await;
    assert_eq!(req["streaming"], true);
    assert_eq!(req["correlation_id"], "turn-7");
    for seq in 0..3 {
        host.send(json!({"type": "tool/event", "kind": "progress", "req_id": req["id"], "seq": seq, "data": {"pct": seq * 50}}))
            .await;
    }
    // An event of another request does not land here.
    host.send(json!({"type": "tool/event", "req_id": "someone-else", "kind": "log"}))
        .await;
    host.send(tool_resp(&req["id"], json!("ok"))).await;
    let seqs: Vec<u64> = (&mut call).map(|e| e.seq).collect().await;
    assert_eq!(seqs, [0, 1, 2]);
    assert_eq!(call.finish().await.unwrap().data, json!("ok"));
}

#[tokio::test]
async fn unsolicited_messages_reach_push_handlers_and_pings_are_answered() {
    let (client, mut host) = connect().await;
    let pushed: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = pushed.clone();
    client.on_push(move |msg: &Message| sink.lock().unwrap().push(msg.type_str().to_owned()));
    host.send(json!({"type": "ping", "id": "host-ping"})).await;
    let pong = host.recv().await;
    assert_eq!(
        (pong["type"].as_str(), pong["req_id"].as_str()),
        (Some("pong"), Some("host-ping"))
    );
    host.send(json!({"type": "invoke/event", "req_id": "nobody", "kind": "status", "data": {"message": "hi"}})).await;
    host.send(json!({"type": "memory/notify", "id": "m1"}))
        .await;
    // A malformed line is skipped; the connection goes on.
    host.send_raw("{this is not json").await;
    let ping = tokio::spawn({
        let client = client.clone();
        async move { client.ping().await }
    });
    let req = host.recv().await;
    host.send(json!({"type": "pong", "req_id": req["id"]}))
        .await;
    ping.await.unwrap().unwrap();
    assert_eq!(*pushed.lock().unwrap(), ["invoke/event", "memory/notify"]);
}

#[tokio::test]
async fn a_duplicate_or_late_answer_is_not_delivered_twice() {
    let (client, mut host) = connect().await;
    let pushed = Arc::new(Mutex::new(0));
    let count = pushed.clone();
    client.on_push(move |_| *count.lock().unwrap() += 1);
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.tools().call("t", json!({})).await }
    });
    let req = host.recv().await;
    host.send(tool_resp(&req["id"], json!(1))).await;
    host.send(tool_resp(&req["id"], json!(2))).await;
    assert_eq!(call.await.unwrap().unwrap().data, json!(1));
    // A call the client gave up on: its late answer is unsolicited.
    let err = client
        .tools()
        .call_with(ToolCall::new("t", json!({})).client_timeout(Duration::from_millis(100)))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout(_)), "{err}");
    assert!(err.is_retryable());
    let late = host.recv().await;
    host.send(tool_resp(&late["id"], json!(3))).await;
    // A round trip makes sure both extra answers were read.
    let ping = tokio::spawn({
        let client = client.clone();
        async move { client.ping().await }
    });
    let req = host.recv().await;
    host.send(json!({"type": "pong", "req_id": req["id"]}))
        .await;
    ping.await.unwrap().unwrap();
    assert_eq!(*pushed.lock().unwrap(), 2);
    assert_eq!(client.pending_requests(), 0);
}

#[tokio::test]
async fn an_error_answer_is_a_protocol_error_with_its_code() {
    let (client, mut host) = connect().await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.tools().call("t", json!({})).await }
    });
    let req = host.recv().await;
    host.send(json!({"type": "error", "req_id": req["id"], "code": "tool_denied", "message": "not here", "detail": {"why": "policy"}}))
        .await;
    match call.await.unwrap().unwrap_err() {
        ClientError::Protocol {
            code,
            message,
            detail,
            retryable,
            ..
        } => {
            assert_eq!(code, a2e_proto::ErrorCode::TOOL_DENIED);
            assert_eq!(message, "not here");
            assert_eq!(detail["why"], "policy");
            assert!(!retryable);
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn a_dropped_connection_fails_every_pending_request() {
    let (client, mut host) = connect().await;
    let calls: Vec<_> = (0..5)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.tools().call("t", json!({})).await })
        })
        .collect();
    for _ in 0..5 {
        host.recv().await;
    }
    drop(host);
    for call in calls {
        let err = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("fails promptly")
            .unwrap()
            .unwrap_err();
        assert!(matches!(err, ClientError::ConnectionClosed(_)), "{err}");
    }
    assert!(client.is_closed());
    assert!(client.close_reason().unwrap().contains("closed"));
    let err = client.ping().await.unwrap_err();
    assert!(matches!(err, ClientError::ConnectionClosed(_)), "{err}");
}

#[tokio::test]
async fn process_output_sent_before_the_spawn_answer_is_kept() {
    let (client, mut host) = connect().await;
    let spawn = tokio::spawn({
        let client = client.clone();
        async move {
            let mut p = client.proc().spawn(["echo", "hi"]).await?;
            p.wait(Duration::from_secs(5)).await
        }
    });
    let req = host.recv().await;
    assert_eq!(req["cmd"], json!(["echo", "hi"]));
    // The process is quick: its output and its end overtake the answer.
    host.send(json!({"type": "proc/read/event", "req_id": req["id"], "proc_id": "p1", "stream_type": "stdout", "data": {"text": "hi"}}))
        .await;
    host.send(json!({"type": "proc/read/event", "req_id": req["id"], "proc_id": "p1", "stream_type": "killed", "seq": 1, "data": {"code": 0, "state": "stopped"}}))
        .await;
    host.send(json!({"type": "proc/spawn/resp", "req_id": req["id"], "proc_id": "p1", "ok": true, "pid": 42})).await;
    let exit = spawn.await.unwrap().unwrap();
    assert_eq!(exit.stdout, "hi");
    assert_eq!(exit.code, Some(0));
    assert_eq!(exit.state, "stopped");
    assert_eq!(client.pending_requests(), 0);
}

#[tokio::test]
async fn an_answer_that_does_not_decode_fails_its_request_at_once() {
    let (client, mut host) = connect_with(Client::builder().peer_name("plugin `p`"), None).await;
    let client = client.unwrap();
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.tools().call("t", json!({})).await }
    });
    let req = host.recv().await;
    host.send(json!({"type": "tool/call/resp", "req_id": req["id"], "data": "HELLO"}))
        .await;
    let err = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call waited past a broken answer")
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, ClientError::Malformed(_)), "{err:?}");
    let said = err.to_string();
    assert!(
        said.contains("plugin `p`") && said.contains("`tool/call/resp` that does not decode"),
        "{said}"
    );
    // The connection goes on.
    let ping = tokio::spawn({
        let client = client.clone();
        async move { client.ping().await }
    });
    let req = host.recv().await;
    host.send(json!({"type": "pong", "req_id": req["id"]}))
        .await;
    ping.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_line_that_is_not_json_fails_the_requests_waiting() {
    let (client, mut host) = connect().await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.tools().call("t", json!({})).await }
    });
    let _req = host.recv().await;
    host.send_raw("HELLO").await;
    let err = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call waited past a line that is not JSON")
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the host wrote a line that is not an A2E message: `HELLO`"
    );
    assert!(!client.is_closed());
}

#[tokio::test]
async fn attach_and_dag_requests_go_out_as_their_own_messages() {
    let (client, mut host) = connect().await;
    let attach = {
        let client = client.clone();
        tokio::spawn(async move {
            let target = a2e_client::AttachTarget::ChainRequest("req-7".into());
            let call = client
                .chains()
                .attach(target, 2, Duration::from_secs(10))
                .await?;
            call.finish().await
        })
    };
    let req = host.recv().await;
    assert_eq!(req["type"], "chain/attach");
    assert_eq!(
        (&req["chain_req_id"], &req["from_seq"]),
        (&json!("req-7"), &json!(2))
    );
    assert!(req.get("run_id").is_none(), "{req}");
    // The line decodes as the typed message, not as an unknown one.
    let decoded = a2e_proto::decode(req.to_string().as_bytes()).unwrap();
    assert!(matches!(decoded, Message::ChainAttach(_)), "{decoded:?}");
    host.send(json!({"type": "chain/resp", "req_id": req["id"], "chain_id": "c", "success": true}))
        .await;
    assert!(attach.await.unwrap().unwrap().success);

    let dag = json!({"dag_id": "d", "tasks": []});
    let mut run = client
        .chains()
        .run_dag(
            a2e_proto::DagRequest {
                dag: dag.clone(),
                streaming: true,
                ..Default::default()
            },
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    let req = host.recv().await;
    assert_eq!((&req["type"], &req["dag"]), (&json!("dag/req"), &dag));
    host.send(json!({"type": "chain/event", "req_id": req["id"], "chain_id": "c", "node_id": "x", "phase": "start", "seq": 1}))
        .await;
    host.send(json!({"type": "chain/resp", "req_id": req["id"], "chain_id": "c", "success": false, "error": {"code": "chain_failed"}}))
        .await;
    let nodes: Vec<String> = (&mut run).map(|e| e.node_id).collect().await;
    assert_eq!(nodes, ["x"]);
    assert!(!run.finish().await.unwrap().success);
}
