//! Telemetry of a cluster over the real binary: nats-server (JetStream on a
//! free loopback port) and `a2e serve` hosts sharing one root.
//!
//! - A coordinator that runs no nodes and a worker, both exporting OTLP to a
//!   receiver in this test: a chain of two nodes run on the worker is one
//!   trace. The coordinator's `send {toolkit}` span of each node hangs under
//!   its chain span; the worker's `execute_tool` span of the node hangs under
//!   that span, through the work message's `traceparent` header.
//! - `/metrics` of two workers: while the first runs a node that sleeps, two
//!   more nodes wait (`a2e_cluster_queue_depth` 2); the first is killed, the
//!   second gets its node again (`a2e_cluster_redeliveries_total` 1) and the
//!   queue empties (depth 0).

use crate::cluster_support;
use crate::otlp_support;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use a2e_host::proc::pids_with_arg;
use cluster_support::nats_server::NatsServer;
use cluster_support::{chain_named as chain, handshake, kill_marked};
use conformance::child::HostProcess;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use otlp_support::{attr, named, receiver, wait_for};
use serde_json::Value;

/// One test at a time: each starts a server and several hosts.
static SERIAL: Mutex<()> = Mutex::new(());

const TOKEN: &str = "cluster-metrics-token";

/// A host of the cluster at `nats`, serving `serve` (a TOML list), its
/// stderr appended to `log`; `extra` goes at the top of its configuration.
fn host_command(
    nats: &NatsServer,
    dir: &Path,
    root: &Path,
    name: &str,
    serve: &str,
    workers: u32,
    extra: &str,
) -> Command {
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "{extra}\n[cluster]\nnats_url = \"{}\"\nname = \"{name}\"\nserve = {serve}\n\
             workers = {workers}\nlease_ttl_secs = 2\nack_wait_secs = 2\nmax_deliver = 5\n",
            nats.url()
        ),
    )
    .unwrap();
    let log = dir.join(format!("{name}.log"));
    let mut cmd = Command::new("sh");
    cmd.env("A2E_LOG", "info")
        .arg("-c")
        .arg(format!("exec \"$0\" \"$@\" 2>>'{}'", log.display()))
        .arg(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--allow-command", "sh", "--config"])
        .arg(&config)
        .arg("--root")
        .arg(root);
    cmd
}

/// Every host's log, for a failed assertion.
fn logs(dir: &Path) -> String {
    let mut out = String::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if entry.path().extension().is_some_and(|e| e == "log") {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            out.push_str(&format!("--- {}\n", entry.file_name().to_string_lossy()));
            for line in tail.into_iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

fn span_by_node<'a>(spans: &[&'a Span], node: &str) -> &'a Span {
    spans
        .iter()
        .find(|s| attr(&s.attributes, "a2e.node.id").as_deref() == Some(node))
        .unwrap_or_else(|| panic!("no span of node {node}"))
}

