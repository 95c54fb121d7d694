//! Commands get a minimal environment: the host's secrets stay in the host.

use std::process::Command;
use std::time::Duration;

use a2e_host::proc::pids_with_arg;
use conformance::child::HostProcess;
use serde_json::json;

#[test]
fn a_secret_in_the_hosts_environment_does_not_reach_commands() {
    let root = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--allow-command", "env", "--root"])
        .arg(root.path())
        .env("A2E_TEST_PROVIDER_KEY", "sk-must-not-leak-1234")
        .env("LANG", "C.UTF-8");
    let mut host = HostProcess::spawn(cmd).unwrap();
    let wait = Duration::from_secs(20);
    host.send(br#"{"type":"handshake/req","id":"hs"}"#).unwrap();
    host.answer("hs", wait, |_| {}).unwrap();
    let req = json!({"type": "tool/call/req", "id": "e", "tool_name": "run_command",
                     "arguments": {"argv": ["env"], "env": {"GIVEN": "by-the-call"}}});
    host.send(req.to_string().as_bytes()).unwrap();
    let (resp, _) = host.answer("e", wait, |_| {}).unwrap();
    assert_eq!(resp["data"]["success"], true, "{resp}");
    let stdout = resp["data"]["data"]["stdout"].as_str().unwrap();
    assert!(!stdout.contains("sk-must-not-leak"), "{stdout}");
    assert!(!stdout.contains("A2E_TEST_PROVIDER_KEY"), "{stdout}");
    // What a command needs is there, and what the call gives.
    assert!(stdout.lines().any(|l| l.starts_with("PATH=")), "{stdout}");
    assert!(stdout.contains("LANG=C.UTF-8"), "{stdout}");
    assert!(stdout.contains("GIVEN=by-the-call"), "{stdout}");
}

#[test]
fn commands_die_with_the_host_even_when_it_is_killed_outright() {
    let root = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--allow-command", "sh", "--root"])
        .arg(root.path());
    let mut host = HostProcess::spawn(cmd).unwrap();
    let wait = Duration::from_secs(20);
    host.send(br#"{"type":"handshake/req","id":"hs"}"#).unwrap();
    host.answer("hs", wait, |_| {}).unwrap();
    // A command and a background grandchild, each with an argument no other
    // process has.
    let req = json!({"type": "tool/call/req", "id": "bg", "tool_name": "run_command",
                     "arguments": {"argv": ["sh", "-c", "sleep 315.0611 & sleep 316.0611"], "timeout": 600}});
    host.send(req.to_string().as_bytes()).unwrap();
    let started = std::time::Instant::now();
    while pids_with_arg("315.0611").is_empty() || pids_with_arg("316.0611").is_empty() {
        assert!(started.elapsed() < wait, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(host.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(host.wait_exit(wait).is_some());
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<u32> = pids_with_arg("315.0611")
            .into_iter()
            .chain(pids_with_arg("316.0611"))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < end,
            "processes outlived the host: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
