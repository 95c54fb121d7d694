//! ACMP beside MCP: `a2e serve --mcp-stdio` advertises ACMP in `initialize`
//! and serves `acmp/invoke` with its notifications; a buyer reaches one
//! provider over MCP stdio and another over WebSocket in one DAG; providers
//! on MCP Streamable HTTP (`a2e serve --mcp-http`, bearer auth) take a DAG
//! split across them, a streaming edge between them, and a direct invoke
//! with streamed output.

use crate::acmp_support;

use std::time::Duration;

use a2e_host::acmp::http::HttpConnector;
use a2e_host::acmp::stdio::StdioConnector;
use acmp_dag::remote::{Connector, Notice};
use acmp_support::{
    ProviderHost, buyer_config, buyer_run, capability, example_dag, provider_config, workspace,
};
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

/// The text pipeline's providers on MCP Streamable HTTP: `left` splits and
/// aggregates, `right` counts.
fn http_pipeline_providers() -> (ProviderHost, ProviderHost) {
    let left = ProviderHost::start_mcp_http(
        "left",
        &(capability("split_text", "tool = \"split_text\"", 0.001)
            + &capability("aggregate_stats", "skill = \"aggregate_stats\"", 0.001)),
        200,
        "",
    );
    let right = ProviderHost::start_mcp_http(
        "right",
        &capability("text_stats", "tool = \"text_stats\"", 0.001),
        200,
        "",
    );
    (left, right)
}

fn run_json(output: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr)))
}

#[test]
fn the_text_pipeline_runs_split_across_two_providers_on_mcp_streamable_http() {
    let (left, right) = http_pipeline_providers();
    assert!(left.url.starts_with("http://127.0.0.1:") && left.url.ends_with("/mcp"));
    let dir = tempfile::tempdir().unwrap();
    let config = buyer_config(dir.path(), &[&left, &right], "");
    let output = buyer_run(&config, &example_dag(), dir.path())
        .output()
        .unwrap();
    let out = run_json(&output);
    assert_eq!(out["status"], "completed", "{out}");
    assert_eq!(
        out["result"]["task_aggregate"]["data"]["result"]["chunks"], 3,
        "{out}"
    );
    for task in ["task_stats_a", "task_stats_b", "task_stats_c"] {
        assert!(right.logged(&["acmp/invoke", task]), "{:?}", right.log());
        assert!(!left.logged(&["acmp/invoke", task]));
    }
    for task in ["task_split", "task_aggregate"] {
        assert!(left.logged(&["acmp/invoke", task]), "{:?}", left.log());
        assert!(!right.logged(&["acmp/invoke", task]));
    }
}

#[test]
fn a_streaming_edge_forwards_chunks_between_two_providers_on_mcp_streamable_http() {
    let (left, right) = http_pipeline_providers();
    let dir = tempfile::tempdir().unwrap();
    let config = buyer_config(dir.path(), &[&left, &right], "");
    let dag = json!({"dag_id": "dag_stream_http", "tasks": [
        {"task_id": "task_stats", "capability": "text_stats",
         "input": {"type": "text", "data": "Streams flow. Chunks move on."}},
        {"task_id": "task_total", "capability": "aggregate_stats",
         "input": {"source": {"from_task": "task_stats"}}}],
        "edges": [{"from": "task_stats", "to": "task_total", "stream_eligible": true}]});
    let path = dir.path().join("stream.json");
    std::fs::write(&path, dag.to_string()).unwrap();
    let output = buyer_run(&config, &path, dir.path()).output().unwrap();
    let out = run_json(&output);
    assert_eq!(out["status"], "completed", "{out}");
    let result = &out["result"]["task_total"]["data"]["result"];
    assert_eq!(
        (result["chunks"].clone(), result["words"].clone()),
        (json!(1), json!(5)),
        "{out}"
    );
    // The upstream streamed its output; the downstream took it as input chunks.
    assert!(
        right.logged(&["acmp/invoke", "task_stats", "stream=true"]),
        "{:?}",
        right.log()
    );
    assert!(
        left.logged(&["acmp/invoke", "task_total", "input_stream=true"]),
        "{:?}",
        left.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_http_serves_invoke_with_its_chunks_first_and_refuses_a_wrong_token() {
    let p = ProviderHost::start_mcp_http(
        "direct",
        &capability("text_stats", "tool = \"text_stats\"", 0.002),
        100,
        "",
    );
    let conn = HttpConnector::new(&p.url, Some(p.token.clone()))
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
    assert_eq!(
        acmp["capabilities"][0]["capability"], "text_stats",
        "{init}"
    );
    conn.notify("notifications/initialized", json!({}));
    // The chunks come on the session's own stream, the result on the request's:
    // the chunk is delivered before the result all the same.
    for n in 0..3 {
        let task = format!("task_http_{n}");
        let mut notices = conn.route(&task);
        let result = conn
            .request(
                "acmp/invoke",
                json!({"task_id": task, "capability": "text_stats", "stream": true,
                       "input": {"type": "text", "data": "one two three."}}),
            )
            .await
            .unwrap();
        assert_eq!(result["output_streamed"], true, "{result}");
        assert_eq!(result["cost_cu"], 0.002);
        let mut chunk = None;
        while let Ok(n) = notices.try_recv() {
            if let Notice::Chunk(c) = n {
                chunk = Some(c);
            }
        }
        let chunk = chunk.expect("the stream chunk before the result");
        assert!(chunk.is_final);
        assert_eq!(chunk.chunk.data["words"], 3);
        conn.unroute(&task);
    }
    // An ACMP error comes back as the MCP error with its code.
    let e = conn
        .request(
            "acmp/invoke",
            json!({"task_id": "t", "capability": "nope", "input": {"type": "text", "data": ""}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -33002);
    // A wrong bearer token: every request is refused with the HTTP status.
    let wrong = HttpConnector::new(&p.url, Some("wrong".into()))
        .connect()
        .await
        .unwrap();
    let e = wrong
        .request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "0"}}),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("401"), "{e}");
    let e = wrong
        .request(
            "acmp/invoke",
            json!({"task_id": "t2", "capability": "text_stats", "input": {"type": "text", "data": "a"}}),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("401"), "{e}");
    assert!(!p.logged(&["acmp/invoke", "t2"]));
}