#[test]
fn a_chain_run_across_hosts_is_one_trace() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let (endpoint, got, _runtime) = receiver();
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let traced = |name: &str, serve: &str, service: &str| {
        let mut cmd = host_command(&nats, dir.path(), root.path(), name, serve, 1, "");
        cmd.arg("--stdio")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env("OTEL_SERVICE_NAME", service)
            .env("OTEL_BSP_SCHEDULE_DELAY", "20");
        let mut host = HostProcess::spawn(cmd).unwrap();
        handshake(&mut host, "cluster-agent");
        host
    };
    let mut coordinator = traced("coord", "[]", "a2e-coordinator");
    let mut worker = traced("worker", "[\"*\"]", "a2e-worker");

    let req = chain(
        "run-t",
        "spread",
        &[
            ("a", "echo a >> effects".into()),
            ("b", "echo b >> effects".into()),
        ],
    );
    coordinator.send(req.to_string().as_bytes()).unwrap();
    let (answer, _) = coordinator
        .answer("run-t", Duration::from_secs(30), |_| {})
        .unwrap_or_else(|e| panic!("{e}\n{}", logs(dir.path())));
    assert_eq!(answer["success"], true, "{answer}\n{}", logs(dir.path()));
    let effects = std::fs::read_to_string(root.path().join("effects")).unwrap();
    assert_eq!(effects, "a\nb\n");
    // Both hosts exit (their last spans flushed).
    for host in [&mut coordinator, &mut worker] {
        host.close_stdin();
        assert!(host.wait_exit(Duration::from_secs(15)).is_some());
    }
    assert!(
        wait_for(&got, Duration::from_secs(10), |r| {
            named(&r.spans, "execute_tool run_command").len() == 2
                && r.spans
                    .iter()
                    .filter(|s| s.name.starts_with("send "))
                    .count()
                    == 2
                && !named(&r.spans, "invoke_workflow").is_empty()
        }),
        "spans did not arrive: {:?}",
        got.lock()
            .unwrap()
            .spans
            .iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
    );
    let got = got.lock().unwrap();
    let spans = &got.spans;
    let workflows = named(spans, "invoke_workflow");
    assert_eq!(workflows.len(), 1);
    let workflow = workflows[0];
    assert_eq!(
        attr(&workflow.attributes, "a2e.chain.id").as_deref(),
        Some("spread")
    );
    let sends: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("send "))
        .collect();
    let calls = named(spans, "execute_tool run_command");
    for node in ["a", "b"] {
        // The coordinator's span of the node: under its chain span.
        let send = span_by_node(&sends, node);
        assert_eq!(send.trace_id, workflow.trace_id, "{node}");
        assert_eq!(send.parent_span_id, workflow.span_id, "{node}");
        assert_eq!(send.kind, SpanKind::Producer as i32);
        let queue = attr(&send.attributes, "a2e.cluster.queue").unwrap();
        assert_eq!(send.name, format!("send {queue}"));
        assert_eq!(
            attr(&send.attributes, "messaging.system").as_deref(),
            Some("nats")
        );
        assert_eq!(
            attr(&send.attributes, "a2e.chain.id").as_deref(),
            Some("spread")
        );
        // The worker's call: the same trace, under the coordinator's span.
        let call = span_by_node(&calls, node);
        assert_eq!(call.trace_id, workflow.trace_id, "{node}");
        assert_eq!(call.parent_span_id, send.span_id, "{node}");
        assert_eq!(
            attr(&call.attributes, "a2e.chain.id").as_deref(),
            Some("spread")
        );
        // It ran in the worker's session of the node, not the coordinator's.
        let session = attr(&call.attributes, "a2e.session.id").unwrap();
        assert!(session.starts_with("work-"), "{session}");
        assert!(call.start_time_unix_nano >= send.start_time_unix_nano);
        assert!(call.end_time_unix_nano <= send.end_time_unix_nano);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A worker serving every toolkit with `workers` loops and `/metrics` on an
/// HTTP listener; its address.
fn metered_worker(
    nats: &NatsServer,
    dir: &Path,
    root: &Path,
    name: &str,
    workers: u32,
) -> (HostProcess, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let extra = format!(
        "auth_token = \"{TOKEN}\"\n[telemetry]\nenabled = true\n\
         traces_exporter = \"none\"\nmetrics_exporter = \"none\"\n"
    );
    let mut cmd = host_command(nats, dir, root, name, "[\"*\"]", workers, &extra);
    cmd.args(["--http", &addr]);
    (HostProcess::spawn(cmd).unwrap(), format!("http://{addr}"))
}

/// The samples of one scrape of `base`'s `/metrics`; `None` until the
/// listener answers.
async fn scrape(client: &reqwest::Client, base: &str) -> Option<prometheus_parse::Scrape> {
    let resp = client
        .get(format!("{base}/metrics"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .ok()?;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.ok()?;
    Some(prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap())
}

/// The value of `metric` for the `builtin` queue.
fn builtin(scrape: &prometheus_parse::Scrape, metric: &str) -> Option<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .find(|s| s.labels.get("a2e_cluster_queue") == Some("builtin"))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

/// Scrapes `base` until `ready` holds for the scrape (within `within`).
async fn scrape_until(
    client: &reqwest::Client,
    base: &str,
    within: Duration,
    ready: impl Fn(&prometheus_parse::Scrape) -> bool,
) -> Result<prometheus_parse::Scrape, String> {
    let end = Instant::now() + within;
    let mut last = None;
    while Instant::now() < end {
        if let Some(s) = scrape(client, base).await {
            if ready(&s) {
                return Ok(s);
            }
            last = Some(s);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!(
        "depth {:?}, redeliveries {:?}",
        last.as_ref()
            .and_then(|s| builtin(s, "a2e_cluster_queue_depth")),
        last.as_ref()
            .and_then(|s| builtin(s, "a2e_cluster_redeliveries_total")),
    ))
}

#[test]
fn queue_depth_and_redeliveries_on_metrics() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    const MARK: &str = "30.0711";
    let mut cmd = host_command(&nats, d, root.path(), "coord", "[]", 1, "");
    cmd.arg("--stdio");
    let mut coordinator = HostProcess::spawn(cmd).unwrap();
    handshake(&mut coordinator, "cluster-agent");
    // One worker loop: while it runs `slow`, the other nodes wait.
    let (first, first_url) = metered_worker(&nats, d, root.path(), "first", 1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = a2e_http::ClientOptions::default().build().unwrap();
    runtime
        .block_on(scrape_until(
            &client,
            &first_url,
            Duration::from_secs(20),
            |s| builtin(s, "a2e_cluster_queue_depth") == Some(0.0),
        ))
        .unwrap_or_else(|e| panic!("{e}\n{}", logs(d)));

    let slow = format!(
        "echo slow >> effects; if [ ! -e slow.slept ]; then touch slow.slept; exec sleep {MARK}; fi"
    );
    let req = chain("m1", "slow", &[("slow", slow)]);
    coordinator.send(req.to_string().as_bytes()).unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while pids_with_arg(MARK).is_empty() {
        assert!(Instant::now() < end, "slow never ran\n{}", logs(d));
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in 2..=3 {
        let req = chain(
            &format!("m{i}"),
            "quick",
            &[("quick", format!("echo q{i} >> effects"))],
        );
        coordinator.send(req.to_string().as_bytes()).unwrap();
    }
    runtime
        .block_on(scrape_until(
            &client,
            &first_url,
            Duration::from_secs(10),
            |s| builtin(s, "a2e_cluster_queue_depth") == Some(2.0),
        ))
        .unwrap_or_else(|e| panic!("two nodes wait: {e}\n{}", logs(d)));

    // A second worker; the first dies with its node, which the second gets
    // again after ack_wait.
    let (second, second_url) = metered_worker(&nats, d, root.path(), "second", 2);
    drop(first); // SIGKILL
    kill_marked(MARK);
    // The quick chains answer first, the slow one after its redelivery.
    let mut answered = Vec::new();
    let end = Instant::now() + Duration::from_secs(30);
    while answered.len() < 3 {
        assert!(Instant::now() < end, "answers: {answered:?}\n{}", logs(d));
        let Ok(line) = coordinator.recv_line(Duration::from_millis(100)) else {
            continue;
        };
        let msg: Value = serde_json::from_str(&line).unwrap();
        if msg["type"] == "chain/resp" {
            assert_eq!(msg["success"], true, "{msg}\n{}", logs(d));
            answered.push(msg["req_id"].as_str().unwrap().to_owned());
        }
    }
    answered.sort();
    assert_eq!(answered, ["m1", "m2", "m3"]);
    let mut effects: Vec<String> = std::fs::read_to_string(root.path().join("effects"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    effects.sort();
    assert_eq!(effects, ["q2", "q3", "slow", "slow"]);
    let scraped = runtime
        .block_on(scrape_until(
            &client,
            &second_url,
            Duration::from_secs(10),
            |s| {
                builtin(s, "a2e_cluster_queue_depth") == Some(0.0)
                    && builtin(s, "a2e_cluster_redeliveries_total").is_some()
            },
        ))
        .unwrap_or_else(|e| panic!("{e}\n{}", logs(d)));
    // One delivery after the first: the killed worker's node.
    assert_eq!(
        builtin(&scraped, "a2e_cluster_redeliveries_total"),
        Some(1.0),
        "{}",
        logs(d)
    );
    drop(second);
    coordinator.close_stdin();
}
