//! An A2A task survives a SIGKILL of its host: the task is a run of the
//! journal, and the Ontheia skill it calls journals its own run, which backs
//! the task. Started again on the same root, the host resumes the skill's run
//! and the task ends as that run does — `GetTask` answers with it — instead
//! of failing because its host stopped. A2A over plain HTTP (JSON-RPC).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::durable_support::{effects, kill_marked};
use crate::mcp_conformance_support::{Server, start};

/// The mark of the step the host is killed in.
const MARK: &str = "30.0713";

/// An Ontheia skill: steps a, b, c append their id to `effects`; b then
/// sleeps (its host is killed there).
fn skill(root: &Path) {
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
        "---\nname: three_steps\ndescription: Three steps with side effects\n---\n\
         Runs three steps.\n\n```ontheia\n{}\n```\n",
        json!({ "steps": steps })
    );
    std::fs::create_dir_all(root.join("skills")).unwrap();
    std::fs::write(root.join("skills/three_steps.md"), text).unwrap();
}

fn host(root: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--a2a", "127.0.0.1:0", "--allow-command", "sh"])
        .arg("--root")
        .arg(root);
    start(cmd)
}

/// One JSON-RPC call of `method`: its result, or the error as `Err`.
pub async fn call(url: &str, method: &str, params: Value) -> Result<Value, Value> {
    let http = a2e_http::ClientOptions::default().build().unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer: Value = http
        .post(format!("{url}/"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    match answer.get("result") {
        Some(result) => Ok(result.clone()),
        None => Err(answer["error"].clone()),
    }
}

async fn wait_effects(root: &Path, n: usize, what: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    while effects(root).len() < n {
        assert!(Instant::now() < end, "{what}: {:?}", effects(root));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_task_survives_a_sigkill_of_its_host() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    skill(root);
    let server = host(root);
    let message = json!({"messageId": "m-1", "role": "ROLE_USER",
        "parts": [{"data": {"input": "go"}}], "metadata": {"skill": "three_steps"}});
    let sent = call(
        &server.url,
        "SendMessage",
        json!({"message": message, "configuration": {"returnImmediately": true}}),
    )
    .await
    .unwrap();
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        sent["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{sent}"
    );
    wait_effects(root, 2, "b never ran").await;
    drop(server); // SIGKILL to the host's process group
    kill_marked(MARK);
    assert_eq!(effects(root), ["a", "b"]);

    // Started again: the skill's run resumes, and the task follows it.
    let server = host(root);
    wait_effects(root, 3, "the skill's run did not resume").await;
    let end = Instant::now() + Duration::from_secs(30);
    let task = loop {
        let task = call(&server.url, "GetTask", json!({"id": id}))
            .await
            .unwrap();
        let state = task["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if state != "TASK_STATE_WORKING" {
            break task;
        }
        assert!(Instant::now() < end, "the task did not end: {task}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // The resumed run's answer: step b, not idempotent, was not run again.
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
    let text = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("b:") && text.contains("not idempotent"),
        "{task}"
    );
    assert_eq!(effects(root), ["a", "b", "c"]);

    // The other operations answer for it as well.
    let cancel = call(&server.url, "CancelTask", json!({"id": id}))
        .await
        .unwrap_err();
    assert_eq!(cancel["code"], -32002, "{cancel}");
    let listed = call(&server.url, "ListTasks", json!({})).await.unwrap();
    assert_eq!(listed["tasks"][0]["id"], id.as_str(), "{listed}");
}