#[test]
fn a_buyer_with_a_wrong_token_for_an_mcp_http_provider_fails_the_task() {
    let right = ProviderHost::start_mcp_http(
        "right",
        &capability("text_stats", "tool = \"text_stats\"", 0.001),
        200,
        "",
    );
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "data_dir = \"{}\"\n[journal]\nenabled = false\n[acmp]\n[[acmp.providers]]\nname = \"right\"\nurl = \"{}\"\ntoken = \"wrong\"\n[[acmp.providers.capabilities]]\ncapability = \"text_stats\"\nprice_cu = 0.001\n",
        dir.path().join("data").display(),
        right.url
    );
    let path = dir.path().join("buyer.toml");
    std::fs::write(&path, config).unwrap();
    let dag = json!({"dag_id": "dag_locked", "tasks": [
        {"task_id": "task_locked", "capability": "text_stats",
         "input": {"type": "text", "data": "a b"}}], "edges": []});
    let file = dir.path().join("locked.json");
    std::fs::write(&file, dag.to_string()).unwrap();
    let output = buyer_run(&path, &file, dir.path()).output().unwrap();
    let out = run_json(&output);
    assert_eq!(out["status"], "failed", "{out}");
    assert!(
        out["tasks"][0]["error"].as_str().unwrap().contains("401"),
        "{out}"
    );
    assert!(!right.logged(&["acmp/invoke", "task_locked"]));
}

/// A provider's capabilities served by a chain file and an Ontheia document:
/// each task's input reaches its run, each run's answer is the task's result.
#[test]
fn capabilities_served_by_a_chain_file_and_an_ontheia_document() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("stats-chain.json");
    std::fs::write(
        &chain,
        json!({"type": "chain/req", "chain_id": "stats", "entry_node": "stats",
               "nodes": [{"node_id": "stats", "kind": "tool", "name": "text_stats",
                          "input_map": {"text": "input.text"}}]})
        .to_string(),
    )
    .unwrap();
    let doc = dir.path().join("stats-doc.json");
    std::fs::write(
        &doc,
        json!({"steps": [
            {"id": "stats", "type": "tool", "server": "a2e", "tool": "text_stats",
             "args": {"text": "${input}"}},
            {"id": "say", "type": "transform", "prompt": "${user_id} counted: ${steps.stats.output}"}
        ]})
        .to_string(),
    )
    .unwrap();
    let targets = capability("split_text", "tool = \"split_text\"", 0.001)
        + &capability(
            "chain_stats",
            &format!("chain = \"{}\"", chain.display()),
            0.001,
        )
        + &capability(
            "doc_stats",
            &format!("ontheia = \"{}\"", doc.display()),
            0.001,
        );
    let provider = ProviderHost::start_mcp_http("targets", &targets, 200, "");
    let source = |i: usize| json!({"source": {"from_task": "task_split", "field": format!("data.chunks[{i}]")}});
    let dag = json!({"dag_id": "dag_targets", "tasks": [
        {"task_id": "task_split", "capability": "split_text",
         "input": {"type": "text", "data": "One two three.\n\nFour five.\n\nSix."}},
        {"task_id": "task_chain", "capability": "chain_stats", "input": source(0)},
        {"task_id": "task_doc", "capability": "doc_stats", "input": source(1)},
        {"task_id": "task_doc_vars", "capability": "doc_stats",
         "input": {"type": "json", "data": {"text": "seven eight nine ten", "user_id": "ada"}}}
    ], "edges": [{"from": "task_split", "to": "task_chain"}, {"from": "task_split", "to": "task_doc"}]});
    let dag_path = dir.path().join("targets.json");
    std::fs::write(&dag_path, dag.to_string()).unwrap();
    let config = buyer_config(dir.path(), &[&provider], "");
    let output = buyer_run(&config, &dag_path, dir.path()).output().unwrap();
    let out = run_json(&output);
    assert_eq!(out["status"], "completed", "{out}");
    let chain_out = &out["result"]["task_chain"]["data"];
    assert_eq!(chain_out["words"], 3, "{out}");
    let doc_out = out["result"]["task_doc"]["data"].to_string();
    assert!(
        doc_out.contains("counted:") && doc_out.contains("\\\"words\\\":2"),
        "{out}"
    );
    let vars_out = out["result"]["task_doc_vars"]["data"].to_string();
    assert!(
        vars_out.contains("ada counted:") && vars_out.contains("\\\"words\\\":4"),
        "{out}"
    );
    assert!(
        provider.logged(&["acmp/invoke", "task_doc"]),
        "{:?}",
        provider.log()
    );
}
