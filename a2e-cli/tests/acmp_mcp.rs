//! ACMP beside MCP: `a2e serve --mcp-stdio` advertises ACMP in `initialize`
//! and serves `acmp/invoke` with its notifications; a buyer reaches one
//! provider over MCP stdio and another over WebSocket in one DAG.

mod acmp_support;

use std::time::Duration;

use a2e_host::acmp::stdio::StdioConnector;
use acmp_dag::remote::{Connector, Notice};
use acmp_support::{ProviderHost, buyer_run, capability, example_dag, provider_config, workspace};
use serde_json::{Value, json};

fn stdio_argv(config: &std::path::Path) -> Vec<String> {
    vec![
        env!("CARGO_BIN_EXE_a2e").to_owned(),
        "--config".into(),
        config.display().to_string(),
        "--root".into(),
        workspace().display().to_string(),
        "serve".into(),
        "--mcp-stdio".into(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_stdio_advertises_acmp_and_serves_invoke_with_streamed_output() {
    let dir = tempfile::tempdir().unwrap();
    let caps = capability("text_stats", "tool = \"text_stats\"", 0.001);
    let (config, token) = provider_config(dir.path(), "mcp", &caps, 100, "");
    let conn = StdioConnector::new(stdio_argv(&config), Some(token))
        .connect()
        .await
        .unwrap();
    let init = conn
        .request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        )
        .await
        .unwrap();
    let acmp = &init["capabilities"]["experimental"]["acmp"];
    assert_eq!(acmp["role"], "provider", "{init}");
    assert_eq!(acmp["features"]["heartbeat_interval_ms"], 100);
    assert_eq!(acmp["capabilities"][0]["capability"], "text_stats");
    conn.notify("notifications/initialized", json!({}));
    let mut notices = conn.route("task_mcp");
    let result = conn
        .request(
            "acmp/invoke",
            json!({"task_id": "task_mcp", "capability": "text_stats", "stream": true,
                   "input": {"type": "text", "data": "one two three."}}),
        )
        .await
        .unwrap();
    assert_eq!(result["output_streamed"], true, "{result}");
    assert_eq!(result["cost_cu"], 0.001);
    let mut chunk = None;
    while let Ok(n) = notices.try_recv() {
        if let Notice::Chunk(c) = n {
            chunk = Some(c);
        }
    }
    let chunk = chunk.expect("a stream chunk before the result");
    assert!(chunk.is_final);
    assert_eq!(chunk.chunk.data["words"], 3);
    // Bad params: the MCP error carries the ACMP data.
    let e = conn
        .request("acmp/invoke", json!({"capability": "text_stats"}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32602, "{e}");
    assert_eq!(e.data.unwrap().extra["field"], "task_id");
    let e = conn
        .request(
            "acmp/invoke",
            json!({"task_id": "t", "capability": "nope", "input": {"type": "text", "data": ""}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -33002);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_stdio_without_the_bearer_token_serves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let caps = capability("text_stats", "tool = \"text_stats\"", 0.001);
    let (config, _) = provider_config(dir.path(), "locked", &caps, 100, "");
    let conn = StdioConnector::new(stdio_argv(&config), Some("wrong".into()))
        .connect()
        .await
        .unwrap();
    let answer = tokio::time::timeout(
        Duration::from_secs(30),
        conn.request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})),
    )
    .await
    .unwrap();
    assert!(answer.is_err(), "{answer:?}");
}

#[test]
fn a_dag_runs_over_one_provider_on_mcp_stdio_and_one_on_websocket() {
    let dir = tempfile::tempdir().unwrap();
    let caps = capability("split_text", "tool = \"split_text\"", 0.001)
        + &capability("aggregate_stats", "skill = \"aggregate_stats\"", 0.001);
    let (left_config, left_token) = provider_config(dir.path(), "left", &caps, 200, "");
    let right = ProviderHost::start(
        "right",
        &capability("text_stats", "tool = \"text_stats\"", 0.001),
        200,
        "",
    );
    let argv: Vec<Value> = stdio_argv(&left_config)
        .into_iter()
        .map(Value::from)
        .collect();
    let buyer = format!(
        "data_dir = \"{}\"\n[journal]\nenabled = false\n[acmp]\n[[acmp.providers]]\nname = \"left\"\ncommand = {}\ntoken = \"{left_token}\"\n{}",
        dir.path().join("data").display(),
        Value::Array(argv),
        right.entry()
    );
    let buyer_path = dir.path().join("buyer.toml");
    std::fs::write(&buyer_path, buyer).unwrap();
    let output = buyer_run(&buyer_path, &example_dag(), dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let out: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(out["status"], "completed", "{out}");
    assert_eq!(
        out["result"]["task_aggregate"]["data"]["result"]["chunks"],
        3
    );
    for task in ["task_stats_a", "task_stats_b", "task_stats_c"] {
        assert!(right.logged(&["acmp/invoke", task]));
    }
    assert!(!right.logged(&["acmp/invoke", "task_split"]));
}
