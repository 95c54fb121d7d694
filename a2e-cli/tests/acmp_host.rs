//! ACMP DAGs on the host: the host provider serves tools and skills as
//! capabilities; the example pipeline; failures, cancellation and `a2e run`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2e_host::acmp::{HostProvider, arguments, run_dag};
use a2e_host::{Host, HostConfig};
use acmp_dag::{
    Dag, DagStatus, Edge, Invocation, InvokeParams, Payload, Provider, Task, TaskInput, TaskState,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn workspace() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace")
}

fn host_on(root: std::path::PathBuf, allow: &[&str]) -> Arc<Host> {
    let mut config = HostConfig {
        root,
        ..HostConfig::default()
    };
    config.commands.allow = allow.iter().map(|s| (*s).to_owned()).collect();
    a2e_host::skills::builder_with_skills(Host::builder(config).with_builtins())
        .build()
        .unwrap()
}

fn example_dag() -> Dag {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/dags/text-pipeline.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn inputs_map_to_arguments() {
    assert_eq!(arguments(Some(&Payload::json(json!({"a": 1}))))["a"], 1);
    assert_eq!(arguments(Some(&Payload::text("hi")))["text"], "hi");
    assert_eq!(
        arguments(Some(&Payload::json(json!([1, 2]))))["data"],
        json!([1, 2])
    );
    assert!(arguments(None).is_empty());
}

#[tokio::test]
async fn the_example_pipeline_splits_processes_in_parallel_and_aggregates() {
    let host = host_on(workspace(), &[]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let outcome = run_dag(
        &host,
        example_dag(),
        move |e| seen.lock().unwrap().push(e.clone()),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.status, DagStatus::Completed);
    let stats: Vec<i64> = ["task_stats_a", "task_stats_b", "task_stats_c"]
        .iter()
        .map(|t| outcome.output(t).unwrap().data["words"].as_i64().unwrap())
        .collect();
    let result = outcome.result();
    assert_eq!(result.len(), 1);
    let (leaf, payload) = result[0];
    assert_eq!(leaf, "task_aggregate");
    assert_eq!(payload.data["result"]["chunks"], 3);
    assert_eq!(payload.data["result"]["words"], stats.iter().sum::<i64>());
    assert_eq!(payload.data["result"]["words_per_chunk"], json!(stats));
    // Events: every task went pending → running → completed; seq is gapless.
    let events = events.lock().unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn unknown_capabilities_and_tool_failures_fail_their_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_on(dir.path().to_path_buf(), &[]);
    let dag = Dag::new("dag_bad")
        .with_task(Task::new(
            "task_read",
            "read_file",
            TaskInput::literal("json", json!({"path": "missing.txt"})),
        ))
        .with_task(Task::new(
            "task_nope",
            "no-such-capability",
            TaskInput::text("x"),
        ))
        .with_task(Task::new(
            "task_after",
            "text_stats",
            TaskInput::from_task_field("task_read", "data.content"),
        ))
        .with_edge(Edge::new("task_read", "task_after"));
    let outcome = run_dag(&host, dag, |_| {}, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.status, DagStatus::Failed);
    assert_eq!(outcome.state("task_read"), Some(TaskState::Failed));
    assert_eq!(outcome.state("task_after"), Some(TaskState::Cancelled));
    let err = outcome
        .task("task_nope")
        .unwrap()
        .error()
        .unwrap()
        .to_string();
    assert!(
        err.contains("-33002") || err.to_lowercase().contains("capability"),
        "{err}"
    );
}

#[tokio::test]
async fn provider_errors_carry_acmp_codes() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_on(dir.path().to_path_buf(), &[]);
    let provider = HostProvider::new(host, "");
    let task = Task::new(
        "task_x",
        "read_file",
        TaskInput::literal("json", json!({"path": "../etc/passwd"})),
    );
    let params =
        InvokeParams::for_task(&task, Some(Payload::json(json!({"path": "../etc/passwd"}))));
    let err = provider.invoke(Invocation::new(params)).await.unwrap_err();
    assert_eq!(err.code, acmp_dag::ErrorCode::INTERNAL);
    assert_eq!(
        err.data
            .as_ref()
            .and_then(|d| d.extra.get("code"))
            .and_then(Value::as_str),
        Some("tool_denied")
    );
}

#[tokio::test]
async fn cancelling_a_run_stops_its_processes() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_on(dir.path().to_path_buf(), &["sh"]);
    let dag = Dag::new("dag_slow").with_task(Task::new(
        "task_sleep",
        "run_command",
        TaskInput::literal(
            "json",
            json!({"argv": ["sh", "-c", "echo $$ > pid.txt; sleep 60 & wait"], "timeout": 120}),
        ),
    ));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let host = host.clone();
        let cancel = cancel.clone();
        async move { run_dag(&host, dag, |_| {}, &cancel).await }
    });
    let pid_file = dir.path().join("pid.txt");
    let end = Instant::now() + Duration::from_secs(10);
    let pid: u32 = loop {
        if let Some(p) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(Instant::now() < end, "the task never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    cancel.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while a2e_host::proc::pid_alive(pid) {
        assert!(
            Instant::now() < end,
            "process {pid} outlived its cancelled DAG"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a2e_run_accepts_dag_documents() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["run", "../dags/text-pipeline.json", "--root", "."])
        .current_dir(workspace())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "completed");
    assert_eq!(v["result"]["task_aggregate"]["data"]["result"]["chunks"], 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("done     task_split  "), "{stderr}");
    assert!(
        stderr.contains("DAG `dag_text_pipeline` completed: "),
        "{stderr}"
    );
}
