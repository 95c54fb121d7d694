//! `/metrics`: a known set of calls, the text served over HTTP, scraped and
//! parsed with a Prometheus text parser, and every count checked.

use std::collections::HashMap;
use std::time::Duration;

use a2e_telemetry::metrics::OK;
use a2e_telemetry::{
    CallKind, Exporter, ModelCall, PROMETHEUS_CONTENT_TYPE, Telemetry, TelemetryConfig,
    WorkflowKind,
};
use prometheus_parse::{HistogramCount, Scrape, Value};

fn config() -> TelemetryConfig {
    TelemetryConfig {
        enabled: true,
        traces_exporter: Exporter::None,
        metrics_exporter: Exporter::None,
        ..TelemetryConfig::default()
    }
}

/// The samples of `metric` whose labels include all of `labels`.
fn find<'a>(
    scrape: &'a Scrape,
    metric: &str,
    labels: &[(&str, &str)],
) -> Vec<&'a prometheus_parse::Sample> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect()
}

fn one(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found = find(scrape, metric, labels);
    assert_eq!(found.len(), 1, "{metric} {labels:?}: {found:?}");
    match &found[0].value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        other => panic!("{metric} is not a number: {other:?}"),
    }
}

fn buckets(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Vec<HistogramCount> {
    let found = find(scrape, metric, labels);
    assert_eq!(found.len(), 1, "{metric} {labels:?}: {found:?}");
    match &found[0].value {
        Value::Histogram(b) => b.clone(),
        other => panic!("{metric} is not a histogram: {other:?}"),
    }
}

fn count_le(buckets: &[HistogramCount], le: f64) -> f64 {
    buckets
        .iter()
        .find(|b| b.less_than == le || (b.less_than - le).abs() < 1e-12)
        .map(|b| b.count)
        .unwrap_or_else(|| panic!("no bucket le={le} in {buckets:?}"))
}

async fn serve_metrics(telemetry: Telemetry) -> String {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let telemetry = telemetry.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE)],
                    telemetry.prometheus_text().unwrap_or_default(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/metrics")
}

