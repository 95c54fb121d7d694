//! Sessions over an in-memory NDJSON pipe, with test plugins: handshake paths,
//! authorisation, concurrency, timeouts, panics, malformed lines.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2e_host::plugin::{CallContext, ToolOutput, ToolPlugin};
use a2e_host::transport::stdio::{StdioOptions, serve};
use a2e_host::{Host, HostConfig, HostError, HostResult};
use a2e_proto::{ToolDefinition, ToolParameter};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// Tools for exercising the dispatcher.
struct TestTools {
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
}

impl ToolPlugin<HostError> for TestTools {
    fn name(&self) -> &str {
        "test"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![
            ToolDefinition::new("echo", "Echo the arguments")
                .param(ToolParameter::new("text", "string", "text").required()),
            ToolDefinition::new("slow", "Sleep for ms milliseconds")
                .param(ToolParameter::new("ms", "integer", "milliseconds").required()),
            ToolDefinition::new("hang", "Never returns"),
            ToolDefinition::new("boom", "Panics"),
            ToolDefinition::new("chatty", "Emits three events"),
            {
                let mut d = ToolDefinition::new("hidden_gem", "A deferred tool for searching");
                d.defer_loading = true;
                d
            },
        ]
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> HostResult<ToolOutput> {
        match tool {
            "echo" => Ok(Value::Object(args).into()),
            "slow" => {
                let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
                self.peak.fetch_max(now, Ordering::SeqCst);
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                self.running.fetch_sub(1, Ordering::SeqCst);
                Ok(json!({"slept": ms}).into())
            }
            "hang" => {
                ctx.cancel.cancelled().await;
                self.cancelled.fetch_add(1, Ordering::SeqCst);
                std::future::pending().await
            }
            "boom" => panic!("kaboom"),
            "chatty" => {
                for i in 0..3 {
                    ctx.progress(i * 50, format!("step {i}")).await;
                }
                Ok(json!("done").into())
            }
            other => Err(a2e_host::HostError::UnknownTool(other.into())),
        }
    }
}

struct Harness {
    writer: DuplexStream,
    reader: tokio::io::Lines<BufReader<DuplexStream>>,
    peak: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
    server: tokio::task::JoinHandle<()>,
}

impl Harness {
    fn start(config: HostConfig) -> Self {
        Self::with_pipe(config, 1 << 20)
    }

    /// A session whose pipe towards the agent holds `to_agent` bytes.
    fn with_pipe(config: HostConfig, to_agent: usize) -> Self {
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let cancelled = Arc::new(AtomicUsize::new(0));
        let host = Host::builder(config)
            .with_tool_plugin(TestTools {
                running,
                peak: peak.clone(),
                cancelled: cancelled.clone(),
            })
            .build()
            .unwrap();
        let (client_w, server_r) = tokio::io::duplex(1 << 20);
        let (server_w, client_r) = tokio::io::duplex(to_agent);
        let server = tokio::spawn(serve(host, server_r, server_w, StdioOptions::default()));
        Self {
            writer: client_w,
            reader: BufReader::new(client_r).lines(),
            peak,
            cancelled,
            server,
        }
    }

    async fn send(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.reader.next_line())
            .await
            .expect("an answer within 10 s")
            .unwrap()
            .expect("the host closed the stream");
        serde_json::from_str(&line).unwrap()
    }

    async fn handshake(&mut self, extra: &str) -> Value {
        self.send(&format!(
            r#"{{"type":"handshake/req","id":"hs","agent_id":"tester"{extra}}}"#
        ))
        .await;
        self.recv().await
    }
}

