//! MCP tasks (`io.modelcontextprotocol/tasks`) as the host's durable runs,
//! against the example plugin set (its tools tagged `task`) with a run
//! journal under its root. The client is the official Rust SDK (rmcp), a
//! stateless 2026-07-28 client that declares the extension. A task runs
//! past its request and completes with its result inlined; a tool's own
//! failure completes with `isError`, a panic fails it; a task-only tool
//! that gathers its input and is given all of it is a task that ended in its
//! request; a cancel ends a
//! running task; a task that asks its user is `input_required` until
//! `tasks/update` answers; `a2e runs` lists tasks; and a task whose host is
//! killed is still answered by the host started again on the same journal:
//! failed, its host having stopped.

use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, TaskPayload,
    TaskStatus, UpdateTaskParams,
};
use rmcp::service::RunningService;
use serde_json::{Value, json};

use crate::mcp_conformance_support::{Server, everything_example, start};
use crate::mcp_tasks_support::{self as tasks_support, TaskClient};

/// A chain skill tagged `task`.
const READ_NOTES: &str = "---\nname: read_notes\ndescription: Read a file of notes\n\
    tags: [task]\ninput_schema:\n  type: object\n  properties: { path: { type: string } }\n  \
    required: [path]\n---\nReads the notes.\n\n```chain\n{\"entry_node\": \"read\", \"nodes\": \
    [{\"node_id\": \"read\", \"kind\": \"tool\", \"name\": \"read_file\", \
    \"input_map\": {\"path\": \"input.path\"}}]}\n```\n";

fn example(root: &std::path::Path) -> Server {
    let mut cmd = Command::new(everything_example());
    cmd.arg("--root").arg(root);
    start(cmd)
}

async fn connect(server: &Server) -> RunningService<RoleClient, TaskClient> {
    tasks_support::connect(&server.url).await
}

/// Starts `tool` with `args` as a task: its id.
async fn start_task(
    client: &RunningService<RoleClient, TaskClient>,
    tool: &str,
    args: Value,
) -> String {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap());
    match client.call_tool_once(params).await.unwrap() {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            assert!(created.task.ttl_ms.is_some_and(|t| t > 0));
            created.task.task_id
        }
        other => panic!("`{tool}` is a task: {other:?}"),
    }
}

/// Polls task `id` until it ends (at most 20 s): its payload.
async fn settled(client: &RunningService<RoleClient, TaskClient>, id: &str) -> TaskPayload {
    tasks_support::settled(client, id, Duration::from_secs(20)).await
}

fn text_of(result: &serde_json::Map<String, Value>) -> String {
    serde_json::to_string(&result["content"]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_runs_that_outlive_their_request_and_their_host() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("skills")).unwrap();
    std::fs::write(root.join("notes.md"), "Tides rise twice a day.\n").unwrap();
    std::fs::write(root.join("skills/read_notes.md"), READ_NOTES).unwrap();
    let server = example(root);
    let client = connect(&server).await;

    // A task completes, its result inlined; it is readable right away.
    let id = start_task(
        &client,
        "slow_compute",
        json!({"seconds": 0.3, "label": "a"}),
    )
    .await;
    let first = client.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert_eq!(first.task.task.task_id, id);
    let TaskPayload::Completed { result } = settled(&client, &id).await else {
        panic!("slow_compute completes")
    };
    assert!(text_of(&result).contains("computed a"), "{result:?}");
    assert_ne!(result.get("isError"), Some(&json!(true)), "{result:?}");

    // A tool's own failure completes the task, with isError.
    let id = start_task(&client, "failing_job", json!({})).await;
    let TaskPayload::Completed { result } = settled(&client, &id).await else {
        panic!("a tool error is a completed task")
    };
    assert_eq!(result.get("isError"), Some(&json!(true)), "{result:?}");

    // A panic fails the task, with a JSON-RPC error.
    let id = start_task(&client, "protocol_error_job", json!({})).await;
    let payload = settled(&client, &id).await;
    let TaskPayload::Failed { error } = payload else {
        panic!("a panic fails the task: {payload:?}")
    };
    assert_eq!(error["code"], -32603, "{error:?}");

    // A cancel ends a running task; a second one is acknowledged too.
    let id = start_task(
        &client,
        "slow_compute",
        json!({"seconds": 30, "label": "c"}),
    )
    .await;
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
    assert!(matches!(
        settled(&client, &id).await,
        TaskPayload::Cancelled
    ));
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();

    // A task that asks its user waits, input_required with the question,
    // until tasks/update answers it — also when it asks after the request
    // that started it has its answer (and its connection is gone).
    let args = json!({"filename": "x.txt", "delay_ms": 300});
    let id = start_task(&client, "confirm_delete", args).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let open = loop {
        let got = client.get_task(GetTaskParams::new(&id)).await.unwrap();
        if let TaskPayload::InputRequired { input_requests } = got.task.payload {
            break input_requests;
        }
        assert!(Instant::now() < deadline, "confirm_delete asks");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (key, question) = open.iter().next().unwrap();
    assert!(
        serde_json::to_string(question)
            .unwrap()
            .contains("Delete x.txt?")
    );
    let yes = json!({"action": "accept", "content": {"confirm": true}});
    let update = UpdateTaskParams::new(&id, [(key.clone(), yes)].into());
    client.update_task(update).await.unwrap();
    let TaskPayload::Completed { result } = settled(&client, &id).await else {
        panic!("the answered task completes")
    };
    assert!(text_of(&result).contains("deleted x.txt"), "{result:?}");

    // A task-only tool that gathers its input first, given all of it: it
    // asks nothing and ends in the request, still as a task (one that ended).
    let params = CallToolRequestParams::new("greet_task")
        .with_arguments(json!({"name": "Ada"}).as_object().cloned().unwrap());
    let created = match client.call_tool_once(params).await.unwrap() {
        CallToolResponse::Task(created) => created.task,
        other => panic!("greet_task is only a task: {other:?}"),
    };
    assert_eq!(created.status, TaskStatus::Completed, "{created:?}");
    let TaskPayload::Completed { result } = settled(&client, &created.task_id).await else {
        panic!("greet_task completed")
    };
    assert!(text_of(&result).contains("Hello, Ada!"), "{result:?}");

    // A skill tagged `task` runs as one too.
    let id = start_task(&client, "skill__read_notes", json!({"path": "notes.md"})).await;
    let TaskPayload::Completed { result } = settled(&client, &id).await else {
        panic!("the chain skill completes")
    };
    assert!(
        text_of(&result).contains("Tides rise twice a day."),
        "{result:?}"
    );

    // An unknown task is -32602.
    let err = client
        .get_task(GetTaskParams::new("no-such-task"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no task"), "{err}");

    // `a2e runs` lists the tasks.
    let listed = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["runs", "list", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(out.matches("mcp_task").count() >= 6, "{out}");

    // A task whose host is killed: the host started again answers for it.
    let id = start_task(
        &client,
        "slow_compute",
        json!({"seconds": 60, "label": "k"}),
    )
    .await;
    client.cancel().await.unwrap();
    drop(server); // SIGKILL to the host's process group
    let server = example(root);
    let client = connect(&server).await;
    let TaskPayload::Failed { error } = settled(&client, &id).await else {
        panic!("a task whose host stopped has failed")
    };
    assert!(
        error["message"].as_str().unwrap().contains("stopped"),
        "{error:?}"
    );
    client.cancel().await.unwrap();
}
