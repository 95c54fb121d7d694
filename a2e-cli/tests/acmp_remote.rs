//! ACMP Layer 1 between real `a2e` hosts on loopback: providers serving
//! `--acmp-ws`, a buyer running `a2e run` over them, and a direct Layer 1
//! connection for the provider's rules (idempotency, streaming, bad input).

use crate::acmp_support;

use std::time::{Duration, Instant};

use a2e_host::proc::pids_with_arg;
use acmp_dag::remote::Notice;
use acmp_support::{ProviderHost, buyer_config, buyer_run, capability, example_dag};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

const TOOL_STATS: &str = "tool = \"text_stats\"";

/// The pipeline's three capabilities split over two providers.
fn pipeline_providers() -> (ProviderHost, ProviderHost) {
    let left = ProviderHost::start(
        "left",
        &(capability("split_text", "tool = \"split_text\"", 0.001)
            + &capability("aggregate_stats", "skill = \"aggregate_stats\"", 0.002)),
        200,
        "",
    );
    let right = ProviderHost::start(
        "right",
        &capability("text_stats", TOOL_STATS, 0.001),
        200,
        "",
    );
    (left, right)
}

fn run_json(output: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn the_example_pipeline_runs_split_across_two_provider_hosts() {
    let (left, right) = pipeline_providers();
    let dir = tempfile::tempdir().unwrap();
    let config = buyer_config(dir.path(), &[&left, &right], "");
    let output = buyer_run(&config, &example_dag(), dir.path())
        .output()
        .unwrap();
    let out = run_json(&output);
    assert_eq!(out["status"], "completed", "{out}");
    let result = &out["result"]["task_aggregate"]["data"]["result"];
    assert_eq!(result["chunks"], 3, "{out}");
    let per_chunk: Vec<i64> = result["words_per_chunk"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(result["words"], per_chunk.iter().sum::<i64>());
    assert!(per_chunk.iter().all(|&w| w > 0));
    // Each task went to the host offering its capability.
    for task in ["task_split", "task_aggregate"] {
        assert!(left.logged(&["acmp/invoke", task]), "{:?}", left.log());
        assert!(!right.logged(&["acmp/invoke", task]));
    }
    for task in ["task_stats_a", "task_stats_b", "task_stats_c"] {
        assert!(right.logged(&["acmp/invoke", task]), "{:?}", right.log());
        assert!(!left.logged(&["acmp/invoke", task]));
    }
}

/// A DAG of one slow shell task (its `sleep` marked by `mark`).
fn slow_dag(dir: &std::path::Path, tasks: &[(&str, &str)], mark: &str) -> std::path::PathBuf {
    let tasks: Vec<Value> = tasks
        .iter()
        .map(|(id, cap)| {
            json!({"task_id": id, "capability": cap, "timeout_ms": 60000,
                   "input": {"type": "json", "data": {"argv": ["sh", "-c", format!("sleep {mark}; echo {id}")], "timeout": 60}}})
        })
        .collect();
    let dag = json!({"dag_id": "dag_slow", "tasks": tasks, "edges": []});
    let path = dir.join("slow.json");
    std::fs::write(&path, dag.to_string()).unwrap();
    path
}

fn shell(tag: &str, price: f64) -> String {
    capability(tag, "tool = \"run_command\"", price)
}

fn wait_gone(mark: &str) {
    let start = Instant::now();
    while !pids_with_arg(mark).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "processes with {mark} still run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

type Start = fn(&str, &str, u64, &str) -> ProviderHost;

/// A provider killed mid-task (over `start`'s transport): the task is retried
/// on the other with the same task id, and the killed one's `sleep` is gone.
fn killed_mid_task_is_retried(start: Start, mark: &str) {
    let mut first = start("first", &shell("shell", 0.001), 200, "");
    let second = start("second", &shell("shell", 0.002), 200, "");
    let dir = tempfile::tempdir().unwrap();
    let config = buyer_config(dir.path(), &[&first, &second], "");
    let dag = slow_dag(dir.path(), &[("task_slow", "shell")], mark);
    let buyer = buyer_run(&config, &dag, dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The cheaper provider gets it first; it dies while the task runs.
    first.wait_logged(&["acmp/invoke", "task_slow"], Duration::from_secs(30));
    first.kill();
    assert!(!first.is_running());
    let output = buyer.wait_with_output().unwrap();
    let out = run_json(&output);
    assert_eq!(out["status"], "completed", "{out}");
    assert!(
        second.logged(&["acmp/invoke", "task_slow"]),
        "{:?}",
        second.log()
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("retrying on another provider"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    wait_gone(mark);
}

/// A provider (over `start`'s transport) stopped with SIGSTOP sends no more
/// heartbeats: it is given up after about 3 intervals and the task retried.
fn silent_provider_is_given_up(start: Start, mark: &str) {
    let first = start("first", &shell("shell", 0.001), 200, "");
    let second = start("second", &shell("shell", 0.002), 200, "");
    let dir = tempfile::tempdir().unwrap();
    let config = buyer_config(dir.path(), &[&first, &second], "");
    let dag = slow_dag(dir.path(), &[("task_hb", "shell")], mark);
    let buyer = buyer_run(&config, &dag, dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    first.wait_logged(&["acmp/invoke", "task_hb"], Duration::from_secs(30));
    let stopped = Instant::now();
    first.signal(Signal::SIGSTOP);
    let output = buyer.wait_with_output().unwrap();
    let out = run_json(&output);
    assert_eq!(out["status"], "completed", "{out}");
    assert!(second.logged(&["acmp/invoke", "task_hb"]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("liveness lost"), "{stderr}");
    // Given up after about 3 intervals (600 ms), not at the 60 s deadline.
    assert!(stopped.elapsed() < Duration::from_secs(20));
    drop(first);
    wait_gone(mark);
}

#[test]
fn a_provider_killed_mid_task_is_retried_on_another_with_the_same_task_id() {
    killed_mid_task_is_retried(ProviderHost::start, "2.0731");
}

#[test]
fn an_mcp_http_provider_killed_mid_task_is_retried_on_another() {
    killed_mid_task_is_retried(ProviderHost::start_mcp_http, "2.0733");
}

#[test]
fn a_provider_that_stops_sending_heartbeats_is_given_up_and_the_task_retried() {
    silent_provider_is_given_up(ProviderHost::start, "2.0743");
}

#[test]
fn an_mcp_http_provider_that_stops_sending_heartbeats_is_given_up() {
    silent_provider_is_given_up(ProviderHost::start_mcp_http, "2.0745");
}

#[test]
fn cancelling_the_buyers_run_cancels_the_tasks_on_every_provider() {
    let mark = "30.0757";
    let a = ProviderHost::start("a", &shell("shell-a", 0.001), 200, "");
    let b = ProviderHost::start("b", &shell("shell-b", 0.001), 200, "");
    let dir = tempfile::tempdir().unwrap();
    let config = buyer_config(dir.path(), &[&a, &b], "");
    let dag = slow_dag(
        dir.path(),
        &[("task_a", "shell-a"), ("task_b", "shell-b")],
        mark,
    );
    let buyer = buyer_run(&config, &dag, dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    a.wait_logged(&["acmp/invoke", "task_a"], Duration::from_secs(30));
    b.wait_logged(&["acmp/invoke", "task_b"], Duration::from_secs(30));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(buyer.id() as i32),
        Signal::SIGINT,
    );
    let output = buyer.wait_with_output().unwrap();
    assert!(!output.status.success());
    a.wait_logged(
        &["acmp/cancel", "task_a", "running=true"],
        Duration::from_secs(10),
    );
    b.wait_logged(
        &["acmp/cancel", "task_b", "running=true"],
        Duration::from_secs(10),
    );
    wait_gone(mark);
}

#[test]
fn a_dag_over_budget_is_refused_before_any_call() {
    let (left, right) = pipeline_providers();
    let dir = tempfile::tempdir().unwrap();
    let config = buyer_config(dir.path(), &[&left, &right], "budget_cu = 0.004");
    let output = buyer_run(&config, &example_dag(), dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("budget exceeded"), "{stderr}");
    assert!(!left.logged(&["acmp/invoke"]) && !right.logged(&["acmp/invoke"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_task_id_during_and_after_the_run_gets_the_one_outcome() {
    let p = ProviderHost::start("dup", &shell("shell", 0.001), 200, "");
    let conn = p.connect().await;
    let script = "sleep 1.0771; echo done";
    let invoke = json!({"task_id": "task_dup", "capability": "shell",
        "input": {"type": "json", "data": {"argv": ["sh", "-c", script], "timeout": 30}}});
    let (one, two) = tokio::join!(conn.request("acmp/invoke", invoke.clone()), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        conn.request("acmp/invoke", invoke.clone()).await
    });
    let (one, two) = (one.unwrap(), two.unwrap());
    assert_eq!(one, two);
    assert_eq!(one["task_id"], "task_dup");
    assert_eq!(one["cost_cu"], 0.001);
    assert!(one["tokens_used"].as_u64().unwrap() > 0);
    assert_eq!(one["provider_id"], "agent:dup:local");
    let three = conn.request("acmp/invoke", invoke).await.unwrap();
    assert_eq!(three, one);
    // It ran once: one invoke logged.
    let runs = p
        .log()
        .iter()
        .filter(|l| l.contains("acmp/invoke") && l.contains("task_dup"))
        .count();
    assert_eq!(runs, 1, "{:?}", p.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_chunks_in_any_order_and_a_streamed_output_with_its_proof() {
    let p = ProviderHost::start(
        "stream",
        &capability("text_stats", TOOL_STATS, 0.0001),
        200,
        "",
    );
    let conn = p.connect().await;
    let mut notices = conn.route("task_stream");
    let invoke = json!({"task_id": "task_stream", "capability": "text_stats",
        "input_stream": true, "stream": true, "proof_method": "result-hash",
        "max_price_cu": 0.01});
    let answer = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("acmp/invoke", invoke).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (seq, text, last) in [
        (1, "three four. ", false),
        (0, "one two. ", false),
        (2, "five.", true),
    ] {
        conn.notify(
            "acmp/inputChunk",
            json!({"task_id": "task_stream", "seq": seq,
            "chunk": {"type": "text", "data": text}, "final": last}),
        );
    }
    let result = answer.await.unwrap().unwrap();
    assert_eq!(result["output_streamed"], true, "{result}");
    assert!(result.get("output").is_none());
    assert!(
        result["proof"]["hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let mut chunks = Vec::new();
    while let Ok(n) = notices.try_recv() {
        if let Notice::Chunk(c) = n {
            chunks.push(c);
        }
    }
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    assert!(chunks[0].is_final);
    assert_eq!(chunks[0].seq, 0);
    assert_eq!(chunks[0].chunk.data["words"], 5, "{:?}", chunks[0]);
    assert_eq!(chunks[0].chunk.data["sentences"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_on_every_method_gets_its_error_and_the_provider_keeps_serving() {
    let p = ProviderHost::start(
        "strict",
        &capability("text_stats", TOOL_STATS, 0.01),
        200,
        "output_streaming = false\nmax_payload_bytes = 1048576",
    );
    let conn = p.connect().await;
    let text = json!({"type": "text", "data": "a b"});
    let field = |e: &acmp_dag::AcmpError| {
        e.data
            .as_ref()
            .map(|d| (d.task_id.clone(), d.extra.get("field").cloned()))
    };
    // Missing task_id, wrong types, missing input.
    let e = conn
        .request(
            "acmp/invoke",
            json!({"capability": "text_stats", "input": text}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (e.code.0, field(&e)),
        (-32602, Some((String::new(), Some(json!("task_id")))))
    );
    let e = conn
        .request(
            "acmp/invoke",
            json!({"task_id": "t1", "capability": 7, "input": text}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (e.code.0, field(&e)),
        (-32602, Some(("t1".into(), Some(json!("capability")))))
    );
    let e = conn
        .request("acmp/invoke", json!({"task_id": "t2", "capability": "text_stats", "input": text, "timeout_ms": "soon"}))
        .await
        .unwrap_err();
    assert_eq!(field(&e), Some(("t2".into(), Some(json!("timeout_ms")))));
    let e = conn
        .request(
            "acmp/invoke",
            json!({"task_id": "t3", "capability": "text_stats"}),
        )
        .await
        .unwrap_err();
    assert_eq!(field(&e), Some(("t3".into(), Some(json!("input")))));
    // Unknown capability, budget, a stream not advertised, an unknown proof.
    let e = conn
        .request(
            "acmp/invoke",
            json!({"task_id": "t4", "capability": "nope", "input": text}),
        )
        .await
        .unwrap_err();
    assert_eq!((e.code.0, e.data.unwrap().task_id), (-33002, "t4".into()));
    let e = conn
        .request("acmp/invoke", json!({"task_id": "t5", "capability": "text_stats", "input": text, "max_price_cu": 0.001}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -33001);
    assert_eq!(e.data.unwrap().extra["min_price_cu"], 0.01);
    let e = conn
        .request(
            "acmp/invoke",
            json!({"task_id": "t6", "capability": "text_stats", "input": text, "stream": true}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -33007);
    assert_eq!(e.data.unwrap().extra["feature"], "output_streaming");
    let e = conn
        .request("acmp/invoke", json!({"task_id": "t7", "capability": "text_stats", "input": text, "proof_method": "tee"}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -33006);
    // Input chunks: a seq gap, a 10 MiB chunk, a chunk for no task, wrong types.
    for (task, chunk, want) in [
        (
            "t8",
            json!({"seq": 100, "chunk": text, "final": false}),
            "seq",
        ),
        (
            "t9",
            json!({"seq": 0, "chunk": {"type": "text", "data": "x".repeat(10 << 20)}, "final": true}),
            "chunk",
        ),
    ] {
        let answer = tokio::spawn({
            let conn = conn.clone();
            async move {
                conn.request(
                    "acmp/invoke",
                    json!({"task_id": task, "capability": "text_stats", "input_stream": true}),
                )
                .await
            }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut params = chunk;
        params["task_id"] = json!(task);
        conn.notify("acmp/inputChunk", params);
        let e = answer.await.unwrap().unwrap_err();
        assert_eq!(
            (e.code.0, field(&e)),
            (-32602, Some((task.to_owned(), Some(json!(want))))),
            "{e}"
        );
    }
    let e = conn
        .request(
            "acmp/inputChunk",
            json!({"task_id": "ghost", "seq": 0, "chunk": text, "final": true}),
        )
        .await
        .unwrap_err();
    assert_eq!(field(&e), Some(("ghost".into(), Some(json!("task_id")))));
    let e = conn
        .request(
            "acmp/inputChunk",
            json!({"task_id": "t10", "seq": -1, "chunk": text, "final": true}),
        )
        .await
        .unwrap_err();
    assert_eq!(field(&e), Some(("t10".into(), Some(json!("seq")))));
    // Cancel without a task id; an unknown method.
    let e = conn
        .request("acmp/cancel", json!({"reason": "x"}))
        .await
        .unwrap_err();
    assert_eq!(field(&e), Some((String::new(), Some(json!("task_id")))));
    let e = conn
        .request("acmp/nope", json!({"task_id": "t11"}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32601);
    // Still serving.
    let ok = conn
        .request(
            "acmp/invoke",
            json!({"task_id": "t12", "capability": "text_stats", "input": text}),
        )
        .await
        .unwrap();
    assert_eq!(ok["output"]["data"]["words"], 2, "{ok}");
    // A wrong token is refused at the upgrade.
    let wrong = a2e_host::acmp::ws::WsConnector::new(&p.url, Some("wrong".into()));
    assert!(acmp_dag::remote::Connector::connect(&wrong).await.is_err());
}

#[test]
fn a_streaming_edge_forwards_chunks_from_one_provider_host_to_another() {
    let (left, right) = pipeline_providers();
    let dir = tempfile::tempdir().unwrap();
    let config = buyer_config(dir.path(), &[&left, &right], "");
    let dag = json!({"dag_id": "dag_stream", "tasks": [
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
