//! Trace context across hops, over the real `a2e` binary and a receiver in
//! this test (the official OpenTelemetry protobuf definitions):
//!
//! - a chain whose node calls a tool of a mounted MCP server (another `a2e`,
//!   `serve --mcp-stdio`, exporting to the same receiver) is one trace: the
//!   server's `tools/call` span hangs under the calling node's span, through
//!   `_meta.traceparent`; an `http_request` node sends its span's
//!   `traceparent` to an HTTP server of this test;
//! - a `traceparent` HTTP header on `POST /send` (A2E over HTTP) and on a
//!   Streamable HTTP `tools/call` (`serve --mcp-http`) parents the request;
//! - the gauges: sessions open, runs in flight, MCP servers up, memory size.

use crate::otlp_support;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use conformance::child::HostProcess;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use otlp_support::{attr, hex, named, receiver, wait_for};
use serde_json::{Value, json};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";
const WAIT: Duration = Duration::from_secs(30);

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{PARENT_ID}-01")
}

/// The headers of each request an HTTP server of the test received.
type Seen = Arc<Mutex<Vec<BTreeMap<String, String>>>>;

/// An HTTP server on a free loopback port that records the headers of every
/// request, on `runtime`.
fn header_recorder(runtime: &tokio::runtime::Runtime) -> (String, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap| {
        let record = record.clone();
        async move {
            let map = headers
                .iter()
                .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                .collect();
            record.lock().unwrap().push(map);
            "hooked"
        }
    });
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

