//! MCP tasks in a cluster (nats-server with JetStream on a free loopback
//! port, two `a2e serve --mcp-http` hosts sharing it): a task started on
//! one host is answered by the other (`tasks/get` reads the cluster's
//! journal), completes there with its result; a task that asks its user is
//! shown `input_required` by the other host, which takes the answer
//! (`tasks/update`) for the host running it; and a task whose host is
//! killed is ended by the host that takes its lease over, as failed, its
//! host having stopped. The client is rmcp, stateless at 2026-07-28, one
//! connection to each host.

use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetTaskParams, TaskPayload, UpdateTaskParams,
};
use rmcp::service::RunningService;

use crate::cluster_support::{Cluster, SERIAL};
use crate::mcp_conformance_support::{Server, start};
use crate::mcp_tasks_support::{TaskClient, WRITE_NOTE, connect, settled};

/// A chain skill `name` tagged `task` whose one node waits, then answers.
fn skill(name: &str, seconds: u32) -> String {
    format!(
        "---\nname: {name}\ndescription: Waits for the tide\ntags: [task]\n\
         input_schema:\n  type: object\n  properties: {{}}\n---\nWaits.\n\n```chain\n\
         {{\"entry_node\": \"wait\", \"nodes\": [{{\"node_id\": \"wait\", \"kind\": \"tool\", \
         \"name\": \"run_command\", \"input\": {{\"argv\": [\"sh\", \"-c\", \
         \"sleep {seconds}; echo tide-turned\"], \"timeout\": 120}}}}]}}\n```\n"
    )
}

/// Host `name` of `cluster` over MCP Streamable HTTP.
fn host(cluster: &Cluster, name: &str) -> Server {
    let config = cluster.logs.path().join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "[cluster]\nnats_url = \"{}\"\nname = \"{name}\"\nserve = [\"*\"]\nworkers = 2\n\
             lease_ttl_secs = 2\nack_wait_secs = 2\nmax_deliver = 3\n",
            cluster.nats.url()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args([
        "serve",
        "--mcp-http",
        "127.0.0.1:0",
        "--allow-command",
        "sh",
    ])
    .arg("--config")
    .arg(&config)
    .arg("--root")
    .arg(cluster.root.path());
    start(cmd)
}

async fn start_task(client: &RunningService<RoleClient, TaskClient>, skill: &str) -> String {
    let params =
        CallToolRequestParams::new(format!("skill__{skill}")).with_arguments(Default::default());
    match client.call_tool_once(params).await.unwrap() {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("{skill} is a task: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::await_holding_lock,
    reason = "the lock keeps the cluster tests of this binary one at a time, whole"
)]
async fn any_host_of_a_cluster_answers_for_a_task_and_ends_a_dead_hosts_task() {
    let _one = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let skills = cluster.root.path().join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(skills.join("turn_tide.md"), skill("turn_tide", 2)).unwrap();
    std::fs::write(skills.join("wait_long.md"), skill("wait_long", 60)).unwrap();
    std::fs::write(skills.join("write_note.md"), WRITE_NOTE).unwrap();
    let first = host(&cluster, "host1");
    let second = host(&cluster, "host2");
    let (on_first, on_second) = (connect(&first.url).await, connect(&second.url).await);

    // Started on one host, followed and finished on the other.
    let id = start_task(&on_first, "turn_tide").await;
    let seen = on_second.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert_eq!(seen.task.task.task_id, id, "the other host knows the task");
    let TaskPayload::Completed { result } = settled(&on_second, &id, Duration::from_secs(60)).await
    else {
        panic!("the task completes\n{}", cluster.logs())
    };
    let text = serde_json::to_string(&result["content"]).unwrap();
    assert!(text.contains("tide-turned"), "{result:?}");

    // It asks its user (its argument is missing): the other host shows the
    // question and takes the answer for the host that runs it.
    let id = start_task(&on_first, "write_note").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let open = loop {
        let got = on_second.get_task(GetTaskParams::new(&id)).await.unwrap();
        if let TaskPayload::InputRequired { input_requests } = got.task.payload {
            break input_requests;
        }
        assert!(
            Instant::now() < deadline,
            "the other host shows the question"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (key, question) = open.iter().next().unwrap();
    assert!(serde_json::to_string(question).unwrap().contains("topic"));
    let bad = serde_json::json!(42);
    let update = UpdateTaskParams::new(&id, [(key.clone(), bad)].into());
    on_second.update_task(update).await.unwrap();
    let still = on_second.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert!(
        matches!(still.task.payload, TaskPayload::InputRequired { .. }),
        "a number is no answer"
    );
    let yes = serde_json::json!({"action": "accept", "content": {"topic": "tides"}});
    let update = UpdateTaskParams::new(&id, [(key.clone(), yes)].into());
    on_second.update_task(update).await.unwrap();
    let TaskPayload::Completed { result } = settled(&on_second, &id, Duration::from_secs(60)).await
    else {
        panic!("the answered task completes\n{}", cluster.logs())
    };
    assert_ne!(
        result.get("isError"),
        Some(&serde_json::json!(true)),
        "{result:?}"
    );
    let note = std::fs::read_to_string(cluster.root.path().join("note.md")).unwrap();
    assert_eq!(note, "tides");

    // Its host killed while it runs: the other host ends it, failed.
    let id = start_task(&on_first, "wait_long").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(on_first);
    drop(first); // SIGKILL to the host's process group
    let TaskPayload::Failed { error } = settled(&on_second, &id, Duration::from_secs(60)).await
    else {
        panic!("a dead host's task fails\n{}", cluster.logs())
    };
    let message = error
        .get("message")
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    assert!(
        message.contains("stopped"),
        "the error says its host stopped: {error:?}"
    );
    let again = on_second.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert!(again.task.status().is_terminal());
}
