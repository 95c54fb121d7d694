//! Trace context across an A2A hop, over the real `a2e` binary twice and a
//! receiver in this test (the official OpenTelemetry protobuf
//! definitions): a host with `[[a2a.agents]]` calls a skill of another
//! host served with `serve --a2a`; the call sends its span's `traceparent`,
//! and the served host's `SendStreamingMessage` request span, and the skill
//! call under it, join the caller's trace under the calling span.

use crate::otlp_support;

use std::process::Command;
use std::time::Duration;

use conformance::child::HostProcess;
use otlp_support::{hex, named, receiver, wait_for};
use serde_json::json;

use crate::mcp_conformance_support::start;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_remote_agents_work_joins_the_callers_trace() {
    let (endpoint, got, _runtime) = receiver();
    let served_root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(served_root.path().join("skills")).unwrap();
    std::fs::write(
        served_root.path().join("skills/echo.md"),
        "---\nname: echo\ndescription: Answers with its arguments\n\
         command: [sh, -c, \"read -r args; echo \\\"{\\\\\\\"result\\\\\\\": $args}\\\"\"]\n---\nEchoes.\n",
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--a2a", "127.0.0.1:0", "--root"])
        .arg(served_root.path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "a2e-served")
        .env("OTEL_BSP_SCHEDULE_DELAY", "20");
    let served = start(cmd);

    let root = tempfile::tempdir().unwrap();
    let config = format!("[[a2a.agents]]\nname = \"far\"\nurl = {:?}\n", served.url);
    std::fs::write(root.path().join("a2e.toml"), config).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--root"])
        .arg(root.path())
        .arg("--config")
        .arg(root.path().join("a2e.toml"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "a2e-caller")
        .env("OTEL_BSP_SCHEDULE_DELAY", "20");
    let mut host = HostProcess::spawn(cmd).unwrap();
    host.send(br#"{"type":"handshake/req","id":"hs","agent_id":"hops"}"#)
        .unwrap();
    assert_eq!(host.answer("hs", WAIT, |_| {}).unwrap().0["ok"], true);
    let call = json!({"type": "skill/call/req", "id": "s1", "name": "far__echo",
        "arguments": {"word": "hi"},
        "traceparent": format!("00-{TRACE_ID}-00f067aa0ba902b7-01")});
    host.send(call.to_string().as_bytes()).unwrap();
    let answer = host.answer("s1", WAIT, |_| {}).unwrap().0;
    assert_eq!(answer["data"]["success"], true, "{answer}");
    assert_eq!(answer["data"]["data"]["word"], "hi", "{answer}");

    let arrived = wait_for(&got, WAIT, |r| {
        !named(&r.spans, "SendStreamingMessage").is_empty()
            && !named(&r.spans, "invoke_agent echo").is_empty()
    });
    host.close_stdin();
    assert!(host.wait_exit(WAIT).is_some());
    let arrived = arrived
        && wait_for(&got, WAIT, |r| {
            !named(&r.spans, "invoke_agent far__echo").is_empty()
        });
    let got = got.lock().unwrap();
    let names: Vec<&str> = got.spans.iter().map(|s| s.name.as_str()).collect();
    assert!(arrived, "spans: {names:?}");
    let one = |name: &str| {
        let found = named(&got.spans, name);
        assert_eq!(found.len(), 1, "{name} in {names:?}");
        found[0]
    };
    let calling = one("invoke_agent far__echo");
    let request = one("SendStreamingMessage");
    let skill = one("invoke_agent echo");
    for span in [calling, request, skill] {
        assert_eq!(hex(&span.trace_id), TRACE_ID, "{} in {names:?}", span.name);
    }
    assert_eq!(
        hex(&request.parent_span_id),
        hex(&calling.span_id),
        "the served request hangs under the calling span"
    );
}