#[test]
fn a_chain_through_a_mounted_mcp_server_and_http_request_is_one_trace() {
    let (endpoint, got, runtime) = receiver();
    let (hook, hooked) = header_recorder(&runtime);
    let inner_root = tempfile::tempdir().unwrap();
    std::fs::write(inner_root.path().join("inner.txt"), "from the inner host\n").unwrap();
    let root = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_a2e");
    // The mounted server: another host, its spans to the same receiver,
    // exported at once.
    let config = format!(
        "[http]\nallow_hosts = [\"127.0.0.1\"]\n\n\
         [[mcp.servers]]\nname = \"inner\"\ncommand = {bin:?}\n\
         args = [\"serve\", \"--mcp-stdio\", \"--root\", {:?}]\n\
         env = {{ OTEL_SERVICE_NAME = \"a2e-inner\", OTEL_BSP_SCHEDULE_DELAY = \"20\" }}\n",
        inner_root.path().display().to_string()
    );
    std::fs::write(root.path().join("a2e.toml"), config).unwrap();
    let mut cmd = Command::new(bin);
    cmd.args(["serve", "--stdio", "--root"])
        .arg(root.path())
        .arg("--config")
        .arg(root.path().join("a2e.toml"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "a2e-outer");
    let mut host = HostProcess::spawn(cmd).unwrap();
    host.send(br#"{"type":"handshake/req","id":"hs","agent_id":"hops"}"#)
        .unwrap();
    assert_eq!(host.answer("hs", WAIT, |_| {}).unwrap().0["ok"], true);

    let chain = json!({
        "type": "chain/req", "id": "c1", "chain_id": "hops", "streaming": false,
        "traceparent": traceparent(),
        "entry_node": "inner",
        "nodes": [
            {"node_id": "inner", "kind": "tool", "name": "inner.read_file",
             "input": {"path": "inner.txt"}, "next_node": "hook"},
            {"node_id": "hook", "kind": "tool", "name": "http_request",
             "input": {"url": format!("{hook}/hook")}}
        ]
    });
    host.send(chain.to_string().as_bytes()).unwrap();
    let resp = host.answer("c1", WAIT, |_| {}).unwrap().0;
    assert_eq!(resp["success"], true, "{resp}");
    // The mounted server exports while it runs (it goes when the host does).
    let served = wait_for(&got, WAIT, |r| {
        !named(&r.spans, "tools/call read_file").is_empty()
            && !named(&r.spans, "execute_tool read_file").is_empty()
    });
    host.close_stdin();
    assert!(
        host.wait_exit(WAIT).is_some(),
        "the host exits when stdin closes"
    );
    let arrived = wait_for(&got, WAIT, |r| {
        !named(&r.spans, "execute_tool http_request").is_empty()
    });
    let got = got.lock().unwrap();
    let names: Vec<&str> = got.spans.iter().map(|s| s.name.as_str()).collect();
    assert!(served && arrived, "spans: {names:?}");
    let one = |name: &str| {
        let found = named(&got.spans, name);
        assert_eq!(found.len(), 1, "{name} in {names:?}");
        found[0]
    };
    let outer_node = one("execute_tool inner.read_file");
    let served = one("tools/call read_file");
    let inner_tool = one("execute_tool read_file");
    let hook_node = one("execute_tool http_request");
    for span in [outer_node, served, inner_tool, hook_node] {
        assert_eq!(hex(&span.trace_id), TRACE_ID, "{}", span.name);
    }
    // The mounted server's request span hangs under the node that called it.
    assert_eq!(served.parent_span_id, outer_node.span_id);
    assert_eq!(served.kind, SpanKind::Server as i32);
    assert_eq!(
        attr(&served.attributes, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(inner_tool.parent_span_id, served.span_id);
    // The HTTP server got the http_request node's context.
    let hooked = hooked.lock().unwrap();
    assert_eq!(hooked.len(), 1);
    assert_eq!(
        hooked[0].get("traceparent").map(String::as_str),
        Some(format!("00-{TRACE_ID}-{}-01", hex(&hook_node.span_id)).as_str())
    );
    // The outer host's metrics went out with the gauges.
    for name in [
        "a2e.sessions.open",
        "a2e.runs.in_flight",
        "a2e.mcp.server.up",
    ] {
        assert!(
            got.metric_names.iter().any(|n| n == name),
            "{name} in {:?}",
            got.metric_names
        );
    }
}

fn free_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

/// `a2e serve FLAG ADDR` in `root`, spans to `endpoint`, exported at once.
fn serve(flag: &str, addr: &str, root: &std::path::Path, endpoint: &str) -> HostProcess {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", flag, addr, "--root"])
        .arg(root)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "20")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "100");
    HostProcess::spawn(cmd).unwrap()
}

/// Waits for the listener at `base` to answer.
async fn until_up(client: &reqwest::Client, url: &str) {
    let deadline = Instant::now() + WAIT;
    while client.get(url).send().await.is_err() {
        assert!(Instant::now() < deadline, "{url} did not come up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The first JSON-RPC message of a Streamable HTTP answer (one JSON body or
/// Server-Sent Events).
async fn rpc_answer(response: reqwest::Response) -> Value {
    let text = response.text().await.unwrap();
    let body = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| d.starts_with('{'))
        .unwrap_or(&text)
        .trim()
        .to_owned();
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn traceparent_headers_parent_a2e_http_and_mcp_http_requests() {
    let (endpoint, got, _runtime) = receiver();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("hello.txt"), "hello\n").unwrap();
    let (a2e_addr, mcp_addr) = (free_addr(), free_addr());
    let mut a2e_host = serve("--http", &a2e_addr, root.path(), &endpoint);
    let mut mcp_host = serve("--mcp-http", &mcp_addr, root.path(), &endpoint);
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    client_runtime.block_on(async {
        let client = a2e_http::ClientOptions::default().build().unwrap();

        // A2E over HTTP: the header stands for the envelope's field.
        let base = format!("http://{a2e_addr}");
        until_up(&client, &format!("{base}/metrics")).await;
        let session = client.post(format!("{base}/session")).send().await.unwrap();
        let session_id = session.headers()["x-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let mut events = client
            .get(format!("{base}/stream"))
            .header("x-session-id", &session_id)
            .send()
            .await
            .unwrap();
        tokio::spawn(async move { while let Ok(Some(_)) = events.chunk().await {} });
        let send = |body: Value, parent: Option<String>| {
            let mut request = client
                .post(format!("{base}/send"))
                .header("x-session-id", &session_id)
                .header("content-type", "application/json")
                .body(body.to_string());
            if let Some(parent) = parent {
                request = request.header("traceparent", parent);
            }
            request.send()
        };
        send(
            json!({"type": "handshake/req", "id": "hs", "agent_id": "h"}),
            None,
        )
        .await
        .unwrap();
        send(
            json!({"type": "tool/call/req", "id": "r1", "tool_name": "read_file",
                "arguments": {"path": "hello.txt"}}),
            Some(traceparent()),
        )
        .await
        .unwrap();

        // MCP over Streamable HTTP: initialize, then a call with the header
        // and no `_meta`.
        let url = format!("http://{mcp_addr}/mcp");
        until_up(&client, &url).await;
        let post = |body: Value, session: Option<&str>, parent: Option<String>| {
            let mut request = client
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(body.to_string());
            if let Some(session) = session {
                request = request.header("mcp-session-id", session);
            }
            if let Some(parent) = parent {
                request = request.header("traceparent", parent);
            }
            request.send()
        };
        let init = post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "hops-test", "version": "1"}}}),
            None,
            None,
        )
        .await
        .unwrap();
        let mcp_session = init
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let init = rpc_answer(init).await;
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        post(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            mcp_session.as_deref(),
            None,
        )
        .await
        .unwrap();
        let called = post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "read_file", "arguments": {"path": "hello.txt"}}}),
            mcp_session.as_deref(),
            Some(traceparent()),
        )
        .await
        .unwrap();
        let called = rpc_answer(called).await;
        assert!(called["result"].is_object(), "{called}");
        assert_ne!(called["result"]["isError"], true, "{called}");
    });

    let arrived = wait_for(&got, WAIT, |r| {
        !named(&r.spans, "tool/call/req").is_empty()
            && !named(&r.spans, "tools/call read_file").is_empty()
    });
    let got_now = got.lock().unwrap();
    let names: Vec<&str> = got_now.spans.iter().map(|s| s.name.as_str()).collect();
    assert!(arrived, "spans: {names:?}");
    for name in ["tool/call/req", "tools/call read_file"] {
        let span = named(&got_now.spans, name)[0];
        assert_eq!(hex(&span.trace_id), TRACE_ID, "{name}");
        assert_eq!(hex(&span.parent_span_id), PARENT_ID, "{name}");
    }
    drop(got_now);
    a2e_host.close_stdin();
    mcp_host.close_stdin();
}
