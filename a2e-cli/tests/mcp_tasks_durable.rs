//! An MCP task backed by a durable skill run of its own: an Ontheia skill
//! tagged `task`, called by a stateless 2026-07-28 client (rmcp) of `a2e
//! serve --mcp-http`, whose host is killed (SIGKILL) in the middle of the
//! document. Started again on the same root, the host resumes the skill's
//! run, and the task follows it: `tasks/get` answers with what the resumed
//! run ended with (the interrupted step, not idempotent, named in the
//! skill's error; the steps after it ran), not with a task failed because
//! its host stopped.

use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResponse, TaskPayload};
use serde_json::{Value, json};

use crate::durable_support::{effects, kill_marked};
use crate::mcp_conformance_support::{Server, start};
use crate::mcp_tasks_support::{connect, settled};

/// The mark of the step the host is killed in.
const MARK: &str = "30.0612";

/// An Ontheia skill tagged `task`: steps a, b, c append their id to
/// `effects`; b then sleeps (its host is killed there).
fn skill(root: &std::path::Path) {
    let steps: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|id| {
            let script = if *id == "b" {
                format!("echo b >> effects; exec sleep {MARK}")
            } else {
                format!("echo {id} >> effects")
            };
            json!({"id": id, "type": "tool", "server": "a2e", "tool": "run_command",
                   "args": {"argv": ["sh", "-c", script], "timeout": 120}})
        })
        .collect();
    let text = format!(
        "---\nname: three_steps\ndescription: Three steps with side effects\ntags: [task]\n---\n\
         Runs three steps.\n\n```ontheia\n{}\n```\n",
        json!({ "steps": steps })
    );
    std::fs::create_dir_all(root.join("skills")).unwrap();
    std::fs::write(root.join("skills/three_steps.md"), text).unwrap();
}

fn host(root: &std::path::Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args([
        "serve",
        "--mcp-http",
        "127.0.0.1:0",
        "--allow-command",
        "sh",
    ])
    .arg("--root")
    .arg(root);
    start(cmd)
}

/// Waits until `root/effects` has `n` lines.
async fn wait_effects(root: &std::path::Path, n: usize, what: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    while effects(root).len() < n {
        assert!(Instant::now() < end, "{what}: {:?}", effects(root));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_backed_by_a_durable_skill_run_ends_as_its_resumed_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    skill(root);
    let server = host(root);
    let client = connect(&server.url).await;
    let params = CallToolRequestParams::new("skill__three_steps")
        .with_arguments(json!({"input": "go"}).as_object().cloned().unwrap());
    let id = match client.call_tool_once(params).await.unwrap() {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("three_steps is a task: {other:?}"),
    };
    wait_effects(root, 2, "b never ran").await;
    client.cancel().await.unwrap();
    drop(server); // SIGKILL to the host's process group
    kill_marked(MARK);
    assert_eq!(effects(root), ["a", "b"]);

    // Started again: the skill's run resumes, and the task follows it.
    let server = host(root);
    let client = connect(&server.url).await;
    wait_effects(root, 3, "the skill's run did not resume").await;
    let payload = settled(&client, &id, Duration::from_secs(30)).await;
    let TaskPayload::Completed { result } = payload else {
        panic!("the task ends as its skill's run did: {payload:?}")
    };
    assert_eq!(result.get("isError"), Some(&json!(true)), "{result:?}");
    let text = serde_json::to_string(&result["content"]).unwrap();
    assert!(
        text.contains("b:") && text.contains("not idempotent"),
        "the resumed run's answer: {text}"
    );
    assert_eq!(effects(root), ["a", "b", "c"], "b was not run again");
    client.cancel().await.unwrap();
}
