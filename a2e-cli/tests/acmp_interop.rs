//! Interop with the public reference SDK (`a2agora/sdk-reference`, Python,
//! its `ws_transport`): its buyer calling an a2e provider, an a2e buyer
//! calling its provider, with streaming and cancel. The SDK is on no package
//! registry: developer-run (`cargo test -p a2e-cli --all-features --test cli
//! acmp_interop:: -- --ignored`) with `ACMP_SDK_REFERENCE` naming a checkout and the
//! `websockets` Python package installed; it skips loudly without them.

use crate::acmp_support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use acmp_support::{ProviderHost, buyer_run, capability};
use serde_json::{Value, json};

fn sdk() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("ACMP_SDK_REFERENCE").map(PathBuf::from) else {
        eprintln!("SKIPPED: set ACMP_SDK_REFERENCE to a checkout of a2agora/sdk-reference");
        return None;
    };
    if !dir.join("src/acmp/ws_transport.py").exists() {
        eprintln!("SKIPPED: {} is not the reference SDK", dir.display());
        return None;
    }
    let ws = Command::new("python3")
        .args(["-c", "import websockets"])
        .status()
        .is_ok_and(|s| s.success());
    if !ws {
        eprintln!("SKIPPED: the websockets Python package is missing (pip install websockets)");
        return None;
    }
    Some(dir)
}

/// A child killed and reaped when dropped (also when the test fails).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/acmp_interop")
        .join(name)
}

#[test]
#[ignore = "developer-run: needs the reference SDK (ACMP_SDK_REFERENCE)"]
fn the_reference_buyer_streams_from_and_cancels_on_an_a2e_provider() {
    let Some(sdk) = sdk() else { return };
    let p = ProviderHost::start(
        "ours",
        &(capability("text_stats", "tool = \"text_stats\"", 0.001)
            + &capability("shell", "tool = \"run_command\"", 0.001)),
        100,
        "",
    );
    let out = Command::new("python3")
        .arg(script("their_buyer.py"))
        .arg(&sdk)
        .arg(&p.url)
        .arg(&p.token)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(
        lines.len(),
        2,
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lines[0]["streamed"], true);
    assert_eq!(lines[0]["cost_cu"], 0.001);
    assert_eq!(lines[0]["chunks"][0][0]["words"], 3, "{}", lines[0]);
    assert_eq!(lines[0]["chunks"][0][2], true);
    assert_eq!(lines[1]["cancelled"], -33004, "{}", lines[1]);
    p.wait_logged(&["acmp/cancel", "running=true"], Duration::from_secs(5));
}

#[test]
#[ignore = "developer-run: needs the reference SDK (ACMP_SDK_REFERENCE)"]
fn an_a2e_buyer_runs_a_dag_on_the_reference_provider_and_cancels_there() {
    let Some(sdk) = sdk() else { return };
    let mut provider = Killed(
        Command::new("python3")
            .arg(script("their_provider.py"))
            .arg(&sdk)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Its lines, read on a thread: a missing one fails the test, not hangs it.
    let (tx, lines) = std::sync::mpsc::channel();
    let stdout = provider.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next = || {
        lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_default()
    };
    let port = next().strip_prefix("PORT ").unwrap_or_default().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "data_dir = \"{}\"\n[journal]\nenabled = false\n[acmp]\n[[acmp.providers]]\nname = \"reference\"\nurl = \"ws://127.0.0.1:{port}/\"\ntoken = \"unused\"\n[[acmp.providers.capabilities]]\ncapability = \"shout\"\nprice_cu = 0.002\n[[acmp.providers.capabilities]]\ncapability = \"slow\"\nprice_cu = 0.001\n",
        dir.path().join("data").display()
    );
    let config_path = dir.path().join("buyer.toml");
    std::fs::write(&config_path, config).unwrap();
    let dag = json!({"dag_id": "dag_interop", "edges": [], "tasks": [
        {"task_id": "task_shout", "capability": "shout", "input": {"type": "text", "data": "hello"}}]});
    let dag_path = dir.path().join("dag.json");
    std::fs::write(&dag_path, dag.to_string()).unwrap();
    let out = buyer_run(&config_path, &dag_path, dir.path())
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["result"]["task_shout"]["data"], "HELLO");
    // Cancel: the buyer interrupted while `slow` runs there.
    let slow = json!({"dag_id": "dag_slow", "edges": [], "tasks": [
        {"task_id": "task_slow", "capability": "slow", "input": {"type": "text", "data": ""}}]});
    std::fs::write(&dag_path, slow.to_string()).unwrap();
    let buyer = buyer_run(&config_path, &dag_path, dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(buyer.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    let _ = buyer.wait_with_output();
    let cancelled = next();
    drop(provider);
    assert_eq!(cancelled, "CANCELLED task_slow");
}