#[tokio::test]
async fn metrics_scraped_as_prometheus_text_count_what_happened() {
    let (telemetry, _guard) = Telemetry::init(&config()).unwrap();
    let m = telemetry.metrics();

    for _ in 0..5 {
        m.request("tool/call", OK);
    }
    m.request("tool/call", "tool_error");
    m.request("tool/call", "tool_error");
    m.request("chain/req", OK);
    m.call(CallKind::Tool, "echo", OK, Duration::from_millis(3));
    m.call(CallKind::Tool, "echo", OK, Duration::from_millis(40));
    m.call(CallKind::Tool, "echo", "tool_error", Duration::from_secs(2));
    m.call(CallKind::Skill, "summarize", OK, Duration::from_millis(900));
    m.workflow(WorkflowKind::Chain, OK, Duration::from_millis(120));
    for _ in 0..3 {
        m.node("tool", OK, Duration::from_millis(1));
    }
    m.node("branch", OK, Duration::from_micros(100));
    for (input, output) in [(100, 20), (300, 50)] {
        m.model_call(&ModelCall {
            provider: "openai",
            request_model: "gpt-4o-mini",
            response_model: Some("gpt-4o-mini-2024-07-18"),
            error: None,
            duration: Duration::from_millis(300),
            usage: Some((input, output)),
        });
    }
    m.model_call(&ModelCall {
        provider: "anthropic",
        request_model: "claude-x",
        response_model: None,
        error: Some("timeout"),
        duration: Duration::from_secs(30),
        usage: None,
    });
    let stdio = m.session_opened("stdio");
    let ws = m.session_opened("ws");
    let ws2 = m.session_opened("ws");
    drop(ws2);
    let run = m.run_started("chain");
    {
        let _finished = m.run_started("skill");
    }
    m.mcp_server_up("files", true);
    m.mcp_server_up("git", true);
    m.mcp_server_up("git", false);
    m.memory_store(42, 65536);
    m.queue_depth("a2e.work", 7);
    for _ in 0..3 {
        m.redelivered("a2e.work");
    }

    let url = serve_metrics(telemetry.clone()).await;
    let client = a2e_http::ClientOptions::default().build().unwrap();
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.headers()["content-type"], PROMETHEUS_CONTENT_TYPE);
    let text = response.text().await.unwrap();
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();

    // Requests by type and outcome.
    let requests = |t: &str, o: &str| {
        one(
            &scrape,
            "a2e_requests_total",
            &[("a2e_request_type", t), ("a2e_outcome", o)],
        )
    };
    assert_eq!(requests("tool/call", "ok"), 5.0);
    assert_eq!(requests("tool/call", "tool_error"), 2.0);
    assert_eq!(requests("chain/req", "ok"), 1.0);

    // Call latency per tool and skill.
    let echo_ok = [
        ("a2e_call_kind", "tool"),
        ("a2e_call_name", "echo"),
        ("a2e_outcome", "ok"),
    ];
    let echo = buckets(&scrape, "a2e_call_duration_seconds", &echo_ok);
    assert_eq!(count_le(&echo, 0.0025), 0.0);
    assert_eq!(count_le(&echo, 0.005), 1.0);
    assert_eq!(count_le(&echo, 0.05), 2.0);
    assert_eq!(count_le(&echo, f64::INFINITY), 2.0);
    assert_eq!(
        one(&scrape, "a2e_call_duration_seconds_count", &echo_ok),
        2.0
    );
    let sum = one(&scrape, "a2e_call_duration_seconds_sum", &echo_ok);
    assert!((sum - 0.043).abs() < 1e-9, "{sum}");
    let failed = [("a2e_call_name", "echo"), ("a2e_outcome", "tool_error")];
    assert_eq!(
        one(&scrape, "a2e_call_duration_seconds_count", &failed),
        1.0
    );
    let skill = [("a2e_call_kind", "skill"), ("a2e_call_name", "summarize")];
    assert_eq!(one(&scrape, "a2e_call_duration_seconds_count", &skill), 1.0);

    // Chain and node durations.
    assert_eq!(
        one(
            &scrape,
            "a2e_workflow_duration_seconds_count",
            &[("a2e_workflow_kind", "chain")]
        ),
        1.0
    );
    assert_eq!(
        one(
            &scrape,
            "a2e_node_duration_seconds_count",
            &[("a2e_node_kind", "tool")]
        ),
        3.0
    );
    assert_eq!(
        one(
            &scrape,
            "a2e_node_duration_seconds_count",
            &[("a2e_node_kind", "branch")]
        ),
        1.0
    );

    // Tokens by provider and model, the GenAI names.
    let tokens = |kind: &str| {
        let labels = [
            ("gen_ai_provider_name", "openai"),
            ("gen_ai_request_model", "gpt-4o-mini"),
            ("gen_ai_response_model", "gpt-4o-mini-2024-07-18"),
            ("gen_ai_token_type", kind),
        ];
        (
            one(&scrape, "gen_ai_client_token_usage_sum", &labels),
            one(&scrape, "gen_ai_client_token_usage_count", &labels),
        )
    };
    assert_eq!(tokens("input"), (400.0, 2.0));
    assert_eq!(tokens("output"), (70.0, 2.0));
    let openai = [
        ("gen_ai_provider_name", "openai"),
        ("gen_ai_operation_name", "chat"),
    ];
    assert_eq!(
        one(
            &scrape,
            "gen_ai_client_operation_duration_seconds_count",
            &openai
        ),
        2.0
    );
    let failed_model = [
        ("gen_ai_provider_name", "anthropic"),
        ("error_type", "timeout"),
    ];
    assert_eq!(
        one(
            &scrape,
            "gen_ai_client_operation_duration_seconds_count",
            &failed_model
        ),
        1.0
    );
    assert!(
        find(
            &scrape,
            "gen_ai_client_token_usage_count",
            &[("gen_ai_provider_name", "anthropic")]
        )
        .is_empty()
    );

    // Gauges: sessions open, runs in flight, MCP servers up, memory, the cluster queue.
    assert_eq!(
        one(&scrape, "a2e_sessions_open", &[("a2e_transport", "stdio")]),
        1.0
    );
    assert_eq!(
        one(&scrape, "a2e_sessions_open", &[("a2e_transport", "ws")]),
        1.0
    );
    assert_eq!(
        one(&scrape, "a2e_runs_in_flight", &[("a2e_run_kind", "chain")]),
        1.0
    );
    assert_eq!(
        one(&scrape, "a2e_runs_in_flight", &[("a2e_run_kind", "skill")]),
        0.0
    );
    let up: HashMap<&str, f64> = ["files", "git"]
        .into_iter()
        .map(|s| {
            (
                s,
                one(&scrape, "a2e_mcp_server_up_ratio", &[("a2e_mcp_server", s)]),
            )
        })
        .collect();
    assert_eq!(up, HashMap::from([("files", 1.0), ("git", 0.0)]));
    assert_eq!(one(&scrape, "a2e_memory_entries", &[]), 42.0);
    assert_eq!(one(&scrape, "a2e_memory_size_bytes", &[]), 65536.0);
    assert_eq!(
        one(
            &scrape,
            "a2e_cluster_queue_depth",
            &[("a2e_cluster_queue", "a2e.work")]
        ),
        7.0
    );
    assert_eq!(
        one(
            &scrape,
            "a2e_cluster_redeliveries_total",
            &[("a2e_cluster_queue", "a2e.work")]
        ),
        3.0
    );
    // The service is named.
    assert_eq!(one(&scrape, "target_info", &[("service_name", "a2e")]), 1.0);

    // Closing the sessions and finishing the run shows on the next scrape.
    drop((stdio, ws, run));
    let text = telemetry.prometheus_text().unwrap();
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    assert_eq!(
        one(&scrape, "a2e_sessions_open", &[("a2e_transport", "stdio")]),
        0.0
    );
    assert_eq!(
        one(&scrape, "a2e_runs_in_flight", &[("a2e_run_kind", "chain")]),
        0.0
    );
}

#[test]
fn off_has_no_metrics_text() {
    let (telemetry, _guard) = Telemetry::init(&TelemetryConfig::default()).unwrap();
    telemetry.metrics().request("tool/call", OK);
    assert!(telemetry.prometheus_text().is_none());
}
