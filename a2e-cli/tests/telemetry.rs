//! Telemetry of the real `a2e` binary: a chain run over stdio exports its
//! span tree over OTLP/HTTP to a receiver in this test (decoded with the
//! official protobuf definitions) under the caller's `traceparent`; an LLM
//! skill against a scripted model server exports chat spans with token
//! counts and never the provider key; an Ontheia skill exports its
//! workflow span with a span per step; `/metrics` on the HTTP listener counts
//! the calls made and asks for the bearer token.

use crate::llm_support;
use crate::otlp_support;

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use conformance::child::HostProcess;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use otlp_support::{attr, hex, receiver};
use serde_json::{Value, json};

const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT_ID: &str = "b7ad6b7169203331";

fn answer(host: &HostProcess, id: &str) -> Value {
    host.answer(id, Duration::from_secs(20), |_| {}).unwrap().0
}

#[test]
fn a_chain_over_stdio_is_one_trace_under_the_callers_traceparent() {
    let (endpoint, got, _runtime) = receiver();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("hello.txt"), "hello telemetry\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--root"])
        .arg(root.path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "a2e-e2e");
    let mut host = HostProcess::spawn(cmd).unwrap();
    host.send(br#"{"type":"handshake/req","id":"hs","agent_id":"e2e-agent"}"#)
        .unwrap();
    assert_eq!(answer(&host, "hs")["ok"], true);

    // Three tool nodes and a branch; the branch's false side never runs.
    let chain = json!({
        "type": "chain/req", "id": "c1", "chain_id": "tele1", "streaming": false,
        "traceparent": format!("00-{TRACE_ID}-{PARENT_ID}-01"),
        "entry_node": "read",
        "nodes": [
            {"node_id": "read", "kind": "tool", "name": "read_file",
             "input": {"path": "hello.txt"}, "next_node": "check"},
            {"node_id": "check", "kind": "branch", "condition": "`true`",
             "true_node": "write", "false_node": "never"},
            {"node_id": "write", "kind": "tool", "name": "write_file",
             "input": {"path": "out/copy.txt", "content": "copied", "create_dirs": true},
             "next_node": "find"},
            {"node_id": "find", "kind": "tool", "name": "grep",
             "input": {"pattern": "copied", "path": "out"}},
            {"node_id": "never", "kind": "tool", "name": "read_file",
             "input": {"path": "missing.txt"}}
        ]
    });
    host.send(chain.to_string().as_bytes()).unwrap();
    let resp = answer(&host, "c1");
    assert_eq!(resp["success"], true, "{resp}");
    // A tool call refused as unknown: its request span carries the code.
    host.send(br#"{"type":"tool/call/req","id":"t1","tool_name":"no_such_tool","arguments":{}}"#)
        .unwrap();
    assert_eq!(answer(&host, "t1")["code"], "unknown_tool");
    host.close_stdin();
    assert!(
        host.wait_exit(Duration::from_secs(20)).is_some(),
        "the host exits when stdin closes"
    );

    // Dropping the telemetry guard at exit flushed everything.
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.lock().unwrap().spans.len() < 6 {
        assert!(Instant::now() < deadline, "spans did not arrive");
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = got.lock().unwrap();
    let spans = &got.spans;
    let by_name: HashMap<&str, &Span> = spans.iter().map(|s| (s.name.as_str(), s)).collect();
    let names = {
        let mut n: Vec<&str> = by_name.keys().copied().collect();
        n.sort();
        n
    };
    assert_eq!(
        names,
        [
            "chain/req",
            "execute_tool grep",
            "execute_tool read_file",
            "execute_tool write_file",
            "invoke_workflow",
            "tool/call/req"
        ]
    );

    let request = by_name["chain/req"];
    assert_eq!(hex(&request.trace_id), TRACE_ID);
    assert_eq!(hex(&request.parent_span_id), PARENT_ID);
    assert_eq!(request.kind, SpanKind::Server as i32);
    assert_eq!(
        attr(&request.attributes, "a2e.agent.id").as_deref(),
        Some("e2e-agent")
    );
    assert_eq!(
        attr(&request.attributes, "a2e.request.id").as_deref(),
        Some("c1")
    );
    let session = attr(&request.attributes, "a2e.session.id").unwrap();

    let workflow = by_name["invoke_workflow"];
    assert_eq!(workflow.parent_span_id, request.span_id);
    assert_eq!(
        attr(&workflow.attributes, "a2e.chain.id").as_deref(),
        Some("tele1")
    );
    for (tool, node) in [
        ("read_file", "read"),
        ("write_file", "write"),
        ("grep", "find"),
    ] {
        let span = by_name[format!("execute_tool {tool}").as_str()];
        assert_eq!(hex(&span.trace_id), TRACE_ID, "{tool}");
        assert_eq!(span.parent_span_id, workflow.span_id, "{tool}");
        assert_eq!(
            attr(&span.attributes, "gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(
            attr(&span.attributes, "gen_ai.tool.name").as_deref(),
            Some(tool)
        );
        assert_eq!(attr(&span.attributes, "a2e.node.id").as_deref(), Some(node));
        assert_eq!(
            attr(&span.attributes, "a2e.chain.id").as_deref(),
            Some("tele1")
        );
        assert_eq!(
            attr(&span.attributes, "a2e.session.id").as_deref(),
            Some(session.as_str())
        );
        // Content is off by default: the file's text is nowhere.
        assert!(attr(&span.attributes, "gen_ai.tool.call.result").is_none());
    }

    // The refused call: a trace of its own, status error with the code.
    let refused = by_name["tool/call/req"];
    assert_ne!(hex(&refused.trace_id), TRACE_ID);
    let status = refused.status.as_ref().unwrap();
    assert_eq!(status.code, StatusCode::Error as i32);
    assert_eq!(status.message, "unknown_tool");

    // The metrics went out over OTLP too.
    for name in [
        "a2e.requests",
        "a2e.call.duration",
        "a2e.node.duration",
        "a2e.workflow.duration",
    ] {
        assert!(
            got.metric_names.iter().any(|n| n == name),
            "{name} in {:?}",
            got.metric_names
        );
    }
}

const ONTHEIA_SKILL: &str = r#"---
name: tidy
description: Reads a note, then tries a tool that is not there
input_schema:
  type: object
  properties: { input: { type: string } }
---
Reads a note.

```ontheia
{"steps": [
  {"id": "read", "type": "tool", "server": "a2e", "tool": "read_file", "args": {"path": "note.txt"}},
  {"id": "label", "type": "transform", "prompt": "read ${input}"},
  {"id": "missing", "type": "tool", "server": "nowhere", "tool": "nothing", "args": {}}
]}
```
"#;

#[test]
fn an_ontheia_skill_exports_a_workflow_span_with_a_span_per_step() {
    let (endpoint, got, _runtime) = receiver();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("note.txt"), "a note\n").unwrap();
    std::fs::create_dir_all(root.path().join("skills")).unwrap();
    std::fs::write(root.path().join("skills/tidy.md"), ONTHEIA_SKILL).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--root"])
        .arg(root.path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
    let mut host = HostProcess::spawn(cmd).unwrap();
    host.send(br#"{"type":"handshake/req","id":"hs","agent_id":"e2e-agent"}"#)
        .unwrap();
    assert_eq!(answer(&host, "hs")["ok"], true);
    let call = json!({"type": "skill/call/req", "id": "s1", "name": "tidy",
                      "arguments": {"input": "the note"}});
    host.send(call.to_string().as_bytes()).unwrap();
    let resp = answer(&host, "s1");
    assert_eq!(resp["data"]["success"], false, "{resp}");
    let error = resp["data"]["error"].to_string();
    assert!(error.contains("missing"), "{resp}");
    host.close_stdin();
    assert!(host.wait_exit(Duration::from_secs(20)).is_some());

    let deadline = Instant::now() + Duration::from_secs(10);
    while !got
        .lock()
        .unwrap()
        .spans
        .iter()
        .any(|s| s.name == "invoke_workflow")
    {
        assert!(
            Instant::now() < deadline,
            "the workflow span did not arrive"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = got.lock().unwrap();
    let by_name: HashMap<&str, &Span> = got.spans.iter().map(|s| (s.name.as_str(), s)).collect();
    let workflow = by_name["invoke_workflow"];
    assert_eq!(
        attr(&workflow.attributes, "a2e.workflow.kind").as_deref(),
        Some("ontheia")
    );
    let skill = by_name["invoke_agent tidy"];
    assert_eq!(workflow.parent_span_id, skill.span_id);
    for (name, kind) in [
        ("tool read", "tool"),
        ("transform label", "transform"),
        ("tool missing", "tool"),
    ] {
        let step = by_name.get(name).unwrap_or_else(|| {
            panic!("no span {name} in {:?}", by_name.keys().collect::<Vec<_>>())
        });
        assert_eq!(step.parent_span_id, workflow.span_id, "{name}");
        assert_eq!(hex(&step.trace_id), hex(&workflow.trace_id), "{name}");
        assert_eq!(
            attr(&step.attributes, "a2e.node.kind").as_deref(),
            Some(kind)
        );
    }
    // The tool the first step called hangs under the workflow; the step
    // that failed carries the error, the others do not.
    assert_eq!(
        by_name["execute_tool read_file"].parent_span_id,
        workflow.span_id
    );
    let failed = by_name["tool missing"].status.as_ref().unwrap();
    assert_eq!(failed.code, StatusCode::Error as i32);
    assert_eq!(failed.message, "step_error");
    let ok = by_name["tool read"].status.as_ref();
    assert!(
        ok.is_none_or(|s| s.code != StatusCode::Error as i32),
        "{ok:?}"
    );
    assert_eq!(
        workflow.status.as_ref().map(|s| s.message.as_str()),
        Some("skill_error")
    );
}

const SKILL: &str = r#"---
name: summarise
description: Summarise the notes
tools: [grep]
input_schema:
  type: object
  properties: { folder: { type: string } }
max_turns: 3
---
Summarise the notes.
"#;

#[test]
fn an_llm_skill_exports_chat_spans_with_tokens_and_never_the_key() {
    use llm_support::{FAKE_KEY, Server, Workspace, provider, text, tool};
    let (endpoint, got, _runtime) = receiver();
    let ws = Workspace::new();
    ws.skill("summarise", SKILL);
    let server = Server::start(vec![
        tool(
            "call_7",
            "grep",
            json!({"pattern": "TODO", "path": "notes"}),
        ),
        text("Two TODOs."),
    ]);
    let config = ws.config(&provider("main", "openai", &server, ""));
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .arg("--config")
        .arg(&config)
        .args(["skill", "summarise", "--input", "{}"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    let got = got.lock().unwrap();
    let spans = &got.spans;
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let agent = named("invoke_agent summarise");
    assert_eq!(
        agent.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let agent = agent[0];
    assert_eq!(
        attr(&agent.attributes, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    let chats = named("chat scripted-model");
    assert_eq!(chats.len(), 2, "one chat span per model call");
    for chat in &chats {
        assert_eq!(chat.parent_span_id, agent.span_id);
        assert_eq!(chat.trace_id, agent.trace_id);
        assert_eq!(chat.kind, SpanKind::Client as i32);
        assert_eq!(
            attr(&chat.attributes, "gen_ai.provider.name").as_deref(),
            Some("openai")
        );
        assert_eq!(
            attr(&chat.attributes, "gen_ai.request.model").as_deref(),
            Some("scripted-model")
        );
        assert_eq!(
            attr(&chat.attributes, "gen_ai.usage.input_tokens").as_deref(),
            Some("10")
        );
        assert_eq!(
            attr(&chat.attributes, "gen_ai.usage.output_tokens").as_deref(),
            Some("5")
        );
    }
    // Each model call carried its own chat span's trace context.
    let mut parents: Vec<String> = server
        .received()
        .iter()
        .map(|r| {
            let parent = r.headers.get("traceparent").expect("a traceparent header");
            let fields: Vec<&str> = parent.split('-').collect();
            assert_eq!(fields[1], hex(&agent.trace_id), "{parent}");
            fields[2].to_owned()
        })
        .collect();
    parents.sort();
    let mut chat_ids: Vec<String> = chats.iter().map(|c| hex(&c.span_id)).collect();
    chat_ids.sort();
    assert_eq!(parents, chat_ids);
    let grep = named("execute_tool grep");
    assert_eq!(grep.len(), 1);
    assert_eq!(grep[0].parent_span_id, agent.span_id);
    // The provider key is in no exported byte; content is off: no prompt either.
    let contains = |needle: &str| {
        got.raw
            .iter()
            .any(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
    };
    assert!(!contains(FAKE_KEY));
    assert!(!contains("Summarise the notes."));
    assert!(!contains("Two TODOs."));
    assert!(
        got.metric_names
            .iter()
            .any(|n| n == "gen_ai.client.token.usage")
    );
    assert!(
        got.metric_names
            .iter()
            .any(|n| n == "gen_ai.client.operation.duration")
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn metrics_on_the_http_listener_count_calls_behind_the_token() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("hello.txt"), "hello\n").unwrap();
    let config = root.path().join("a2e.toml");
    std::fs::write(
        &config,
        "auth_token = \"s3cret-token\"\n[telemetry]\nenabled = true\ntraces_exporter = \"none\"\nmetrics_exporter = \"none\"\n",
    )
    .unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--http", &addr, "--config"])
        .arg(&config)
        .arg("--root")
        .arg(root.path());
    let mut host = HostProcess::spawn(cmd).unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = a2e_http::ClientOptions::default().build().unwrap();
        let base = format!("http://{addr}");
        // Wait for the listener.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match client.get(format!("{base}/metrics")).send().await {
                Ok(r) => {
                    assert_eq!(r.status(), 401, "no token, no metrics");
                    break;
                }
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("the listener did not come up: {e}"),
            }
        }
        let bearer = "Bearer s3cret-token";
        let session = client
            .post(format!("{base}/session"))
            .header("authorization", bearer)
            .send()
            .await
            .unwrap();
        let session_id = session.headers()["x-session-id"].to_str().unwrap().to_owned();
        let send = |body: String| {
            client
                .post(format!("{base}/send"))
                .header("authorization", bearer)
                .header("x-session-id", &session_id)
                .header("content-type", "application/json")
                .body(body)
                .send()
        };
        // The agent's side of the session: its SSE stream, read and dropped.
        let mut events = client
            .get(format!("{base}/stream"))
            .header("authorization", bearer)
            .header("x-session-id", &session_id)
            .send()
            .await
            .unwrap();
        tokio::spawn(async move { while let Ok(Some(_)) = events.chunk().await {} });
        send(json!({"type": "handshake/req", "id": "hs", "agent_id": "m", "auth_token": "s3cret-token"}).to_string())
            .await
            .unwrap();
        for i in 0..3 {
            send(json!({"type": "tool/call/req", "id": format!("r{i}"), "tool_name": "read_file",
                "arguments": {"path": "hello.txt"}}).to_string())
            .await
            .unwrap();
        }
        send(json!({"type": "tool/call/req", "id": "bad", "tool_name": "read_file",
            "arguments": {"path": "missing.txt"}}).to_string())
        .await
        .unwrap();
        for i in 0..2 {
            send(json!({"type": "tool/call/req", "id": format!("m{i}"), "tool_name": "memory_write",
                "arguments": {"namespace": "agent.m.notes", "content": format!("note {i}")}}).to_string())
            .await
            .unwrap();
        }

        // The calls finish on their own tasks: scrape until they are all counted.
        let deadline = Instant::now() + Duration::from_secs(20);
        let scrape = loop {
            let text = client
                .get(format!("{base}/metrics"))
                .header("authorization", bearer)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let scrape =
                prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
            let count = |outcome: &str| {
                scrape
                    .samples
                    .iter()
                    .filter(|s| s.metric == "a2e_requests_total")
                    .filter(|s| s.labels.get("a2e_request_type") == Some("tool/call/req"))
                    .filter(|s| s.labels.get("a2e_outcome") == Some(outcome))
                    .map(|s| match s.value {
                        prometheus_parse::Value::Counter(v) => v,
                        _ => 0.0,
                    })
                    .sum::<f64>()
            };
            let memories = gauge(&scrape, "a2e_memory_entries", None);
            // Three reads and two memory writes succeed, one read fails.
            if count("ok") == 5.0 && count("tool_error") == 1.0 && memories == Some(2.0) {
                break scrape;
            }
            assert!(
                Instant::now() < deadline,
                "counts: ok {} error {}, memories {memories:?}",
                count("ok"),
                count("tool_error")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let calls = scrape
            .samples
            .iter()
            .find(|s| {
                s.metric == "a2e_call_duration_seconds_count"
                    && s.labels.get("a2e_call_name") == Some("read_file")
                    && s.labels.get("a2e_outcome") == Some("ok")
            })
            .map(|s| s.value.clone());
        assert_eq!(calls, Some(prometheus_parse::Value::Untyped(3.0)));
        // The gauges: this one HTTP session is open, nothing runs now, the
        // store holds the two memories in some bytes.
        assert_eq!(
            gauge(&scrape, "a2e_sessions_open", Some(("a2e_transport", "http"))),
            Some(1.0)
        );
        assert_eq!(
            gauge(&scrape, "a2e_runs_in_flight", Some(("a2e_run_kind", "tool"))),
            Some(0.0)
        );
        assert!(gauge(&scrape, "a2e_memory_size_bytes", None).is_some_and(|b| b > 0.0));
    });
    drop(runtime);
    host.close_stdin();
    drop(host);
}

/// The value of gauge `metric` (with the label, when given) in a scrape.
fn gauge(
    scrape: &prometheus_parse::Scrape,
    metric: &str,
    label: Option<(&str, &str)>,
) -> Option<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .find(|s| label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
        .and_then(|s| match s.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => Some(v),
            _ => None,
        })
}