#[tokio::test]
async fn requests_before_handshake_are_unauthorized_but_ping_works() {
    let mut h = Harness::start(HostConfig::default());
    h.send(r#"{"type":"tool/list/req","id":"l1"}"#).await;
    let e = h.recv().await;
    assert_eq!(e["type"], "error");
    assert_eq!(e["code"], "unauthorized");
    assert_eq!(e["req_id"], "l1");
    h.send(r#"{"type":"ping","id":"p1"}"#).await;
    let pong = h.recv().await;
    assert_eq!(pong["type"], "pong");
    assert_eq!(pong["req_id"], "p1");
    assert!(pong["uptime_seconds"].as_f64().unwrap() >= 0.0);
}

#[tokio::test]
async fn handshake_negotiates_capabilities() {
    let mut h = Harness::start(HostConfig::default());
    let resp = h.handshake(r#","agent_caps":["tools","memory"]"#).await;
    assert_eq!(resp["type"], "handshake/resp");
    assert_eq!(resp["ok"], true);
    assert_eq!(resp["req_id"], "hs");
    assert_eq!(resp["max_parallel"], 4);
    let caps = resp["accepted_caps"].as_array().unwrap();
    assert_eq!(caps.len(), 2);
    assert_eq!(caps[0]["capability"], "tools");
    assert_eq!(caps[0]["enabled"], true);
    assert_eq!(caps[0]["metadata"]["name"], "test");
    assert_eq!(caps[1]["capability"], "memory");
    assert_eq!(caps[1]["enabled"], false);
    assert_eq!(caps[1]["metadata"]["reason"], "no plugin loaded");
    // A capability not accepted is unauthorized.
    h.send(r#"{"type":"chain/req","id":"c1","nodes":[],"entry_node":""}"#)
        .await;
    let e = h.recv().await;
    assert_eq!(e["code"], "unauthorized");
    assert_eq!(e["capability_name"], "chains");
}

#[tokio::test]
async fn wrong_or_missing_token_fails_the_handshake() {
    let config = HostConfig {
        auth_token: "correct horse".into(),
        ..HostConfig::default()
    };
    let mut h = Harness::start(config);
    let resp = h.handshake(r#","auth_token":"wrong""#).await;
    assert_eq!(resp["ok"], false);
    assert_eq!(resp["reason"], "auth_failed");
    let resp = h.handshake("").await;
    assert_eq!(resp["reason"], "auth_failed");
    h.send(r#"{"type":"tool/list/req","id":"l1"}"#).await;
    assert_eq!(h.recv().await["code"], "unauthorized");
    let resp = h.handshake(r#","auth_token":"correct horse""#).await;
    assert_eq!(resp["ok"], true);
    h.send(r#"{"type":"tool/list/req","id":"l2"}"#).await;
    assert_eq!(h.recv().await["type"], "tool/list/resp");
}

#[tokio::test]
async fn list_hides_deferred_tools_and_search_finds_them() {
    let mut h = Harness::start(HostConfig::default());
    h.handshake("").await;
    h.send(r#"{"type":"tool/list/req","id":"l1"}"#).await;
    let names: Vec<String> = h.recv().await["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"echo".to_owned()));
    assert!(!names.contains(&"hidden_gem".to_owned()));
    h.send(r#"{"type":"tool/list/req","id":"l2","query":"gem","include_deferred":true}"#)
        .await;
    let found = h.recv().await;
    assert_eq!(found["tools"][0]["name"], "hidden_gem");
    h.send(r#"{"type":"tool/list/req","id":"l3","query":"gem"}"#)
        .await;
    assert_eq!(h.recv().await["tools"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn malformed_lines_are_answered_and_the_session_survives() {
    let mut h = Harness::start(HostConfig::default());
    h.handshake("").await;
    let cases = [
        ("{\"type\":\"ping\"", "parse_error"),
        ("[1,2,3]", "invalid_message"),
        ("{\"id\":\"x\"}", "invalid_message"),
        ("{\"type\":\"nope/req\",\"id\":\"u1\"}", "invalid_message"),
        (
            "{\"type\":\"ping\",\"version\":\"2.0\"}",
            "version_mismatch",
        ),
        (
            "{\"type\":\"tool/call/req\",\"id\":\"t1\",\"tool_name\":7,\"arguments\":{}}",
            "schema_violation",
        ),
        (
            "{\"type\":\"tool/call/req\",\"id\":\"t2\",\"tool_name\":\"echo\",\"arguments\":{}}",
            "schema_violation",
        ),
        (
            "{\"type\":\"tool/call/req\",\"id\":\"t3\",\"tool_name\":\"zzz\",\"arguments\":{}}",
            "unknown_tool",
        ),
        (
            "{\"type\":\"tool/list/resp\",\"id\":\"r1\"}",
            "invalid_message",
        ),
    ];
    for (line, code) in cases {
        h.send(line).await;
        let e = h.recv().await;
        assert_eq!(e["type"], "error", "{line}");
        assert_eq!(e["code"], code, "{line} → {e}");
    }
    h.send(r#"{"type":"tool/call/req","id":"ok","tool_name":"echo","arguments":{"text":"still here"}}"#)
        .await;
    let r = h.recv().await;
    assert_eq!(r["type"], "tool/call/resp");
    assert_eq!(r["data"]["data"]["text"], "still here");
}

#[tokio::test]
async fn concurrency_is_bounded_by_max_parallel_and_every_request_is_answered() {
    let config = HostConfig {
        max_parallel: 3,
        ..HostConfig::default()
    };
    let mut h = Harness::start(config);
    h.handshake("").await;
    for i in 0..12 {
        h.send(&format!(
            r#"{{"type":"tool/call/req","id":"s{i}","tool_name":"slow","arguments":{{"ms":40}}}}"#
        ))
        .await;
    }
    let mut seen = std::collections::HashSet::new();
    for _ in 0..12 {
        let r = h.recv().await;
        assert_eq!(r["type"], "tool/call/resp");
        assert_eq!(r["data"]["success"], true);
        assert!(seen.insert(r["req_id"].as_str().unwrap().to_owned()));
    }
    assert_eq!(seen.len(), 12);
    let peak = h.peak.load(Ordering::SeqCst);
    assert!(peak <= 3, "peak concurrency {peak} exceeded max_parallel 3");
    assert!(
        peak >= 2,
        "requests were not run concurrently (peak {peak})"
    );
}

#[tokio::test]
async fn a_hanging_tool_times_out_and_its_token_fires() {
    let mut h = Harness::start(HostConfig::default());
    h.handshake("").await;
    h.send(r#"{"type":"tool/call/req","id":"h1","tool_name":"hang","arguments":{},"timeout":1}"#)
        .await;
    let r = h.recv().await;
    assert_eq!(r["type"], "tool/call/resp");
    assert_eq!(r["data"]["success"], false);
    assert_eq!(r["data"]["error_code"], "timeout");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(h.cancelled.load(Ordering::SeqCst), 1);
    // The session still serves.
    h.send(r#"{"type":"ping","id":"p"}"#).await;
    assert_eq!(h.recv().await["type"], "pong");
}

#[tokio::test]
async fn a_panicking_tool_is_a_tool_error_and_others_go_on() {
    let mut h = Harness::start(HostConfig::default());
    h.handshake("").await;
    h.send(r#"{"type":"tool/call/req","id":"b1","tool_name":"boom","arguments":{}}"#)
        .await;
    let r = h.recv().await;
    assert_eq!(r["data"]["success"], false);
    assert_eq!(r["data"]["error_code"], "tool_error");
    assert!(r["data"]["error"].as_str().unwrap().contains("kaboom"));
    h.send(r#"{"type":"tool/call/req","id":"e1","tool_name":"echo","arguments":{"text":"x"}}"#)
        .await;
    assert_eq!(h.recv().await["data"]["success"], true);
}

#[tokio::test]
async fn streaming_events_carry_seq_and_are_collected() {
    let mut h = Harness::start(HostConfig::default());
    h.handshake("").await;
    h.send(r#"{"type":"tool/call/req","id":"c1","tool_name":"chatty","arguments":{},"streaming":true}"#).await;
    for seq in 0..3 {
        let ev = h.recv().await;
        assert_eq!(ev["type"], "tool/event");
        assert_eq!(ev["req_id"], "c1");
        assert_eq!(ev["kind"], "progress");
        assert_eq!(ev["seq"], seq);
    }
    let r = h.recv().await;
    assert_eq!(r["type"], "tool/call/resp");
    assert_eq!(r["data"]["events"].as_array().unwrap().len(), 3);
    // Without streaming, events are only collected.
    h.send(r#"{"type":"tool/call/req","id":"c2","tool_name":"chatty","arguments":{}}"#)
        .await;
    let r = h.recv().await;
    assert_eq!(r["type"], "tool/call/resp");
    assert_eq!(r["data"]["events"][2]["seq"], 2);
}

#[tokio::test]
async fn shutdown_drains_in_flight_work_then_closes() {
    let mut h = Harness::start(HostConfig::default());
    h.handshake("").await;
    h.send(r#"{"type":"tool/call/req","id":"s1","tool_name":"slow","arguments":{"ms":100}}"#)
        .await;
    h.send(r#"{"type":"shutdown","id":"bye","timeout":5}"#)
        .await;
    let r = h.recv().await;
    assert_eq!(r["req_id"], "s1");
    assert_eq!(r["data"]["success"], true);
    tokio::time::timeout(Duration::from_secs(10), &mut h.server)
        .await
        .expect("the session ends after shutdown")
        .unwrap();
}

#[tokio::test]
async fn oversize_lines_are_refused_and_the_stream_resyncs() {
    let config = HostConfig {
        max_message_bytes: 1024,
        ..HostConfig::default()
    };
    let mut h = Harness::start(config);
    h.handshake("").await;
    let big = format!(
        r#"{{"type":"tool/call/req","id":"big","tool_name":"echo","arguments":{{"text":"{}"}}}}"#,
        "x".repeat(5000)
    );
    h.send(&big).await;
    let e = h.recv().await;
    assert_eq!(e["code"], "invalid_message");
    assert!(e["message"].as_str().unwrap().contains("1024"));
    h.send(r#"{"type":"ping","id":"after"}"#).await;
    assert_eq!(h.recv().await["req_id"], "after");
}

/// What an agent that stops reading for 1.5 s after sending a streaming
/// chain of 1,200 one-millisecond nodes receives: the events' `seq`s, the
/// `done` nodes in order, the response, and the answer to a ping sent after.
async fn chain_behind_a_slow_reader(config: HostConfig) -> (Vec<u64>, Vec<String>, Value, Value) {
    // A small pipe towards the agent: the host's writer blocks as soon as
    // the agent stops reading, its channel fills, and the chain's event
    // runs queue behind it.
    let mut h = Harness::with_pipe(config, 4096);
    let hs = h.handshake("").await;
    assert_eq!(hs["ok"], true, "{hs}");
    // 1,200 nodes in a line that each wait a millisecond: the engine waits,
    // and hands on a run of events, after every node; while the agent is not
    // reading, more runs than the writer's 64 KiB buffer and the session's
    // channel hold pile up (hundreds of them queue behind the channel).
    let nodes: Vec<Value> = (0..SLOW_NODES)
        .map(|i| {
            let mut node = json!({"node_id": format!("n{i}"), "kind": "tool", "name": "slow", "input": {"ms": 1}});
            if i + 1 < SLOW_NODES {
                node["next_node"] = json!(format!("n{}", i + 1));
            }
            node
        })
        .collect();
    let chain = json!({
        "type": "chain/req", "id": "c1", "entry_node": "n0", "streaming": true,
        "nodes": nodes,
    });
    h.send(&chain.to_string()).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut seqs = Vec::new();
    let mut done = Vec::new();
    let resp = loop {
        let msg = h.recv().await;
        match msg["type"].as_str() {
            Some("chain/event") => {
                assert_eq!(msg["req_id"], "c1");
                assert_eq!(msg["id"].as_str().map(str::len), Some(32), "{msg}");
                seqs.push(msg["seq"].as_u64().unwrap());
                if msg["phase"] == "done" {
                    done.push(msg["node_id"].as_str().unwrap().to_owned());
                }
            }
            Some("chain/resp") => break msg,
            other => panic!("unexpected {other:?}: {msg}"),
        }
    };
    // The session goes on.
    h.send(r#"{"type":"ping","id":"p1"}"#).await;
    let pong = h.recv().await;
    drop(h.writer);
    h.server.await.unwrap();
    (seqs, done, resp, pong)
}

const SLOW_NODES: usize = 1200;

/// `seqs` are 0, 1, … up to `events`, none missing, none out of order.
fn assert_every_event(seqs: &[u64], events: usize) {
    let expected: Vec<u64> = (0..events as u64).collect();
    assert!(
        seqs == expected,
        "events out of order or missing: {} of them",
        seqs.len()
    );
}

#[tokio::test]
async fn a_streaming_chains_events_come_in_order_before_its_response_behind_a_slow_reader() {
    let (seqs, done, resp, pong) = chain_behind_a_slow_reader(HostConfig::default()).await;
    assert_eq!(resp["success"], true, "{resp}");
    assert_every_event(&seqs, 2 * SLOW_NODES);
    let in_order: Vec<String> = (0..SLOW_NODES).map(|i| format!("n{i}")).collect();
    assert_eq!(done, in_order);
    assert_eq!(pong["type"], "pong", "{pong}");
}

#[tokio::test]
async fn a_streaming_chain_whose_agent_leaves_too_much_unread_is_cancelled() {
    let config = HostConfig {
        max_queued_event_bytes: 16 * 1024,
        ..HostConfig::default()
    };
    let (seqs, done, resp, pong) = chain_behind_a_slow_reader(config).await;
    assert_eq!(resp["success"], false, "{resp}");
    assert_eq!(resp["error"]["code"], "cancelled", "{resp}");
    let message = resp["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("more than 16384 bytes of its events unread (max_queued_event_bytes)"),
        "{message}"
    );
    // What was sent is a gapless prefix, in order; the rest was dropped.
    let expected: Vec<u64> = (0..seqs.len() as u64).collect();
    assert_eq!(seqs, expected);
    assert!(seqs.len() < 2 * SLOW_NODES, "{} events", seqs.len());
    assert!(done.len() < SLOW_NODES);
    assert_eq!(pong["type"], "pong", "{pong}");
}

/// 1,000 nodes that answer at once: their ~200 KB of events go out as one
/// run in 64 KiB segments, written to the pipe as they are. Through a small
/// pipe (the writes block and resume part-way) they all arrive, in order,
/// before the response.
#[tokio::test]
async fn a_stretch_of_inline_nodes_streams_every_event_in_order_through_a_small_pipe() {
    const NODES: usize = 1000;
    let mut h = Harness::with_pipe(HostConfig::default(), 4096);
    let hs = h.handshake("").await;
    assert_eq!(hs["ok"], true, "{hs}");
    let nodes: Vec<Value> = (0..NODES)
        .map(|i| {
            let mut node = json!({"node_id": format!("n{i}"), "kind": "tool", "name": "echo", "input": {"text": format!("t{i}")}});
            if i + 1 < NODES {
                node["next_node"] = json!(format!("n{}", i + 1));
            }
            node
        })
        .collect();
    let chain = json!({
        "type": "chain/req", "id": "c1", "entry_node": "n0", "streaming": true, "nodes": nodes,
    });
    h.send(&chain.to_string()).await;
    let mut seqs = Vec::new();
    let resp = loop {
        let msg = h.recv().await;
        match msg["type"].as_str() {
            Some("chain/event") => seqs.push(msg["seq"].as_u64().unwrap()),
            Some("chain/resp") => break msg,
            other => panic!("unexpected {other:?}: {msg}"),
        }
    };
    assert_eq!(resp["success"], true, "{resp}");
    assert_every_event(&seqs, 2 * NODES);
    assert_eq!(resp["outputs"]["n999"], json!({"text": "t999"}));
    h.send(r#"{"type":"ping","id":"p1"}"#).await;
    assert_eq!(h.recv().await["type"], "pong");
}
