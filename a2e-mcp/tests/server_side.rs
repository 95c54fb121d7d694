//! The server side: a backend served over stdio-like pipes and Streamable
//! HTTP, driven by rmcp's client, by this crate's own client side, and by the
//! official Python SDK.

use crate::backend;
use crate::common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use a2e_mcp::{McpCallOptions, McpError, McpServerConfig, McpToolkit, ServeError};
use backend::DemoBackend;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn rmcp_client_lists_calls_and_cancels() {
    let backend = Arc::new(DemoBackend::default());
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (server_r, server_w) = tokio::io::split(server_io);
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(a2e_mcp::serve_io(
        backend.clone(),
        "demo",
        server_r,
        server_w,
        shutdown.clone(),
    ));
    let client = ().serve(client_io).await.unwrap();
    let info = client.peer().peer_info().unwrap();
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("demo")
    );

    let tools = client.peer().list_all_tools().await.unwrap();
    let nested = tools.iter().find(|t| t.name == "nested").unwrap();
    let schema = Value::Object((*nested.input_schema).clone());
    assert_eq!(
        schema["properties"]["order"]["properties"]["address"]["required"],
        json!(["city"])
    );
    assert_eq!(schema["required"], json!(["order"]));
    let greet = tools.iter().find(|t| t.name == "greet").unwrap();
    assert_eq!(
        greet.input_schema["properties"]["style"]["enum"],
        json!(["plain", "shout"])
    );

    let r = client
        .call_tool(CallToolRequestParams::new("greet").with_arguments(args(json!({"name": "Bo"}))))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text().unwrap().text, "Hello, Bo!");
    let r = client
        .call_tool(CallToolRequestParams::new("fail"))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        r.content[0].as_text().unwrap().text,
        "tool_error: deliberate failure"
    );
    let r = client
        .call_tool(CallToolRequestParams::new("nope"))
        .await
        .unwrap();
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .text
            .starts_with("unknown_tool")
    );

    // notifications/cancelled reaches the backend's token.
    let handle = client
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
                "wait_for_cancel",
            ))),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    handle.cancel(Some("test".into())).await.unwrap();
    for _ in 0..400 {
        if backend.cancelled.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(backend.cancelled.load(Ordering::SeqCst), 1);

    client.cancel().await.unwrap();
    served.await.unwrap().unwrap();
}

async fn http_server(token: Option<&str>) -> (String, Arc<DemoBackend>, CancellationToken) {
    let backend = Arc::new(DemoBackend::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(a2e_mcp::serve_http(
        backend.clone(),
        "a2e-demo",
        listener,
        token.map(str::to_owned),
        shutdown.clone(),
    ));
    (url, backend, shutdown)
}

#[tokio::test]
async fn our_client_mounts_our_server_over_http_with_a_token() {
    let (url, backend, shutdown) = http_server(Some("s3cret")).await;

    let mut cfg = McpServerConfig::http("demo", &url);
    cfg.bearer_token = Some("s3cret".into());
    let kit = McpToolkit::new(cfg).unwrap();
    let defs = kit.definitions().await.unwrap();
    let nested = defs.iter().find(|d| d.name == "nested").unwrap();
    let order = &nested.input_parameters[0];
    assert!(order.required && order.param_type == "object");
    let address = &order.properties.as_ref().unwrap()["address"];
    assert!(address.required);
    assert!(address.properties.as_ref().unwrap()["city"].required);

    let out = kit
        .call(
            "nested",
            args(json!({"order": {"id": 3, "address": {"city": "Oslo"}}})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.data["structured"],
        json!({"received": {"order": {"id": 3, "address": {"city": "Oslo"}}}})
    );
    // Missing nested required field: caught against the full schema.
    let err = kit
        .call(
            "nested",
            args(json!({"order": {"id": 3, "address": {}}})),
            McpCallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("/order/address"), "{err}");

    let seen: Arc<Mutex<Vec<(i64, String)>>> = Arc::default();
    let sink = seen.clone();
    kit.call(
        "slow",
        args(json!({"steps": 4})),
        McpCallOptions::default().on_progress(move |p| {
            sink.lock()
                .unwrap()
                .push((p.pct(), p.message.clone().unwrap_or_default()));
            async {}
        }),
    )
    .await
    .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (25, "step 1".into()),
            (50, "step 2".into()),
            (75, "step 3".into()),
            (100, "step 4".into())
        ]
    );

    // Cancelled once the server reports it is running the call.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let err = kit
        .call(
            "wait_for_cancel",
            Map::new(),
            McpCallOptions::default()
                .cancel(cancel)
                .on_progress(move |_| {
                    trigger.cancel();
                    async {}
                }),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Cancelled { .. }), "{err}");
    for _ in 0..400 {
        if backend.cancelled.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(backend.cancelled.load(Ordering::SeqCst), 1);

    // A call that runs out of time is cancelled on the server too.
    let err = kit
        .call(
            "wait_for_cancel",
            Map::new(),
            McpCallOptions::default().timeout(std::time::Duration::from_millis(200)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Timeout { .. }), "{err}");
    for _ in 0..400 {
        if backend.cancelled.load(Ordering::SeqCst) == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(backend.cancelled.load(Ordering::SeqCst), 2);

    // Without the token: refused.
    let denied = McpToolkit::new(McpServerConfig::http("demo", &url)).unwrap();
    let err = denied.start().await.unwrap_err();
    assert!(matches!(err, McpError::Init { .. }), "{err}");
    kit.shutdown().await;
    shutdown.cancel();
}

#[tokio::test]
async fn http_refuses_a_public_address_without_a_token() {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let err = a2e_mcp::serve_http(
        Arc::new(DemoBackend::default()),
        "demo",
        listener,
        None,
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ServeError::NotLoopback(_)), "{err}");
}

