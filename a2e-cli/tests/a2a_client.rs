//! a2e as an A2A client: `[[a2a.agents]]` mounts an agent built on the
//! official A2A Python SDK (`tests/a2a/agent.py`, served by uvicorn), its
//! skill `shout` becomes the host's skill `py__shout`, and `a2e run` calls it
//! from a chain: streamed, its output the agent's artifact; a call past the
//! agent's timeout fails `timeout` and cancels the remote task, which the
//! agent then lists as canceled. An agent whose card cannot be read stops
//! the host from starting, naming the agent.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::mcp_conformance_support::{Server, start};

/// A free loopback port (released before the agent binds it).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn agent(python: &Path) -> Server {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a/agent.py");
    let mut cmd = Command::new(python);
    cmd.arg(script).arg(free_port().to_string());
    start(cmd)
}

fn run(root: &Path, text: &str) -> (std::process::Output, Value) {
    let chain = json!({"chain_id": "shout", "entry_node": "s",
        "nodes": [{"node_id": "s", "kind": "skill", "name": "py__shout", "input": {"text": text}}]});
    let file = root.join(format!("chain-{text}.json"));
    std::fs::write(&file, chain.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["run"])
        .arg(&file)
        .arg("--config")
        .arg(root.join("a2e.toml"))
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    let answer = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agents_skill_runs_in_a_chain_and_is_cancelled_past_its_timeout() {
    let test = "a_remote_agents_skill_runs_in_a_chain_and_is_cancelled_past_its_timeout";
    let Some(python) = crate::a2a_sdk::python(test) else {
        return;
    };
    let agent = agent(&python);
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("a2e.toml"),
        format!(
            "[[a2a.agents]]\nname = \"py\"\nurl = \"{}\"\ntimeout_secs = 3\n",
            agent.url
        ),
    )
    .unwrap();

    let (out, answer) = run(root.path(), "hello");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(answer["final_output"]["shout"], "HELLO", "{answer}");

    // Past the agent's timeout: the node fails, the remote task is cancelled.
    let (out, answer) = run(root.path(), "slow");
    assert!(!out.status.success(), "{answer}");
    let error = answer["error"].to_string();
    assert!(
        error.contains("timed out") || error.contains("timeout"),
        "{answer}"
    );
    let listed = crate::a2a_durable::call(&agent.url, "ListTasks", json!({}))
        .await
        .unwrap()
        .to_string();
    assert!(listed.contains("TASK_STATE_CANCELED"), "{listed}");

    // An agent that does not answer: the host does not start, and says why.
    drop(agent);
    let (out, _) = run(root.path(), "again");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("[[a2a.agents]] py"), "{stderr}");
}
