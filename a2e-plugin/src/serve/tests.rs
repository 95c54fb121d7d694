//! The server as an agent sees it, in process over a pipe pair: listing and
//! calling typed tools, refusals, events, timeouts, the session's end.

use std::time::Duration;

use a2e_client::{Client, ClientError, ToolCall};
use a2e_proto::{A2ECapability, ErrorCode};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{MAX_LINE_BYTES, serve_io};
use crate::{Error, Toolbox};

#[derive(Deserialize, JsonSchema)]
struct RepeatArgs {
    text: String,
    times: u32,
}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

fn toolbox() -> Toolbox {
    Toolbox::new("notes")
        .tool("repeat", "Repeat a text", |a: RepeatArgs, cx| async move {
            cx.progress(50, "halfway").await;
            Ok(a.text.repeat(a.times as usize))
        })
        .tool("sleep", "Sleep", |a: SleepArgs, cx| async move {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(a.ms)) => Ok(json!("woke")),
                () = cx.cancel.cancelled() => Err(Error::Cancelled),
            }
        })
        .tool("fail", "Always fails", |_: Value, _cx| async move {
            Err::<Value, _>(Error::failed("it broke"))
        })
}

/// A client connected in process to `toolbox()` served over a pipe pair.
async fn connect() -> (Client, tokio::task::JoinHandle<std::io::Result<()>>) {
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    let server = tokio::spawn(serve_io(toolbox(), server_read, server_write));
    let (client_read, client_write) = tokio::io::split(client_side);
    let client = Client::builder()
        .capabilities([A2ECapability::TOOLS, A2ECapability::CHAINS])
        .connect_io(client_read, client_write)
        .await
        .unwrap();
    (client, server)
}

#[tokio::test]
async fn lists_and_calls_typed_tools() {
    let (client, server) = connect().await;
    let chains = client
        .accepted_caps()
        .iter()
        .find(|c| c.capability == A2ECapability::CHAINS)
        .unwrap();
    assert!(!chains.enabled, "only tools are offered: {chains:?}");

    let tools = client.tools().list().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["repeat", "sleep", "fail"]);
    let repeat = &tools[0];
    assert_eq!(repeat.description, "Repeat a text");
    assert_eq!(repeat.input_parameters.len(), 2);

    let result = client
        .tools()
        .call("repeat", json!({"text": "ab", "times": 3}))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    assert_eq!(result.data, "ababab");
    assert_eq!(
        result.events.len(),
        1,
        "the progress event is in the result"
    );

    let failed = client.tools().call("fail", json!({})).await.unwrap();
    assert!(!failed.success);
    assert_eq!(failed.error_code, Some(ErrorCode::TOOL_ERROR));
    assert_eq!(failed.error.as_deref(), Some("it broke"));

    client.shutdown(5).await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn refusals_name_what_is_wrong() {
    let (client, _server) = connect().await;
    let err = client
        .tools()
        .call("repeat", json!({"text": "ab", "times": "many"}))
        .await
        .unwrap_err();
    let ClientError::Protocol { code, message, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*code, ErrorCode::SCHEMA_VIOLATION);
    assert!(message.contains("times"), "{message}");

    let err = client.tools().call("nope", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::UNKNOWN_TOOL), "{err:?}");
    // The session goes on.
    client.ping().await.unwrap();
}

#[tokio::test]
async fn events_stream_in_order_before_the_answer() {
    let (client, _server) = connect().await;
    let mut seen = Vec::new();
    let call = ToolCall::new("repeat", json!({"text": "x", "times": 2}));
    let result = client
        .tools()
        .call_with_events(call, |e| seen.push(e))
        .await
        .unwrap();
    assert!(result.success);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].seq, 0);
    assert_eq!(seen[0].data["pct"], 50);
}

#[tokio::test]
async fn a_call_past_its_timeout_fails_with_timeout() {
    let (client, _server) = connect().await;
    let call = ToolCall::new("sleep", json!({"ms": 5_000})).timeout_secs(1);
    let result = client.tools().call_with(call).await.unwrap();
    assert!(!result.success);
    assert_eq!(result.error_code, Some(ErrorCode::TIMEOUT));
}

#[tokio::test]
async fn requests_before_the_handshake_and_overlong_lines_are_refused() {
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    let server = tokio::spawn(serve_io(toolbox(), server_read, server_write));
    let (read, mut write) = tokio::io::split(client_side);
    let mut lines = BufReader::new(read).lines();
    write
        .write_all(b"{\"type\":\"tool/list/req\",\"id\":\"early\",\"version\":\"1.0\"}\n")
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["type"], "error");
    assert_eq!(answer["code"], "unauthorized");
    assert_eq!(answer["req_id"], "early");

    let long = vec![b'x'; MAX_LINE_BYTES + 10];
    write.write_all(&long).await.unwrap();
    write
        .write_all(b"\n{\"type\":\"ping\",\"id\":\"p1\"}\n")
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["code"], "invalid_message", "{answer}");
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["type"], "pong");
    assert_eq!(answer["req_id"], "p1");

    // The input ends when both halves of the pipe are gone.
    drop(write);
    drop(lines);
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_end_of_input_cancels_the_calls_in_flight() {
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<bool>();
    let started = std::sync::Mutex::new(Some(started_tx));
    let ended = std::sync::Arc::new(std::sync::Mutex::new(Some(ended_tx)));
    let tools = Toolbox::new("t").tool("wait", "Waits", move |_: Value, cx| {
        if let Some(tx) = started.lock().unwrap().take() {
            let _ = tx.send(());
        }
        let ended = ended.clone();
        async move {
            cx.cancel.cancelled().await;
            if let Some(tx) = ended.lock().unwrap().take() {
                let _ = tx.send(true);
            }
            Err::<Value, _>(Error::Cancelled)
        }
    });
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    let server = tokio::spawn(serve_io(tools, server_read, server_write));
    let (read, mut write) = tokio::io::split(client_side);
    write
        .write_all(b"{\"type\":\"handshake/req\",\"id\":\"h\",\"agent_caps\":[\"tools\"]}\n{\"type\":\"tool/call/req\",\"id\":\"c\",\"tool_name\":\"wait\",\"arguments\":{}}\n")
        .await
        .unwrap();
    started_rx.await.unwrap();
    drop(write);
    drop(read);
    assert!(ended_rx.await.unwrap(), "the call saw its cancellation");
    // The writer's output is gone: the server ends with the write's error or cleanly.
    let _ = server.await.unwrap();
}