/// The demo server example, built if `cargo test` did not build it (as
/// with `--test suite`).
fn demo_server_binary() -> std::path::PathBuf {
    // target/<profile>/deps/<this test> → target/<profile>/examples/mcp_demo_server,
    // or, when the build directory is apart from the target directory, the
    // workspace's target/debug/examples/mcp_demo_server.
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|p| p.parent()).unwrap();
    let bin = profile.join("examples").join("mcp_demo_server");
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/debug/examples/mcp_demo_server");
    if !bin.exists() && !workspace.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "-p", "a2e-mcp", "--example", "mcp_demo_server"])
            .status()
            .unwrap();
        assert!(status.success(), "building the demo server failed");
    }
    if bin.exists() { bin } else { workspace }
}

async fn run_python_client(python: &std::path::Path, mode_args: &[&str]) -> Value {
    let out = tokio::process::Command::new(python)
        .arg(common::test_file("py/client_check.py"))
        .args(mode_args)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "python client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn check_python_report(report: &Value) {
    assert_eq!(report["server"], "a2e-demo");
    assert_eq!(
        report["tools"],
        json!([
            "cancelled_count",
            "fail",
            "greet",
            "nested",
            "slow",
            "wait_for_cancel"
        ])
    );
    assert_eq!(
        report["nested_schema"]["properties"]["order"]["required"],
        json!(["address", "id"])
    );
    assert_eq!(report["greet"], "HELLO, ADA!");
    assert_eq!(
        report["nested"],
        json!({"received": {"order": {"id": 7, "address": {"city": "Lima", "zip": "15001"}}}})
    );
    assert_eq!(report["slow"], json!({"steps": 4}));
    assert_eq!(
        report["progress"],
        json!([
            [25.0, 100.0, "step 1"],
            [50.0, 100.0, "step 2"],
            [75.0, 100.0, "step 3"],
            [100.0, 100.0, "step 4"]
        ])
    );
    assert_eq!(
        report["fail"],
        json!({"is_error": true, "text": "tool_error: deliberate failure"})
    );
    assert_ne!(report["wait_for_cancel"], "returned");
    assert_eq!(report["cancelled_count"], 1);
}

#[tokio::test]
async fn python_sdk_drives_the_demo_server_over_stdio() {
    let Some(python) = common::python("python_sdk_drives_the_demo_server_over_stdio") else {
        return;
    };
    let bin = demo_server_binary();
    assert!(bin.exists(), "{} not built", bin.display());
    let report = run_python_client(&python, &["stdio", bin.to_str().unwrap()]).await;
    check_python_report(&report);
}

#[tokio::test]
async fn python_sdk_drives_the_server_over_streamable_http() {
    let Some(python) = common::python("python_sdk_drives_the_server_over_streamable_http") else {
        return;
    };
    let (url, _backend, shutdown) = http_server(Some("py-token")).await;
    let report = run_python_client(&python, &["http", &url, "py-token"]).await;
    check_python_report(&report);
    shutdown.cancel();
}
