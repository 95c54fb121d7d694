//! The span tree of a chain, as a host builds it with the helpers, exported
//! over OTLP/HTTP and OTLP/gRPC to a receiver in the test and decoded with the
//! official protobuf definitions.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use a2e_telemetry::metrics::OK;
use a2e_telemetry::{
    ModelCall, OtlpProtocol, Parent, Protocol, Telemetry, TelemetryConfig, TelemetryGuard,
    TraceContext, WorkflowKind,
};
use opentelemetry_proto::tonic::metrics::v1::metric;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use serde_json::json;
use support::{Receiver, attr, hex, int_attr, span};
use tracing_subscriber::layer::SubscriberExt;

/// A provider key the host knows (registered as a secret).
const PROVIDER_KEY: &str = "sk-fake-provider-key-0123456789";
/// A key sent to the collector as a header: it must reach the collector, and
/// only as a header.
const COLLECTOR_KEY: &str = "fake-collector-token-4567";
/// The caller's trace.
const INCOMING: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn config(receiver: &Receiver, capture_content: bool) -> TelemetryConfig {
    TelemetryConfig {
        endpoint: Some(receiver.endpoint()),
        protocol: if receiver.grpc {
            OtlpProtocol::Grpc
        } else {
            OtlpProtocol::HttpProtobuf
        },
        service_name: "a2e-test-host".into(),
        resource_attributes: BTreeMap::from([("deployment.environment.name".into(), "ci".into())]),
        headers: BTreeMap::from([("x-collector-key".into(), COLLECTOR_KEY.into())]),
        capture_content,
        ..TelemetryConfig::default()
    }
}

/// What a host does for one `chain/req`: a chain of a tool node, a branch, a
/// failing tool node and an LLM skill node whose loop makes one model call
/// and one tool call. Returns the context the model call would carry on.
fn run_chain(t: &Telemetry) -> Option<TraceContext> {
    let incoming = TraceContext::parse(INCOMING, Some("rojo=00f067aa0ba902b7")).unwrap();
    let request = t
        .request(Protocol::A2e, "chain/req")
        .session("s1")
        .agent_id("agent-7")
        .request_id("r1")
        .parent(Parent::Remote(&incoming))
        .start();
    let _request = request.span().enter();
    let chain = t
        .workflow(WorkflowKind::Chain, None)
        .chain("c1")
        .session("s1")
        .start();
    let _chain = chain.span().enter();

    let fetch = t
        .tool("fetch")
        .node("fetch")
        .chain("c1")
        .session("s1")
        .start();
    fetch.arguments(&json!({"url": "https://example.com/a", "api_key": PROVIDER_KEY}));
    fetch.result(&json!({"status": 200, "body": "hello"}));
    drop(fetch);

    drop(t.step("branch", "check").chain("c1").start());

    let write = t.tool("write_file").node("write").chain("c1").start();
    write.error("tool_error", &format!("denied (used key {PROVIDER_KEY})"));
    drop(write);

    let agent = t
        .agent("summarize")
        .node("summary")
        .chain("c1")
        .session("s1")
        .provider("openai")
        .model("gpt-4o-mini")
        .start();
    let _agent = agent.span().enter();
    let chat = t.chat("openai", "gpt-4o-mini").session("s1").start();
    chat.system_instructions("You summarize.");
    chat.input_messages(&json!([{"role": "user", "parts": [{"type": "text",
        "content": format!("summarize the page; my key is {PROVIDER_KEY}")}]}]));
    chat.output_messages(&json!([{"role": "assistant", "parts": [{"type": "tool_call",
        "id": "call_1", "name": "search", "arguments": {"q": "rust"}}], "finish_reason": "tool_calls"}]));
    chat.tokens(120, 30);
    chat.response_model("gpt-4o-mini-2024-07-18");
    chat.finish_reasons(&["tool_calls"]);
    let outbound = chat.trace_context();
    drop(chat);
    let search = t
        .tool("search")
        .tool_call_id("call_1")
        .session("s1")
        .start();
    search.arguments(&json!({"q": "rust"}));
    search.result(&json!(["https://www.rust-lang.org"]));
    drop(search);
    outbound
}

