//! `http_request` against a small HTTP server on 127.0.0.1.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_host::builtins;
use a2e_host::plugin::{CallContext, ToolOutput, ToolPlugin};
use a2e_host::{HostConfig, HostError, HostResult};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    head: String,
    body: String,
}

struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    _task: tokio::task::JoinHandle<()>,
}

fn reply(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

async fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.first() == Some(&0x16) {
            // A TLS ClientHello: answer in plain text, which the client must reject.
            return Some(Seen {
                method: "TLS".into(),
                path: String::new(),
                head: String::new(),
                body: String::new(),
            });
        }
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let mut first = head.lines().next()?.split(' ');
    Some(Seen {
        method: first.next()?.to_owned(),
        path: first.next()?.to_owned(),
        body: String::from_utf8_lossy(&buf[head_end..]).into_owned(),
        head,
    })
}

async fn serve_one(mut stream: TcpStream, seen: Arc<Mutex<Vec<Seen>>>, port: u16) {
    let Some(req) = read_request(&mut stream).await else {
        return;
    };
    seen.lock().unwrap().push(req.clone());
    let response = match req.path.as_str() {
        "/hello" => reply(
            "200 OK",
            &[("X-Test", "yes"), ("Content-Type", "text/plain")],
            b"hello world",
        ),
        "/echo" => reply(
            "201 Created",
            &[],
            format!("{} {}", req.method, req.body).as_bytes(),
        ),
        "/big" => reply("200 OK", &[], &[b'x'; 10_000]),
        "/binary" => reply("200 OK", &[], &[0xff, 0xfe, 0x00]),
        "/redirect-local" => reply("302 Found", &[("Location", "/hello")], b""),
        "/redirect-absolute" => {
            let to = format!("http://127.0.0.1:{port}/echo");
            reply("307 Temporary Redirect", &[("Location", &to)], b"")
        }
        "/redirect-see-other" => reply("303 See Other", &[("Location", "/echo")], b""),
        "/redirect-away" => reply(
            "302 Found",
            &[("Location", "http://not-allowed.invalid/x")],
            b"",
        ),
        "/loop" => reply("302 Found", &[("Location", "/loop")], b""),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            reply("200 OK", &[], b"late")
        }
        _ => reply("404 Not Found", &[], b"no"),
    };
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}

async fn server() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    let task = tokio::spawn(async move {
        // Bounded: a test makes a handful of requests.
        for _ in 0..50 {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(serve_one(stream, log.clone(), port));
        }
    });
    Server {
        port,
        seen,
        _task: task,
    }
}

fn config(root: &Path, allow: &[&str]) -> HostConfig {
    let mut c = HostConfig {
        root: root.to_path_buf(),
        ..HostConfig::default()
    };
    c.http.allow_hosts = allow.iter().map(|s| (*s).to_owned()).collect();
    c
}

async fn request(config: HostConfig, args: Value) -> HostResult<ToolOutput> {
    let tools = builtins::tools(Arc::new(config));
    let Value::Object(args) = args else {
        panic!("not an object")
    };
    tools
        .call("http_request", args, CallContext::detached())
        .await
}

#[tokio::test]
async fn get_returns_status_headers_and_body() {
    let dir = tempfile::tempdir().unwrap();
    let s = server().await;
    let out = request(
        config(dir.path(), &["127.0.0.1"]),
        json!({"url": format!("http://127.0.0.1:{}/hello", s.port)}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["status"], 200);
    assert_eq!(out.data["body"], "hello world");
    assert_eq!(out.data["encoding"], "utf-8");
    assert_eq!(out.data["headers"]["x-test"], "yes");
    assert_eq!(out.data["redirects"], 0);
    assert!(!out.truncated);
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen[0].method, "GET");
    assert!(
        seen[0]
            .head
            .to_lowercase()
            .contains(&format!("host: 127.0.0.1:{}", s.port))
    );
}

#[tokio::test]
async fn post_sends_body_and_headers() {
    let dir = tempfile::tempdir().unwrap();
    let s = server().await;
    let out = request(
        config(dir.path(), &["127.0.0.1"]),
        json!({
            "url": format!("http://127.0.0.1:{}/echo", s.port),
            "method": "POST",
            "headers": {"X-Custom": "abc", "Content-Type": "text/plain"},
            "body": "payload",
        }),
    )
    .await
    .unwrap();
    assert_eq!(out.data["status"], 201);
    assert_eq!(out.data["body"], "POST payload");
    let seen = s.seen.lock().unwrap();
    assert!(
        seen[0].head.to_lowercase().contains("x-custom: abc"),
        "{}",
        seen[0].head
    );
    assert_eq!(seen[0].body, "payload");
}

#[tokio::test]
async fn hosts_outside_the_allow_list_are_denied() {
    let dir = tempfile::tempdir().unwrap();
    let s = server().await;
    let url = format!("http://127.0.0.1:{}/hello", s.port);
    for allow in [&[][..], &["localhost"][..], &["127.0.0.1:1"][..]] {
        let err = request(config(dir.path(), allow), json!({"url": url}))
            .await
            .unwrap_err();
        match err {
            HostError::Denied(m) => assert!(m.contains("127.0.0.1"), "{m}"),
            other => panic!("{allow:?}: {other:?}"),
        }
    }
    assert!(s.seen.lock().unwrap().is_empty(), "nothing was sent");
    let port_entry = format!("127.0.0.1:{}", s.port);
    let out = request(config(dir.path(), &[&port_entry]), json!({"url": url}))
        .await
        .unwrap();
    assert_eq!(out.data["status"], 200);
}

