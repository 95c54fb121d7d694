//! The live view over plain HTTP: without the token `/ui`, its assets, its
//! JSON and its event stream answer 401; with the bearer header or the
//! cookie `/ui?token=` sets they answer, under a strict
//! Content-Security-Policy; the overview lists the open sessions; a chain
//! run over WebSocket shows in the event stream as it goes and in the run's
//! JSON with its graph.

#![cfg(feature = "ui")]

use crate::net_support;

use std::time::Duration;

use a2e_client::Client;
use a2e_host::transport::net::NetOptions;
use a2e_proto::{ChainNode, ChainRequest, NodeKind};
use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use net_support::*;
use serde_json::{Value, json};

const TOKEN: &str = "s3cret";

/// One GET on a fresh connection.
async fn get(
    addr: std::net::SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> Response<Incoming> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut builder = Request::builder()
        .method("GET")
        .uri(path)
        .header("host", addr.to_string());
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    sender
        .send_request(builder.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap()
}

async fn text(resp: Response<Incoming>) -> String {
    String::from_utf8(
        resp.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap()
}

async fn json_of(resp: Response<Incoming>) -> Value {
    assert_eq!(resp.status(), StatusCode::OK);
    serde_json::from_str(&text(resp).await).unwrap()
}

const BEARER: (&str, &str) = ("authorization", "Bearer s3cret");

/// A host with `token` whose chain runs are journaled, served on loopback.
async fn served(token: &str) -> (tempfile::TempDir, Server) {
    let (dir, _counters, host) = setup(token);
    a2e_host::runs::enable(&host).await.unwrap();
    (dir, Server::start(host, NetOptions::default()).await)
}

/// The three-node chain the view tests run: `fetch` echoes markup, `wait`
/// sleeps, `last` echoes.
pub fn chain(wait_ms: u64) -> ChainRequest {
    let mut fetch = ChainNode::new("fetch", NodeKind::TOOL, "echo");
    fetch
        .input
        .insert("html".into(), json!("<img src=x onerror=alert(1)>"));
    fetch.next_node = "wait".into();
    let mut wait = ChainNode::new("wait", NodeKind::TOOL, "slow");
    wait.input.insert("ms".into(), json!(wait_ms));
    wait.next_node = "last".into();
    let last = ChainNode::new("last", NodeKind::TOOL, "echo");
    ChainRequest {
        chain_id: "<b>digest</b>".into(),
        nodes: vec![fetch, wait, last],
        entry_node: "fetch".into(),
        streaming: true,
        ..ChainRequest::default()
    }
}

/// SSE `data:` objects off a response body.
struct Events {
    body: Incoming,
    buf: String,
}

impl Events {
    async fn next(&mut self) -> Value {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let event: String = self.buf.drain(..end + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if !data.is_empty() {
                    return serde_json::from_str(&data.join("\n")).unwrap();
                }
                continue;
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("an event within 10 s")
                .expect("the stream goes on")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buf.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_token_the_view_and_its_stream_answer_401() {
    let (_dir, server) = served(TOKEN).await;
    let addr = server.addr;
    for path in [
        "/ui",
        "/ui/events",
        "/ui/app.js",
        "/ui/app.css",
        "/ui/api/overview",
        "/ui/api/catalog",
        "/ui/api/runs/x",
    ] {
        assert_eq!(get(addr, path, &[]).await.status(), 401, "{path}");
        let wrong = [("authorization", "Bearer nope")];
        assert_eq!(get(addr, path, &wrong).await.status(), 401, "{path}");
        let cookie = [("cookie", "a2e_ui=bm9wZQ")];
        assert_eq!(get(addr, path, &cookie).await.status(), 401, "{path}");
    }
    let resp = get(addr, "/ui?token=nope", &[]).await;
    assert_eq!(resp.status(), 401);
    assert!(resp.headers().get("set-cookie").is_none());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_served_with_the_token_under_a_strict_policy() {
    let (_dir, server) = served(TOKEN).await;
    let addr = server.addr;
    let resp = get(addr, "/ui", &[BEARER]).await;
    assert_eq!(resp.status(), 200);
    let csp = resp.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"));
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    let page = text(resp).await;
    // Script and style come from files, none inline.
    assert!(page.contains(r#"<script src="/ui/app.js" defer></script>"#));
    assert_eq!(page.matches("<script").count(), 1);
    assert!(!page.contains("<style") && !page.contains(" style="));
    assert!(
        !page
            .split_whitespace()
            .any(|w| w.starts_with("on") && w.contains('=')),
        "no inline handlers"
    );
    assert!(!page.contains("http://") && !page.contains("https://"));
    let script = text(get(addr, "/ui/app.js", &[BEARER]).await).await;
    assert!(!script.contains("innerHTML") && !script.contains("eval("));
    let size =
        page.len() + script.len() + text(get(addr, "/ui/app.css", &[BEARER]).await).await.len();
    assert_eq!(size, a2e_host::ui::PAGE_BYTES);
    eprintln!("the live view's page, script and style: {size} bytes");

    // `?token=` once: a cookie for /ui and a redirect that drops the token.
    let resp = get(addr, "/ui?token=s3cret", &[]).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(resp.headers()["location"], "/ui");
    let cookie = resp.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    assert!(
        !cookie.contains(TOKEN),
        "the cookie does not carry the token in clear"
    );
    let pair = cookie.split(';').next().unwrap();
    assert_eq!(get(addr, "/ui", &[("cookie", pair)]).await.status(), 200);
    assert_eq!(
        get(addr, "/ui/events", &[("cookie", pair)]).await.status(),
        200
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_runs_and_the_catalog_show_and_update_live() {
    let (_dir, server) = served(TOKEN).await;
    let addr = server.addr;
    let resp = get(addr, "/ui/events", &[BEARER]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut events = Events {
        body: resp.into_body(),
        buf: String::new(),
    };
    assert_eq!(
        events.next().await,
        json!({"kind": "sessions", "sessions": []})
    );

    let client = Client::builder()
        .agent_id("view-agent")
        .auth_token(TOKEN)
        .connect_ws(&server.ws_url())
        .await
        .unwrap();
    let sessions = loop {
        let item = events.next().await;
        if item["kind"] == "sessions" && item["sessions"][0]["agent"] == "view-agent" {
            break item["sessions"].clone();
        }
    };
    assert_eq!(sessions[0]["transport"], "ws");
    let overview = json_of(get(addr, "/ui/api/overview", &[BEARER]).await).await;
    assert_eq!(overview["sessions"][0]["agent"], "view-agent");
    assert_eq!(overview["journal"], true);
    assert_eq!(overview["runs"], json!([]));

    let catalog = json_of(get(addr, "/ui/api/catalog", &[BEARER]).await).await;
    let tools: Vec<&str> = catalog["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"echo") && tools.contains(&"read_file"),
        "{tools:?}"
    );
    assert_eq!(
        catalog["skills"][0]["input_schema"]["required"],
        json!(["name"])
    );

    let resp = client.chains().run_to_end(chain(50)).await.unwrap();
    assert!(resp.success, "{resp:?}");
    // The stream told the run as it went: started, each node, finished.
    let mut seen = Vec::new();
    let run_id = loop {
        let item = events.next().await;
        let kind = item["kind"].as_str().unwrap().to_owned();
        if kind == "node_finished" {
            seen.push(item["node_id"].as_str().unwrap().to_owned());
        }
        if kind == "node_finished" && item["node_id"] == "fetch" {
            assert_eq!(
                item["outcome"]["output"]["html"],
                "<img src=x onerror=alert(1)>"
            );
        }
        if kind == "run_finished" {
            assert_eq!(item["status"], "succeeded");
            break item["run_id"].as_str().unwrap().to_owned();
        }
    };
    assert_eq!(seen, ["fetch", "wait", "last"]);

    let run = json_of(get(addr, &format!("/ui/api/runs/{run_id}"), &[BEARER]).await).await;
    assert_eq!(run["chain_id"], "<b>digest</b>");
    for node in ["fetch", "wait", "last"] {
        assert_eq!(run["states"][node]["state"], "done", "{node}: {run}");
    }
    let svg = run["svg"].as_str().unwrap();
    assert_eq!(svg.matches("<g class=\"node ").count(), 3);
    assert!(
        svg.contains("&lt;b&gt;digest&lt;/b&gt;"),
        "the title is escaped"
    );
    let overview = json_of(get(addr, "/ui/api/overview", &[BEARER]).await).await;
    assert_eq!(overview["runs"][0]["run_id"], run_id.as_str());

    // Bad ids are refused, not a panic.
    assert_eq!(
        get(addr, "/ui/api/runs/..%2F..", &[BEARER]).await.status(),
        400
    );
    let unknown = "0123456789abcdef0123456789abcdef";
    let status = get(addr, &format!("/ui/api/runs/{unknown}"), &[BEARER])
        .await
        .status();
    assert!(status == 404 || status == 400, "{status}");
    client.close().await;
    // Shutdown ends the event stream.
    server.shutdown().await;
}

/// A journaled ACMP DAG run shows with its tasks, their states and its
/// graph (escaped), as a chain run does.
#[cfg(feature = "acmp")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dag_run_shows_with_its_tasks_and_graph() {
    let (_dir, _counters, host) = setup(TOKEN);
    a2e_host::runs::enable(&host).await.unwrap();
    let server = Server::start(host.clone(), NetOptions::default()).await;
    let dag = serde_json::from_value(json!({
        "dag_id": "<i>dag</i>",
        "tasks": [
            {"task_id": "t1", "capability": "echo", "input": {"type": "json", "data": {"x": 1}}},
            {"task_id": "t2", "capability": "echo", "input": {"source": {"from_task": "t1"}}},
        ],
        "edges": [{"from": "t1", "to": "t2"}],
    }))
    .unwrap();
    let options = a2e_host::CallOptions::new();
    let resp = a2e_host::runs::run_dag(&host, dag, "d1", options, "view-agent", |_| {}).await;
    assert!(resp.success, "{resp:?}");
    let runs = host
        .journal()
        .unwrap()
        .list_runs(&a2e_journal::RunFilter::default())
        .await
        .unwrap();
    let run_id = runs.items[0].run_id.to_string();

    let run = json_of(get(server.addr, &format!("/ui/api/runs/{run_id}"), &[BEARER]).await).await;
    assert_eq!(run["summary"]["kind"], "acmp_dag", "{run}");
    assert_eq!(run["chain_id"], "<i>dag</i>", "{run}");
    assert_eq!(run["graph_error"], Value::Null, "{run}");
    assert_eq!(run["nodes"][0]["name"], "echo", "{run}");
    for task in ["t1", "t2"] {
        assert_eq!(run["states"][task]["state"], "done", "{task}: {run}");
    }
    // Each task's record holds the input it was invoked with: t2's is
    // what t1 answered, resolved from its `source`.
    let start = |task: &str| {
        run["records"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["node_id"] == task)
            .map(|r| r["start"]["input"].clone())
            .unwrap()
    };
    assert_eq!(
        start("t1"),
        json!({"type": "json", "data": {"x": 1}}),
        "{run}"
    );
    assert_eq!(start("t2")["data"], json!({"x": 1}), "{run}");
    let svg = run["svg"].as_str().unwrap();
    assert_eq!(svg.matches("<g class=\"node ").count(), 2, "{svg}");
    assert!(!svg.contains("<i>dag</i>"), "the title is escaped");
    server.shutdown().await;
}

/// A host on a fresh root with `skills/` holding `files` (name, text) and
/// `config` (TOML) besides, its runs journaled.
async fn skill_host(
    files: &[(&str, String)],
    config: &str,
) -> (tempfile::TempDir, std::sync::Arc<a2e_host::Host>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("skills")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join("skills").join(format!("{name}.md")), text).unwrap();
    }
    let path = dir.path().join("a2e.toml");
    std::fs::write(&path, format!("auth_token = \"{TOKEN}\"\n{config}")).unwrap();
    let mut config = a2e_host::HostConfig::load(&path).unwrap();
    config.root = dir.path().to_owned();
    let builder = a2e_host::Host::builder(config).with_builtins();
    let host = a2e_host::skills::builder_with_skills(builder)
        .build()
        .unwrap();
    a2e_host::runs::enable(&host).await.unwrap();
    host.register_session("s1", "view-agent");
    (dir, host)
}

/// The one run's view.
async fn only_run_view(host: &std::sync::Arc<a2e_host::Host>, server: &Server) -> Value {
    let runs = host
        .journal()
        .unwrap()
        .list_runs(&a2e_journal::RunFilter::default())
        .await
        .unwrap();
    let run_id = runs.items[0].run_id.to_string();
    json_of(get(server.addr, &format!("/ui/api/runs/{run_id}"), &[BEARER]).await).await
}

#[cfg(feature = "ontheia")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ontheia_skill_run_shows_with_its_document_drawn() {
    let doc = json!({"steps": [
        {"id": "hi", "type": "transform", "prompt": "hello ${input}"},
        {"id": "stats", "type": "tool", "server": "a2e", "tool": "text_stats",
         "args": {"text": "${steps.hi.output}"}}
    ]});
    let skill = format!(
        "---\nname: greet\ndescription: Greets and counts\n---\nGreets.\n\n```ontheia\n{doc}\n```\n"
    );
    let (_dir, host) = skill_host(&[("greet", skill)], "").await;
    let server = Server::start(host.clone(), NetOptions::default()).await;
    let req = a2e_proto::SkillCallRequest::new("greet", json!({"input": "ada"}));
    let result = host
        .call_skill(req, a2e_host::CallOptions::new().session("s1"))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    let run = only_run_view(&host, &server).await;
    assert_eq!(run["summary"]["kind"], "ontheia", "{run}");
    assert_eq!(run["chain_id"], "greet", "{run}");
    assert_eq!(run["graph_error"], Value::Null, "{run}");
    assert_eq!(run["nodes"][1]["name"], "text_stats", "{run}");
    // The journaled step (the tool) and the engine's own one both finished.
    assert_eq!(run["states"]["stats"]["state"], "done", "{run}");
    assert_eq!(run["states"]["hi"]["state"], "done", "{run}");
    let svg = run["svg"].as_str().unwrap();
    assert_eq!(svg.matches("<g class=\"node ").count(), 2, "{svg}");
    assert_eq!(run["answer"]["success"], true, "{run}");
    server.shutdown().await;
}

/// An OpenAI-compatible model on loopback answering `turns` in order (each
/// a message's `delta`), streamed as Server-Sent Events (LLM skills stream).
async fn scripted_model(turns: Vec<Value>) -> std::net::SocketAddr {
    let turns = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from(
        turns,
    )));
    let app = axum::Router::new().fallback(move || {
        let turns = turns.clone();
        async move {
            let delta = turns
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(json!({"role": "assistant", "content": "done"}));
            let finish = if delta.get("tool_calls").is_some() {
                "tool_calls"
            } else {
                "stop"
            };
            let chunk = |choice: Value, usage: Value| {
                format!(
                    "data: {}\n\n",
                    json!({"id": "c", "object": "chat.completion.chunk",
                    "model": "scripted", "choices": [choice], "usage": usage})
                )
            };
            let body = chunk(
                json!({"index": 0, "delta": delta, "finish_reason": null}),
                Value::Null,
            ) + &chunk(
                json!({"index": 0, "delta": {}, "finish_reason": finish}),
                json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}),
            ) + "data: [DONE]\n\n";
            (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                body,
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[cfg(feature = "llm")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_skill_run_shows_its_turns_and_tool_calls() {
    let model = scripted_model(vec![
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "text_stats", "arguments": "{\"text\": \"one two\"}"}}]}),
        json!({"role": "assistant", "content": "two words"}),
    ])
    .await;
    let skill = "---\nname: counter\ndescription: Counts words\ntools: [text_stats]\n---\nCount the words.\n".to_owned();
    let config = format!(
        "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"http://{model}/v1\"\nmodel = \"m\"\napi_key = \"k\"\n"
    );
    let (_dir, host) = skill_host(&[("counter", skill)], &config).await;
    let server = Server::start(host.clone(), NetOptions::default()).await;
    let req = a2e_proto::SkillCallRequest::new("counter", json!({"task": "count"}));
    let result = host
        .call_skill(req, a2e_host::CallOptions::new().session("s1"))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    let run = only_run_view(&host, &server).await;
    assert_eq!(run["summary"]["kind"], "llm_skill", "{run}");
    assert_eq!(run["chain_id"], "counter", "{run}");
    let ids: Vec<&str> = run["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["turn-1", "turn-1/call_1", "turn-2"], "{run}");
    assert_eq!(run["nodes"][1]["name"], "tool text_stats", "{run}");
    for id in ids {
        assert_eq!(run["states"][id]["state"], "done", "{id}: {run}");
    }
    let svg = run["svg"].as_str().unwrap();
    assert_eq!(svg.matches("<g class=\"node ").count(), 3, "{svg}");
    // The turn's answer and the tool's result are journaled.
    let records = run["records"].as_array().unwrap();
    assert_eq!(records.len(), 3, "{run}");
    assert_eq!(run["answer"]["final_output"]["data"], "two words", "{run}");
    server.shutdown().await;
}