fn record_metrics(t: &Telemetry) {
    let m = t.metrics();
    m.request("chain/req", OK);
    m.model_call(&ModelCall {
        provider: "openai",
        request_model: "gpt-4o-mini",
        response_model: Some("gpt-4o-mini-2024-07-18"),
        error: None,
        duration: Duration::from_millis(420),
        usage: Some((120, 30)),
    });
}

async fn exercise(receiver: Receiver, capture_content: bool) {
    let config = config(&receiver, capture_content);
    let (telemetry, guard): (Telemetry, TelemetryGuard) = Telemetry::init(&config).unwrap();
    let telemetry = telemetry.with_secrets([PROVIDER_KEY]);
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let outbound = tracing::subscriber::with_default(subscriber, || {
        let outbound = run_chain(&telemetry);
        // A caller that did not record its trace: parent-based sampling records none of ours.
        let unsampled = TraceContext::parse(
            "00-11111111111111111111111111111111-2222222222222222-00",
            None,
        )
        .unwrap();
        drop(
            telemetry
                .tool("echo")
                .parent(Parent::Remote(&unsampled))
                .start(),
        );
        outbound
    });
    record_metrics(&telemetry);
    guard.flush();
    receiver
        .wait_until("eight spans", |got| {
            got.traces
                .iter()
                .flat_map(|r| &r.resource_spans)
                .flat_map(|rs| &rs.scope_spans)
                .map(|ss| ss.spans.len())
                .sum::<usize>()
                >= 8
        })
        .await;
    receiver
        .wait_until("the token metric", |got| {
            got.metrics
                .iter()
                .flat_map(|r| &r.resource_metrics)
                .flat_map(|rm| &rm.scope_metrics)
                .flat_map(|sm| &sm.metrics)
                .any(|m| m.name == "gen_ai.client.token.usage")
        })
        .await;

    let spans = receiver.spans();
    assert_eq!(
        spans.len(),
        8,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );

    // One trace: the caller's. The request span's parent is the caller's span.
    for s in &spans {
        assert_eq!(
            hex(&s.trace_id),
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "{}",
            s.name
        );
    }
    let request = span(&spans, "chain/req");
    assert_eq!(hex(&request.parent_span_id), "00f067aa0ba902b7");
    assert_eq!(request.trace_state, "rojo=00f067aa0ba902b7");
    assert_eq!(request.kind, SpanKind::Server as i32);
    assert_eq!(
        attr(&request.attributes, "a2e.request.type").as_deref(),
        Some("chain/req")
    );
    assert_eq!(
        attr(&request.attributes, "a2e.session.id").as_deref(),
        Some("s1")
    );
    assert_eq!(
        attr(&request.attributes, "a2e.agent.id").as_deref(),
        Some("agent-7")
    );
    assert_eq!(
        attr(&request.attributes, "a2e.request.id").as_deref(),
        Some("r1")
    );

    // The tree: request > workflow > nodes; agent > chat, tool.
    let workflow = span(&spans, "invoke_workflow");
    let children_of = |parent: &opentelemetry_proto::tonic::trace::v1::Span| -> Vec<String> {
        let mut names: Vec<String> = spans
            .iter()
            .filter(|s| s.parent_span_id == parent.span_id)
            .map(|s| s.name.clone())
            .collect();
        names.sort();
        names
    };
    assert_eq!(children_of(request), ["invoke_workflow"]);
    assert_eq!(
        children_of(workflow),
        [
            "branch check",
            "execute_tool fetch",
            "execute_tool write_file",
            "invoke_agent summarize"
        ]
    );
    let agent = span(&spans, "invoke_agent summarize");
    assert_eq!(
        children_of(agent),
        ["chat gpt-4o-mini", "execute_tool search"]
    );

    // GenAI attributes.
    assert_eq!(
        attr(&workflow.attributes, "gen_ai.operation.name").as_deref(),
        Some("invoke_workflow")
    );
    assert_eq!(
        attr(&workflow.attributes, "a2e.chain.id").as_deref(),
        Some("c1")
    );
    assert_eq!(
        attr(&workflow.attributes, "a2e.workflow.kind").as_deref(),
        Some("chain")
    );
    let fetch = span(&spans, "execute_tool fetch");
    assert_eq!(
        attr(&fetch.attributes, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        attr(&fetch.attributes, "gen_ai.tool.name").as_deref(),
        Some("fetch")
    );
    assert_eq!(
        attr(&fetch.attributes, "a2e.node.id").as_deref(),
        Some("fetch")
    );
    assert_eq!(fetch.kind, SpanKind::Internal as i32);
    let branch = span(&spans, "branch check");
    assert_eq!(
        attr(&branch.attributes, "a2e.node.kind").as_deref(),
        Some("branch")
    );
    assert_eq!(
        attr(&branch.attributes, "a2e.node.id").as_deref(),
        Some("check")
    );
    assert_eq!(
        attr(&agent.attributes, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        attr(&agent.attributes, "gen_ai.agent.name").as_deref(),
        Some("summarize")
    );
    assert_eq!(
        attr(&agent.attributes, "gen_ai.provider.name").as_deref(),
        Some("openai")
    );
    assert_eq!(
        attr(&agent.attributes, "a2e.node.id").as_deref(),
        Some("summary")
    );
    let chat = span(&spans, "chat gpt-4o-mini");
    assert_eq!(chat.kind, SpanKind::Client as i32);
    assert_eq!(
        attr(&chat.attributes, "gen_ai.operation.name").as_deref(),
        Some("chat")
    );
    assert_eq!(
        attr(&chat.attributes, "gen_ai.provider.name").as_deref(),
        Some("openai")
    );
    assert_eq!(
        attr(&chat.attributes, "gen_ai.request.model").as_deref(),
        Some("gpt-4o-mini")
    );
    assert_eq!(
        attr(&chat.attributes, "gen_ai.response.model").as_deref(),
        Some("gpt-4o-mini-2024-07-18")
    );
    assert_eq!(
        attr(&chat.attributes, "gen_ai.conversation.id").as_deref(),
        Some("s1")
    );
    assert_eq!(
        int_attr(&chat.attributes, "gen_ai.usage.input_tokens"),
        Some(120)
    );
    assert_eq!(
        int_attr(&chat.attributes, "gen_ai.usage.output_tokens"),
        Some(30)
    );
    assert_eq!(
        attr(&chat.attributes, "gen_ai.response.finish_reasons").as_deref(),
        Some("tool_calls")
    );
    let search = span(&spans, "execute_tool search");
    assert_eq!(
        attr(&search.attributes, "gen_ai.tool.call.id").as_deref(),
        Some("call_1")
    );

    // The model call carries the chat span's own context on.
    let outbound = outbound.expect("the chat span has a context");
    assert_eq!(outbound.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(outbound.span_id(), hex(&chat.span_id));
    assert!(
        outbound
            .traceparent()
            .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-")
    );

    // The failed node: status error with the A2E code.
    let write = span(&spans, "execute_tool write_file");
    let status = write.status.as_ref().expect("a status");
    assert_eq!(status.code, StatusCode::Error as i32);
    assert_eq!(status.message, "tool_error");
    assert_eq!(
        attr(&write.attributes, "a2e.error.code").as_deref(),
        Some("tool_error")
    );
    assert_eq!(
        attr(&write.attributes, "error.type").as_deref(),
        Some("tool_error")
    );
    assert_eq!(
        attr(&write.attributes, "a2e.error.message").as_deref(),
        Some("denied (used key [REDACTED])")
    );
    assert!(
        fetch
            .status
            .as_ref()
            .is_none_or(|s| s.code != StatusCode::Error as i32)
    );

    // Content: only with capture_content, and then with secrets redacted.
    let content_keys = [
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
    ];
    let recorded: Vec<&str> = spans
        .iter()
        .flat_map(|s| &s.attributes)
        .map(|kv| kv.key.as_str())
        .filter(|k| content_keys.contains(k))
        .collect();
    if capture_content {
        let args = attr(&fetch.attributes, "gen_ai.tool.call.arguments").unwrap();
        let args: serde_json::Value = serde_json::from_str(&args).unwrap();
        assert_eq!(
            args,
            json!({"url": "https://example.com/a", "api_key": "[REDACTED]"})
        );
        assert_eq!(
            attr(&fetch.attributes, "gen_ai.tool.call.result").as_deref(),
            Some(r#"{"status":200,"body":"hello"}"#)
        );
        let input = attr(&chat.attributes, "gen_ai.input.messages").unwrap();
        assert!(
            input.contains("summarize the page; my key is [REDACTED]"),
            "{input}"
        );
        assert!(
            attr(&chat.attributes, "gen_ai.output.messages")
                .unwrap()
                .contains("tool_call")
        );
        assert!(
            attr(&chat.attributes, "gen_ai.system_instructions")
                .unwrap()
                .contains("You summarize.")
        );
        assert!(receiver.raw_contains("https://www.rust-lang.org"));
    } else {
        assert!(
            recorded.is_empty(),
            "content recorded without capture_content: {recorded:?}"
        );
        assert!(!receiver.raw_contains("hello"));
        assert!(!receiver.raw_contains("summarize the page"));
    }

    // Credentials never: not in any body, in any mode; the collector key only as a header.
    assert!(!receiver.raw_contains(PROVIDER_KEY));
    assert!(!receiver.raw_contains(COLLECTOR_KEY));
    receiver.with(|got| {
        assert!(
            got.headers
                .iter()
                .all(|h| h.get("x-collector-key").map(String::as_str) == Some(COLLECTOR_KEY))
        );
    });

    // The resource.
    let resource = receiver.resource();
    assert_eq!(
        attr(&resource, "service.name").as_deref(),
        Some("a2e-test-host")
    );
    assert_eq!(
        attr(&resource, "deployment.environment.name").as_deref(),
        Some("ci")
    );
    assert_eq!(
        attr(&resource, "telemetry.sdk.language").as_deref(),
        Some("rust")
    );

    // The same instruments over OTLP: token usage per type, by provider and model.
    let metrics = receiver.metrics();
    let tokens = metrics
        .iter()
        .rev()
        .find(|m| m.name == "gen_ai.client.token.usage")
        .unwrap();
    assert_eq!(tokens.unit, "{token}");
    let Some(metric::Data::Histogram(histogram)) = &tokens.data else {
        panic!("gen_ai.client.token.usage is not a histogram: {tokens:?}");
    };
    let mut sums: Vec<(String, f64, u64)> = histogram
        .data_points
        .iter()
        .map(|p| {
            assert_eq!(
                attr(&p.attributes, "gen_ai.provider.name").as_deref(),
                Some("openai")
            );
            assert_eq!(
                attr(&p.attributes, "gen_ai.request.model").as_deref(),
                Some("gpt-4o-mini")
            );
            (
                attr(&p.attributes, "gen_ai.token.type").unwrap(),
                p.sum.unwrap(),
                p.count,
            )
        })
        .collect();
    sums.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        sums,
        [("input".into(), 120.0, 1), ("output".into(), 30.0, 1)]
    );
    assert!(
        metrics
            .iter()
            .any(|m| m.name == "gen_ai.client.operation.duration")
    );
    assert!(metrics.iter().any(|m| m.name == "a2e.requests"));

    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_is_one_trace_over_otlp_http_without_content() {
    exercise(Receiver::http().await, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_is_one_trace_over_otlp_grpc_with_content_captured() {
    exercise(Receiver::grpc().await, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_records_nothing_and_makes_no_layer() {
    let (telemetry, guard) = Telemetry::init(&TelemetryConfig::default()).unwrap();
    assert!(!telemetry.is_enabled());
    assert!(telemetry.layer::<tracing_subscriber::Registry>().is_none());
    assert!(!telemetry.metrics().is_enabled());
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    tracing::subscriber::with_default(subscriber, || {
        let op = telemetry.chat("openai", "m").start();
        assert!(!op.is_recording());
        assert!(op.trace_context().is_none());
        op.tokens(1, 2);
    });
    assert_eq!(guard.export_stats().exported, 0);
}
