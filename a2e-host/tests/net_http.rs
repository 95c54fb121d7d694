//! The client against the host over HTTP+SSE, and the protocol itself:
//! `POST /session`, `POST /send` (one message or NDJSON), `GET /stream`
//! (header or `?session=`), `DELETE /session`; the bearer token; a stream
//! dropped and not resumed; a stream resumed in time; body size and rate limits;
//! graceful shutdown.

use crate::net_support;

use std::time::Duration;

use a2e_client::{Client, ClientError, ToolCall};
use a2e_host::transport::net::NetOptions;
use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use net_support::*;
use serde_json::{Value, json};

/// One HTTP request on a fresh connection.
async fn request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response<Incoming> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let req = builder
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    sender.send_request(req).await.unwrap()
}

async fn open_session(addr: std::net::SocketAddr) -> String {
    let resp = request(addr, "POST", "/session", &[], "").await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let id = resp.headers()["x-session-id"].to_str().unwrap().to_owned();
    let body: Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["session_id"], id.as_str());
    id
}

async fn post(addr: std::net::SocketAddr, session: &str, body: &str) -> StatusCode {
    request(addr, "POST", "/send", &[("x-session-id", session)], body)
        .await
        .status()
}

/// Reads SSE `data:` messages off a stream body.
struct Events {
    body: Incoming,
    buf: String,
}

impl Events {
    fn new(resp: Response<Incoming>) -> Self {
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        Self {
            body: resp.into_body(),
            buf: String::new(),
        }
    }

    /// The next message, or `None` when the stream ends.
    async fn next(&mut self) -> Option<Value> {
        self.next_with_id().await.map(|(_, msg)| msg)
    }

