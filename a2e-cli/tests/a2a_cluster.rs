//! A2A tasks in a cluster (nats-server with JetStream on a free loopback
//! port, two `a2e serve --a2a` hosts sharing it): a task started on one
//! host is read on the other, completes there with its artifact; a task
//! still running on one host is cancelled from the other, whose answer is
//! the task cancelled (the host running it saw the cancel in the journal and
//! stopped its call); a task waiting for approval on one host is answered
//! on the other, and completes.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::a2a_durable::call;
use crate::cluster_support::{Cluster, SERIAL};
use crate::mcp_conformance_support::{Server, start};

/// The mark of the slow skill's process.
const MARK: &str = "60.0714";

/// Host `name` of `cluster`, serving A2A.
fn host(cluster: &Cluster, name: &str) -> Server {
    let config = cluster.logs.path().join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "[cluster]\nnats_url = \"{}\"\nname = \"{name}\"\nserve = [\"*\"]\nworkers = 2\n\
             lease_ttl_secs = 2\nack_wait_secs = 2\nmax_deliver = 3\n\n\
             [[approvals]]\nskill = \"guarded\"\n",
            cluster.nats.url()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--a2a", "127.0.0.1:0"])
        .arg("--config")
        .arg(&config)
        .arg("--root")
        .arg(cluster.root.path());
    start(cmd)
}

fn skill(root: &std::path::Path, name: &str, command: &str) {
    let skills = root.join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    let text = format!(
        "---\nname: {name}\ndescription: A program skill\ncommand: [sh, -c, \"{command}\"]\n\
         timeout_seconds: 300\n---\nRuns.\n"
    );
    std::fs::write(skills.join(format!("{name}.md")), text).unwrap();
}

fn message(id: &str, skill: &str) -> serde_json::Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"data": {"n": 1}}],
           "metadata": {"skill": skill}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::await_holding_lock,
    reason = "the lock keeps the cluster tests of this binary one at a time, whole"
)]
async fn a_task_started_on_one_host_is_read_cancelled_and_answered_on_another() {
    let _one = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let root = cluster.root.path();
    skill(
        root,
        "quick",
        r#"read -r args; echo '{\"result\": {\"done\": true}}'"#,
    );
    skill(root, "slow", &format!("read -r args; exec sleep {MARK}"));
    skill(
        root,
        "guarded",
        r#"read -r args; echo '{\"result\": {\"ran\": true}}'"#,
    );
    let first = host(&cluster, "host1");
    let second = host(&cluster, "host2");

    // Run to its end on the first host, read on the second.
    let sent = call(
        &first.url,
        "SendMessage",
        json!({"message": message("m-1", "quick")}),
    )
    .await
    .unwrap();
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        sent["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    let read = call(&second.url, "GetTask", json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(read["status"]["state"], "TASK_STATE_COMPLETED", "{read}");
    assert_eq!(
        read["artifacts"][0]["parts"][0]["data"]["done"], true,
        "{read}"
    );

    // Running on the first host, cancelled from the second.
    let sent = call(
        &first.url,
        "SendMessage",
        json!({"message": message("m-2", "slow"), "configuration": {"returnImmediately": true}}),
    )
    .await
    .unwrap();
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let read = call(&second.url, "GetTask", json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(read["status"]["state"], "TASK_STATE_WORKING", "{read}");
    let started = Instant::now();
    let cancelled = call(&second.url, "CancelTask", json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(
        cancelled["status"]["state"],
        "TASK_STATE_CANCELED",
        "{cancelled}\n{}",
        cluster.logs()
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let read = call(&first.url, "GetTask", json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(read["status"]["state"], "TASK_STATE_CANCELED", "{read}");
    let listed = call(
        &second.url,
        "ListTasks",
        json!({"status": "TASK_STATE_CANCELED"}),
    )
    .await
    .unwrap();
    assert_eq!(listed["tasks"][0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed["totalSize"], 1, "{listed}");

    // Waiting for approval on the first host, answered on the second.
    let sent = call(
        &first.url,
        "SendMessage",
        json!({"message": message("m-3", "guarded")}),
    )
    .await
    .unwrap();
    assert_eq!(
        sent["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );
    let task = &sent["task"];
    let answer = json!({"message": {"messageId": "m-4", "role": "ROLE_USER",
        "taskId": task["id"], "contextId": task["contextId"], "parts": [{"text": "approve"}]}});
    let answered = call(&second.url, "SendMessage", answer).await.unwrap();
    assert_eq!(
        answered["task"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{answered}\n{}",
        cluster.logs()
    );
    assert_eq!(
        answered["task"]["artifacts"][0]["parts"][0]["data"]["ran"], true,
        "{answered}"
    );
}
