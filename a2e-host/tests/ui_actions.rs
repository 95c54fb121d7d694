//! The live view's actions over plain HTTP: a call that an `[[approvals]]`
//! rule holds back is listed at `/ui/api/waiting`, and approved or denied by
//! a `POST` that carries the token, comes from the listener's own origin and
//! carries the CSRF token of the page's session; every other `POST` is
//! refused and decides nothing.

#![cfg(feature = "ui")]

use crate::net_support;

use std::sync::Arc;
use std::time::Duration;

use a2e_client::Client;
use a2e_host::approvals::ApprovalLayer;
use a2e_host::transport::net::NetOptions;
use a2e_host::{Host, HostConfig};
use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use net_support::*;
use serde_json::{Value, json};

const TOKEN: &str = "s3cret";
const BEARER: &str = "Bearer s3cret";

/// One request on a fresh connection: its status, headers and body.
async fn send(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (StatusCode, hyper::HeaderMap, String) {
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
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    if !bytes.is_empty() {
        builder = builder.header("content-type", "application/json");
    }
    let resp = sender
        .send_request(builder.body(Full::new(Bytes::from(bytes))).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

/// The test host of the network tests, `echo` held back for approval.
async fn served() -> (tempfile::TempDir, Server, Arc<Host>, Arc<Counters>) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = HostConfig {
        root: dir.path().to_owned(),
        auth_token: TOKEN.to_owned(),
        ..HostConfig::default()
    };
    config.approvals = HostConfig::from_toml("[[approvals]]\ntool = \"echo\"\n")
        .unwrap()
        .approvals;
    let layer = ApprovalLayer::from_config(&config).unwrap();
    let counters = Arc::new(Counters::default());
    let host: Arc<Host> = Host::builder(config)
        .with_builtins()
        .with_tool_plugin(TestTools(counters.clone()))
        .with_layer(layer)
        .build()
        .unwrap();
    a2e_host::runs::enable(&host).await.unwrap();
    let server = Server::start(host.clone(), NetOptions::default()).await;
    (dir, server, host, counters)
}

/// Polls the waiting list until a call waits; the first one.
async fn first_waiting(addr: std::net::SocketAddr) -> Value {
    for _ in 0..400 {
        let (status, _, body) = send(
            addr,
            "GET",
            "/ui/api/waiting",
            &[("authorization", BEARER)],
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let list: Value = serde_json::from_str(&body).unwrap();
        if let Some(first) = list["waiting"].get(0) {
            return first.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no call waited");
}

#[tokio::test]
async fn the_view_approves_and_denies_only_with_token_origin_and_csrf() {
    let (_dir, server, _host, _) = served().await;
    let addr = server.addr;
    let client = Client::builder()
        .agent_id("view-agent")
        .auth_token(TOKEN)
        .connect_ws(&server.ws_url())
        .await
        .unwrap();
    let client = Arc::new(client);
    let caller = client.clone();
    let approved = tokio::spawn(async move { caller.tools().call("echo", json!({"x": 1})).await });

    // The page sets its session cookie; the session's CSRF token.
    let (status, headers, _) = send(addr, "GET", "/ui", &[("authorization", BEARER)], None).await;
    assert_eq!(status, StatusCode::OK);
    let session = headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| {
            c.split(';')
                .next()
                .filter(|kv| kv.starts_with("a2e_ui_session="))
        })
        .expect("the page sets a session cookie")
        .to_owned();
    let (status, _, body) = send(
        addr,
        "GET",
        "/ui/api/csrf",
        &[("authorization", BEARER), ("cookie", &session)],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let csrf = serde_json::from_str::<Value>(&body).unwrap()["csrf"]
        .as_str()
        .unwrap()
        .to_owned();

    let held = first_waiting(addr).await;
    assert_eq!(held["waiting"]["name"], "echo", "{held}");
    assert_eq!(held["waiting"]["args"]["x"], 1);
    let run = held["run_id"].as_str().unwrap().to_owned();
    let path = format!("/ui/api/runs/{run}/approve");
    let origin = format!("http://{addr}");

    // Refused: no token; another origin; no Origin; no CSRF token; the
    // token of another page session.
    let refusals: [(&[(&str, &str)], StatusCode); 5] = [
        (
            &[
                ("origin", &origin),
                ("cookie", &session),
                ("x-csrf-token", &csrf),
            ],
            StatusCode::UNAUTHORIZED,
        ),
        (
            &[
                ("authorization", BEARER),
                ("origin", "http://evil.example"),
                ("cookie", &session),
                ("x-csrf-token", &csrf),
            ],
            StatusCode::FORBIDDEN,
        ),
        (
            &[
                ("authorization", BEARER),
                ("cookie", &session),
                ("x-csrf-token", &csrf),
            ],
            StatusCode::FORBIDDEN,
        ),
        (
            &[
                ("authorization", BEARER),
                ("origin", &origin),
                ("cookie", &session),
            ],
            StatusCode::FORBIDDEN,
        ),
        (
            &[
                ("authorization", BEARER),
                ("origin", &origin),
                ("cookie", "a2e_ui_session=another"),
                ("x-csrf-token", &csrf),
            ],
            StatusCode::FORBIDDEN,
        ),
    ];
    for (headers, expected) in refusals {
        let (status, _, body) = send(addr, "POST", &path, headers, Some(json!({}))).await;
        assert_eq!(status, expected, "{headers:?}: {body}");
    }
    assert!(!approved.is_finished(), "a refused POST decides nothing");

    let allowed: [(&str, &str); 4] = [
        ("authorization", BEARER),
        ("origin", &origin),
        ("cookie", &session),
        ("x-csrf-token", &csrf),
    ];
    let (status, _, body) = send(addr, "POST", &path, &allowed, Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let done = tokio::time::timeout(Duration::from_secs(30), approved)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(done.success, "{done:?}");
    assert_eq!(done.data, json!({"x": 1}));

    // A denial with its reason; a second decision is a conflict.
    let caller = client.clone();
    let denied = tokio::spawn(async move { caller.tools().call("echo", json!({"x": 2})).await });
    let held = first_waiting(addr).await;
    let deny = format!("/ui/api/runs/{}/deny", held["run_id"].as_str().unwrap());
    let (status, _, body) = send(addr, "POST", &deny, &allowed, Some(json!({"reason": " "}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let reason = json!({"reason": "not from the view"});
    let (status, _, body) = send(addr, "POST", &deny, &allowed, Some(reason.clone())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _, body) = send(addr, "POST", &deny, &allowed, Some(reason)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let done = tokio::time::timeout(Duration::from_secs(30), denied)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(!done.success);
    assert_eq!(done.error_code.as_ref().map(|c| c.as_str()), Some("denied"));
    assert!(
        done.error
            .as_deref()
            .unwrap_or_default()
            .contains("not from the view"),
        "{done:?}"
    );

    // Cancelling a run that has finished is a conflict.
    let cancel = format!("/ui/api/runs/{run}/cancel");
    let (status, _, body) = send(addr, "POST", &cancel, &allowed, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    drop(client);
    server.shutdown().await;
}

/// A chain of two nodes no rule holds back: `one` (the test tools' `slow`)
/// and `two`, which counts words.
fn counted() -> a2e_proto::ChainRequest {
    serde_json::from_value(json!({
        "type": "chain/req", "id": "c", "chain_id": "counted", "entry_node": "one",
        "nodes": [
            {"node_id": "one", "kind": "tool", "name": "slow", "input": {"ms": 1}, "next_node": "two"},
            {"node_id": "two", "kind": "tool", "name": "text_stats", "input": {"text": "a b c"}}
        ]
    }))
    .unwrap()
}

#[tokio::test]
async fn a_run_is_forked_over_the_wire_and_from_the_view() {
    let (_dir, server, host, counters) = served().await;
    let addr = server.addr;
    let client = Client::builder()
        .agent_id("fork-agent")
        .auth_token(TOKEN)
        .connect_ws(&server.ws_url())
        .await
        .unwrap();
    let first = client.chains().run_to_end(counted()).await.unwrap();
    assert!(first.success, "{first:?}");
    let parent = first.run_id.clone();

    // Over the wire: `two` runs again, `one` keeps its result.
    let fork = a2e_proto::ChainFork {
        run_id: parent.clone(),
        from_node: "two".into(),
        input: json!({"text": "a b c d"}).as_object().unwrap().clone(),
        streaming: true,
        ..a2e_proto::ChainFork::default()
    };
    let call = client
        .chains()
        .fork(fork, Duration::from_secs(30))
        .await
        .unwrap();
    let mut events = Vec::new();
    let forked = call.finish_with(|e| events.push(e)).await.unwrap();
    assert!(forked.success, "{forked:?}");
    assert_ne!(forked.run_id, parent);
    assert_eq!(forked.outputs["one"], first.outputs["one"]);
    assert_eq!(forked.outputs["two"]["words"], 4, "{forked:?}");
    assert!(!events.is_empty());
    let journal = host.journal().unwrap().clone();
    let child = journal
        .show_run(&a2e_journal::RunId::parse(&forked.run_id).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(child.request["forked_from"]["run_id"], parent.as_str());
    let one = child.nodes.iter().find(|n| n.node_id == "one").unwrap();
    assert!(one.outcome.is_some(), "{one:?}");
    assert_eq!(
        counters.calls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "`one` ran once: copied into the fork, not called again"
    );

    // Another agent may not fork it; an unknown node is named.
    let other = Client::builder()
        .agent_id("someone-else")
        .auth_token(TOKEN)
        .connect_ws(&server.ws_url())
        .await
        .unwrap();
    let stolen = a2e_proto::ChainFork {
        run_id: parent.clone(),
        from_node: "two".into(),
        ..a2e_proto::ChainFork::default()
    };
    let refused = match other.chains().fork(stolen, Duration::from_secs(30)).await {
        Ok(call) => call.finish().await.err(),
        Err(e) => Some(e),
    };
    assert!(refused.unwrap().to_string().contains("another agent"));

    // From the view: a POST with the page's CSRF token starts the fork.
    let (_, headers, _) = send(addr, "GET", "/ui", &[("authorization", BEARER)], None).await;
    let session = headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| {
            c.split(';')
                .next()
                .filter(|kv| kv.starts_with("a2e_ui_session="))
        })
        .unwrap()
        .to_owned();
    let (_, _, body) = send(
        addr,
        "GET",
        "/ui/api/csrf",
        &[("authorization", BEARER), ("cookie", &session)],
        None,
    )
    .await;
    let csrf = serde_json::from_str::<Value>(&body).unwrap()["csrf"]
        .as_str()
        .unwrap()
        .to_owned();
    let origin = format!("http://{addr}");
    let allowed: [(&str, &str); 4] = [
        ("authorization", BEARER),
        ("origin", &origin),
        ("cookie", &session),
        ("x-csrf-token", &csrf),
    ];
    let path = format!("/ui/api/runs/{parent}/fork");
    let (status, _, body) =
        send(addr, "POST", &path, &allowed, Some(json!({"from": "nope"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _, body) = send(addr, "POST", &path, &allowed, Some(json!({"from": "two"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let made: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(made["copied"], 1, "{made}");
    let run = a2e_journal::RunId::parse(made["run_id"].as_str().unwrap()).unwrap();
    eventually(Duration::from_secs(20), || {
        futures::executor::block_on(journal.show_run(&run))
            .ok()
            .flatten()
            .is_some_and(|s| s.summary.status == a2e_journal::RunStatus::Succeeded)
    })
    .await;
    client.close().await;
    other.close().await;
    server.shutdown().await;
}