    /// The next message and its SSE `id:`, or `None` when the stream ends.
    async fn next_with_id(&mut self) -> Option<(Option<u64>, Value)> {
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let event: String = self.buf.drain(..end + 2).collect();
                let field = |name: &str| -> Vec<String> {
                    event
                        .lines()
                        .filter_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim_start().to_owned())
                        .collect()
                };
                let data = field("data:");
                let id = field("id:").first().and_then(|v| v.parse().ok());
                if !data.is_empty() {
                    return Some((id, serde_json::from_str(&data.join("\n")).unwrap()));
                }
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("an event within 10 s");
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.push_str(&String::from_utf8_lossy(&data));
                    }
                }
                _ => return None,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_api_over_http_and_sse() {
    let (_dir, counters, host) = setup("");
    let server = Server::start(host, NetOptions::default()).await;
    let client = Client::builder()
        .agent_id("http-agent")
        .connect_http(&server.http_url())
        .await
        .unwrap();
    api_suite(&client, &counters).await;
    client.close().await;
    server.wait_no_sessions().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocol_on_the_wire() {
    let (_dir, _counters, host) = setup("");
    let server = Server::start(host, NetOptions::default()).await;
    let addr = server.addr;
    let id = open_session(addr).await;
    let mut events =
        Events::new(request(addr, "GET", &format!("/stream?session={id}"), &[], "").await);

    // NDJSON: two messages in one body.
    let body = "{\"type\":\"handshake/req\",\"id\":\"h1\",\"agent_id\":\"raw\"}\n{\"type\":\"ping\",\"id\":\"p1\"}\n";
    assert_eq!(post(addr, &id, body).await, StatusCode::ACCEPTED);
    let hello = events.next().await.unwrap();
    assert_eq!(hello["type"], "handshake/resp");
    assert_eq!(hello["req_id"], "h1");
    assert_eq!(hello["session_id"], id.as_str());
    let pong = events.next().await.unwrap();
    assert_eq!(
        (pong["type"].as_str(), pong["req_id"].as_str()),
        (Some("pong"), Some("p1"))
    );

    // One message spread over lines.
    let pretty = serde_json::to_string_pretty(&json!({"type": "ping", "id": "p2"})).unwrap();
    assert!(pretty.contains('\n'));
    assert_eq!(post(addr, &id, &pretty).await, StatusCode::ACCEPTED);
    assert_eq!(events.next().await.unwrap()["req_id"], "p2");

    // A bad line is answered in-band; the session goes on.
    assert_eq!(post(addr, &id, "{not json}").await, StatusCode::ACCEPTED);
    assert_eq!(events.next().await.unwrap()["code"], "parse_error");

    // Unknown sessions and missing headers.
    assert_eq!(
        post(addr, "no-such-session", "{\"type\":\"ping\"}").await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        request(addr, "POST", "/send", &[], "{}").await.status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        request(addr, "GET", "/stream", &[], "").await.status(),
        StatusCode::BAD_REQUEST
    );

    // DELETE ends the session and its stream.
    let resp = request(addr, "DELETE", "/session", &[("x-session-id", &id)], "").await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    assert!(
        events.next().await.is_none(),
        "the stream ends with the session"
    );
    server.wait_no_sessions().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_needs_the_token() {
    let (_dir, _counters, host) = setup("s3cret");
    let server = Server::start(host, NetOptions::default()).await;
    let addr = server.addr;
    assert_eq!(
        request(addr, "POST", "/session", &[], "").await.status(),
        StatusCode::UNAUTHORIZED
    );
    let bearer = [("authorization", "Bearer s3cret")];
    let resp = request(addr, "POST", "/session", &bearer, "").await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let id = resp.headers()["x-session-id"].to_str().unwrap().to_owned();
    let without = request(addr, "GET", &format!("/stream?session={id}"), &[], "").await;
    assert_eq!(without.status(), StatusCode::UNAUTHORIZED);
    let wrong = request(
        addr,
        "POST",
        "/send",
        &[("x-session-id", &id), ("authorization", "Bearer nope")],
        "{}",
    )
    .await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let err = Client::connect_http(&server.http_url()).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::HandshakeRefused { reason } if reason == "auth_failed"),
        "{err}"
    );
    let client = Client::builder()
        .auth_token("s3cret")
        .connect_http(&server.http_url())
        .await
        .unwrap();
    client.ping().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_dropped_and_not_resumed_closes_the_session() {
    let (_dir, _counters, host) = setup("");
    let options = NetOptions {
        stream_grace: Duration::from_millis(300),
        ..NetOptions::default()
    };
    let server = Server::start(host, options).await;
    let addr = server.addr;
    let id = open_session(addr).await;
    let mut events =
        Events::new(request(addr, "GET", "/stream", &[("x-session-id", &id)], "").await);
    let body = "{\"type\":\"handshake/req\",\"id\":\"h\"}\n{\"type\":\"proc/spawn/req\",\"id\":\"s\",\"cmd\":[\"sleep\",\"32.718\"]}";
    assert_eq!(post(addr, &id, body).await, StatusCode::ACCEPTED);
    assert_eq!(events.next().await.unwrap()["type"], "handshake/resp");
    let spawned = loop {
        let msg = events.next().await.unwrap();
        if msg["type"] == "proc/spawn/resp" {
            break msg;
        }
    };
    let pid = spawned["pid"].as_u64().unwrap() as u32;
    assert!(alive(pid));
    drop(events);
    eventually(Duration::from_secs(15), || !alive(pid)).await;
    server.wait_no_sessions().await;
    assert_eq!(
        post(addr, &id, "{\"type\":\"ping\"}").await,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumed_within_the_grace_keeps_the_session() {
    let (_dir, _counters, host) = setup("");
    let options = NetOptions {
        stream_grace: Duration::from_secs(5),
        // Keep-alive writes make a dead stream's end noticed soon.
        keep_alive: Duration::from_millis(100),
        ..NetOptions::default()
    };
    let server = Server::start(host, options).await;
    let addr = server.addr;
    let id = open_session(addr).await;
    let mut first =
        Events::new(request(addr, "GET", &format!("/stream?session={id}"), &[], "").await);
    assert_eq!(
        post(addr, &id, "{\"type\":\"handshake/req\",\"id\":\"h\"}").await,
        StatusCode::ACCEPTED
    );
    assert_eq!(first.next().await.unwrap()["type"], "handshake/resp");
    assert!(server.state.stream_attached(&id));
    drop(first);
    // Answers sent while no stream is attached wait for the next one. (What
    // is written to a stream before the host notices its end comes back only
    // to a stream that reconnects with `Last-Event-ID`: see the next test.)
    let gone = tokio::time::timeout(Duration::from_secs(10), async {
        while server.state.stream_attached(&id) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    assert!(
        gone.await.is_ok(),
        "the host never noticed the stream's end"
    );
    assert_eq!(
        post(addr, &id, "{\"type\":\"ping\",\"id\":\"while-away\"}").await,
        StatusCode::ACCEPTED
    );
    let mut second =
        Events::new(request(addr, "GET", &format!("/stream?session={id}"), &[], "").await);
    assert_eq!(
        post(addr, &id, "{\"type\":\"ping\",\"id\":\"back\"}").await,
        StatusCode::ACCEPTED
    );
    let mut ids = Vec::new();
    while ids.len() < 2 {
        let msg = second.next().await.unwrap();
        ids.push(msg["req_id"].as_str().unwrap().to_owned());
    }
    assert!(ids.contains(&"back".to_owned()), "{ids:?}");
    assert_eq!(server.state.active_sessions(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_reconnecting_with_last_event_id_gets_what_it_missed() {
    let (_dir, _counters, host) = setup("");
    let options = NetOptions {
        stream_grace: Duration::from_secs(5),
        keep_alive: Duration::from_millis(100),
        ..NetOptions::default()
    };
    let server = Server::start(host, options).await;
    let addr = server.addr;
    let id = open_session(addr).await;
    let mut first =
        Events::new(request(addr, "GET", &format!("/stream?session={id}"), &[], "").await);
    for line in [
        "{\"type\":\"handshake/req\",\"id\":\"h\"}",
        "{\"type\":\"ping\",\"id\":\"a\"}",
        "{\"type\":\"ping\",\"id\":\"b\"}",
    ] {
        assert_eq!(post(addr, &id, line).await, StatusCode::ACCEPTED);
    }
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (n, msg) = first.next_with_id().await.unwrap();
        seen.push((n.expect("every event has an id"), msg["req_id"].clone()));
    }
    assert_eq!(
        seen,
        vec![(0, json!("h")), (1, json!("a")), (2, json!("b"))]
    );
    // The agent saw only the handshake before its connection died.
    drop(first);
    eventually(Duration::from_secs(10), || {
        !server.state.stream_attached(&id)
    })
    .await;
    let mut second = Events::new(
        request(
            addr,
            "GET",
            &format!("/stream?session={id}"),
            &[("last-event-id", "0")],
            "",
        )
        .await,
    );
    let mut replayed = Vec::new();
    for _ in 0..2 {
        let (n, msg) = second.next_with_id().await.unwrap();
        replayed.push((n.unwrap(), msg["req_id"].clone()));
    }
    assert_eq!(replayed, vec![(1, json!("a")), (2, json!("b"))]);
    // New events go on numbering after the replayed ones.
    assert_eq!(
        post(addr, &id, "{\"type\":\"ping\",\"id\":\"c\"}").await,
        StatusCode::ACCEPTED
    );
    let (n, msg) = second.next_with_id().await.unwrap();
    assert_eq!((n, msg["req_id"].clone()), (Some(3), json!("c")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_size_and_rate_limits() {
    let dir = tempfile::tempdir().unwrap();
    let host = a2e_host::Host::builder(a2e_host::HostConfig {
        root: dir.path().to_owned(),
        max_message_bytes: 64 * 1024,
        ..Default::default()
    })
    .build()
    .unwrap();
    let options = NetOptions {
        rate_per_sec: 1.0,
        burst: 5.0,
        ..NetOptions::default()
    };
    let server = Server::start(host, options).await;
    let addr = server.addr;
    let id = open_session(addr).await;
    let big = format!(
        "{{\"type\":\"ping\",\"id\":\"{}\"}}",
        "x".repeat(100 * 1024)
    );
    assert_eq!(post(addr, &id, &big).await, StatusCode::PAYLOAD_TOO_LARGE);
    let flood = "{\"type\":\"ping\"}\n".repeat(20);
    let resp = request(addr, "POST", "/send", &[("x-session-id", &id)], &flood).await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(resp.headers().contains_key("retry-after"));
    // Within the burst is fine.
    assert_eq!(
        post(addr, &id, "{\"type\":\"ping\"}").await,
        StatusCode::ACCEPTED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_drains_and_ends_the_stream() {
    let (_dir, _counters, host) = setup("");
    let server = Server::start(host, NetOptions::default()).await;
    let client = Client::connect_http(&server.http_url()).await.unwrap();
    let call = client
        .tools()
        .start(ToolCall::new("slow", json!({"ms": 1500})))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let state = server.state.clone();
    let stopping = tokio::spawn(server.shutdown());
    let result = call.finish().await.unwrap();
    assert_eq!(result.data, json!({"slept": 1500}));
    tokio::time::timeout(Duration::from_secs(10), client.closed())
        .await
        .unwrap();
    stopping.await.unwrap();
    assert_eq!(state.active_sessions(), 0);
}