#[tokio::test]
async fn redirects_are_followed_within_the_allow_list_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = server().await;
    let cfg = config(dir.path(), &["127.0.0.1"]);
    let base = format!("http://127.0.0.1:{}", s.port);

    let out = request(
        cfg.clone(),
        json!({"url": format!("{base}/redirect-local")}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["status"], 200);
    assert_eq!(out.data["body"], "hello world");
    assert_eq!(out.data["redirects"], 1);
    assert_eq!(out.data["url"], format!("{base}/hello"));

    let out = request(
        cfg.clone(),
        json!({"url": format!("{base}/redirect-absolute"), "method": "PUT", "body": "kept"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["body"], "PUT kept", "307 keeps method and body");

    let out = request(
        cfg.clone(),
        json!({"url": format!("{base}/redirect-see-other"), "method": "POST", "body": "dropped"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.data["body"], "GET ",
        "303 continues as GET without a body"
    );

    let out = request(cfg.clone(), json!({"url": format!("{base}/redirect-away")}))
        .await
        .unwrap();
    assert_eq!(out.data["status"], 302, "not followed off the allow-list");
    assert_eq!(
        out.data["headers"]["location"],
        "http://not-allowed.invalid/x"
    );

    let out = request(cfg, json!({"url": format!("{base}/loop")}))
        .await
        .unwrap();
    assert_eq!(out.data["status"], 302);
    assert_eq!(out.data["redirects"], a2e_host::builtins::MAX_REDIRECTS);
}

#[tokio::test]
async fn body_is_capped_and_binary_can_be_base64() {
    let dir = tempfile::tempdir().unwrap();
    let s = server().await;
    let mut cfg = config(dir.path(), &["127.0.0.1"]);
    cfg.http.body_max_bytes = 100;
    let base = format!("http://127.0.0.1:{}", s.port);
    let out = request(cfg.clone(), json!({"url": format!("{base}/big")}))
        .await
        .unwrap();
    assert_eq!(out.data["body"].as_str().unwrap().len(), 100);
    assert!(out.truncated);

    let out = request(
        cfg.clone(),
        json!({"url": format!("{base}/binary"), "encoding": "base64"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["body"], "//4A");
    assert_eq!(out.data["encoding"], "base64");
    let out = request(cfg, json!({"url": format!("{base}/binary")}))
        .await
        .unwrap();
    assert_eq!(out.data["encoding"], "utf-8-lossy");
}

#[tokio::test]
async fn head_has_no_body() {
    let dir = tempfile::tempdir().unwrap();
    let s = server().await;
    let out = request(
        config(dir.path(), &["127.0.0.1"]),
        json!({"url": format!("http://127.0.0.1:{}/hello", s.port), "method": "HEAD"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["status"], 200);
    assert_eq!(out.data["body"], "");
    assert_eq!(s.seen.lock().unwrap()[0].method, "HEAD");
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let s = server().await;
    let started = std::time::Instant::now();
    let err = request(
        config(dir.path(), &["127.0.0.1"]),
        json!({"url": format!("http://127.0.0.1:{}/slow", s.port), "timeout": 1}),
    )
    .await
    .unwrap_err();
    assert_eq!(err, HostError::Timeout(1));
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn cancellation_stops_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let s = server().await;
    let tools = builtins::tools(Arc::new(config(dir.path(), &["127.0.0.1"])));
    let cancel = CancellationToken::new();
    let ctx = CallContext::new("s", "r", cancel.clone(), None, Default::default());
    let mut args = Map::new();
    args.insert(
        "url".into(),
        json!(format!("http://127.0.0.1:{}/slow", s.port)),
    );
    let call = tools.call("http_request", args, ctx);
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(call, canceller)
    })
    .await
    .expect("cancellation did not stop the request");
    assert_eq!(result.unwrap_err(), HostError::Cancelled);
}

#[tokio::test]
async fn failures_and_bad_urls() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &["127.0.0.1"]);
    // A port nobody listens on: bind, read the port, close.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let err = request(
        cfg.clone(),
        json!({"url": format!("http://127.0.0.1:{port}/")}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, HostError::Tool(m) if m.contains("connect")),
        "{err:?}"
    );

    for url in ["ftp://127.0.0.1/x", "not a url", "/relative"] {
        let err = request(cfg.clone(), json!({"url": url})).await.unwrap_err();
        assert!(matches!(err, HostError::Schema { .. }), "{url}: {err:?}");
    }
    let err = request(
        cfg,
        json!({"url": "http://127.0.0.1/", "headers": {"bad header": "x"}}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, HostError::Schema { .. }), "{err:?}");
}

#[tokio::test]
async fn https_to_a_plain_server_fails_in_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let s = server().await;
    let err = request(
        config(dir.path(), &["127.0.0.1"]),
        json!({"url": format!("https://127.0.0.1:{}/hello", s.port), "timeout": 10}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, HostError::Tool(m) if m.contains("TLS")),
        "{err:?}"
    );
}
