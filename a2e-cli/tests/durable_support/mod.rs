//! The durable-run tests' parts: a host over the binary on a root, its
//! messages, and the side effects its commands record.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use a2e_host::proc::pids_with_arg;
use conformance::child::HostProcess;
use serde_json::{Value, json};

/// `a2e serve --stdio` on `root`, allowed to run `sh`.
pub fn serve(root: &Path) -> HostProcess {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--allow-command", "sh", "--root"])
        .arg(root);
    HostProcess::spawn(cmd).unwrap()
}

/// The host's next message (within 30 s).
pub fn recv(host: &HostProcess) -> Value {
    let line = host
        .recv_line(Duration::from_secs(30))
        .expect("a message within 30 s");
    serde_json::from_str(&line).unwrap()
}

/// Opens the session as `agent`.
pub fn handshake(host: &mut HostProcess, agent: &str) {
    let hs = json!({"type": "handshake/req", "id": "hs", "agent_id": agent});
    host.send(hs.to_string().as_bytes()).unwrap();
    let (resp, _) = host.answer("hs", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(resp["type"], "handshake/resp", "{resp}");
}

/// The lines the commands appended to `root/effects`.
pub fn effects(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("effects"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Kills the processes with argument `mark` (a sleep its host left behind
/// when it was killed).
pub fn kill_marked(mark: &str) {
    for pid in pids_with_arg(mark) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// `node_id:phase` of each event.
pub fn phases(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["node_id"].as_str().unwrap(),
                e["phase"].as_str().unwrap()
            )
        })
        .collect()
}

/// The run id of the first row of `a2e runs list` (the line after its header).
pub fn first_run_id(listed: &str) -> String {
    listed
        .lines()
        .nth(1)
        .and_then(|row| row.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run listed:\n{listed}"))
        .to_owned()
}
