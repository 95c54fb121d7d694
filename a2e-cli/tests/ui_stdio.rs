//! The live view of `a2e serve --stdio --http ADDR` with `[journal]` off and
//! telemetry on, over the real binary: the stdio session is listed (agent,
//! transport `stdio`, calls in flight), its chain's run is kept in memory
//! and drawn, and a node's detail holds the input it was called with
//! (resolved from its `input_map`) and its call's own span, which the
//! exported trace has.

use crate::otlp_support;

use std::process::Command;
use std::time::{Duration, Instant};

use conformance::child::HostProcess;
use otlp_support::{hex, receiver, wait_for};
use serde_json::{Value, json};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` as JSON, once the listener answers (within 20 s).
async fn get(client: &reqwest::Client, base: &str, path: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match client.get(format!("{base}{path}")).send().await {
            Ok(r) => {
                assert!(r.status().is_success(), "{path}: {}", r.status());
                return serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
            }
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{path}: the listener did not come up: {e}"),
        }
    }
}

/// Polls the overview until `ready` holds for it (within 20 s).
async fn overview_until(
    client: &reqwest::Client,
    base: &str,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let o = get(client, base, "/ui/api/overview").await;
        if ready(&o) {
            return o;
        }
        assert!(Instant::now() < deadline, "not seen within 20 s: {o}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn is_hex(v: &Value, len: usize) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn the_stdio_session_and_its_run_in_the_live_view_with_the_journal_off() {
    let (endpoint, got, _receiver) = receiver();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("hello.txt"), "hello live view\n").unwrap();
    std::fs::write(root.path().join("name.txt"), "hello.txt").unwrap();
    let config = root.path().join("a2e.toml");
    std::fs::write(&config, "[journal]\nenabled = false\n").unwrap();
    let base = format!("http://127.0.0.1:{}", free_port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args([
        "serve",
        "--stdio",
        "--http",
        base.trim_start_matches("http://"),
    ])
    .arg("--config")
    .arg(&config)
    .arg("--root")
    .arg(root.path())
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
    .env("OTEL_SERVICE_NAME", "a2e-ui-stdio");
    let mut host = HostProcess::spawn(cmd).unwrap();
    host.send(br#"{"type":"handshake/req","id":"hs","agent_id":"stdio-agent"}"#)
        .unwrap();
    let (hs, _) = host.answer("hs", Duration::from_secs(20), |_| {}).unwrap();
    assert_eq!(hs["ok"], true, "{hs}");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = a2e_http::ClientOptions::default().build().unwrap();
    // The stdio session, listed beside the listener's own.
    let o = runtime.block_on(overview_until(&client, &base, |o| {
        o["sessions"].as_array().is_some_and(|s| {
            s.iter()
                .any(|s| s["transport"] == "stdio" && s["agent"] == "stdio-agent")
        })
    }));
    assert_eq!(o["journal"], true, "{o}");
    assert_eq!(o["journal_memory"], true, "{o}");
    let session = o["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["transport"] == "stdio")
        .unwrap();
    assert_eq!(session["in_flight"], 0, "{session}");

    // `b` reads the file `a` names: its path comes from its `input_map`.
    let chain = json!({
        "type": "chain/req", "id": "c1", "chain_id": "live-stdio", "streaming": false,
        "entry_node": "a",
        "nodes": [
            {"node_id": "a", "kind": "tool", "name": "read_file",
             "input": {"path": "name.txt"}, "next_node": "b"},
            {"node_id": "b", "kind": "tool", "name": "read_file",
             "input_map": {"path": "a.output.content"}}
        ]
    });
    host.send(chain.to_string().as_bytes()).unwrap();
    let (resp, _) = host.answer("c1", Duration::from_secs(20), |_| {}).unwrap();
    assert_eq!(resp["success"], true, "{resp}");

    let (run, detail) = runtime.block_on(async {
        let o = overview_until(&client, &base, |o| {
            o["runs"].as_array().is_some_and(|r| {
                r.iter()
                    .any(|r| r["agent"] == "stdio-agent" && r["status"] == "succeeded")
            })
        })
        .await;
        let run = o["runs"][0]["run_id"].as_str().unwrap().to_owned();
        let detail = get(&client, &base, &format!("/ui/api/runs/{run}")).await;
        (run, detail)
    });
    assert_eq!(detail["chain_id"], "live-stdio", "{detail}");
    assert!(detail["svg"].as_str().is_some_and(|s| s.contains("<svg")));
    assert_eq!(detail["states"]["b"]["state"], "done", "{detail}");
    let records = detail["records"].as_array().unwrap();
    let b = records.iter().find(|r| r["node_id"] == "b").unwrap();
    assert_eq!(b["start"]["input"], json!({"path": "hello.txt"}), "{b}");
    assert!(is_hex(&b["start"]["trace_id"], 32), "{b}");
    assert!(is_hex(&b["start"]["span_id"], 16), "{b}");
    let span_id = b["start"]["span_id"].as_str().unwrap().to_owned();
    let a = records.iter().find(|r| r["node_id"] == "a").unwrap();
    assert_ne!(a["start"]["span_id"], b["start"]["span_id"], "{a}");

    // stdin ends: the session, the listener and the process end with it.
    host.close_stdin();
    assert!(
        host.wait_exit(Duration::from_secs(20)).is_some(),
        "the host exits when stdin closes"
    );
    // The span of `b`'s call is the exported one with that id, in the
    // node's trace, and it is a call of `read_file`.
    let exported = wait_for(&got, Duration::from_secs(10), |r| {
        r.spans.iter().any(|s| hex(&s.span_id) == span_id)
    });
    assert!(exported, "no exported span {span_id} (run {run})");
    let got = got.lock().unwrap();
    let span = got
        .spans
        .iter()
        .find(|s| hex(&s.span_id) == span_id)
        .unwrap();
    assert_eq!(
        hex(&span.trace_id),
        b["start"]["trace_id"].as_str().unwrap()
    );
    assert!(span.name.contains("read_file"), "{}", span.name);
}
