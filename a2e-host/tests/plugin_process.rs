//! Plugin processes (`[[plugins]]`): the `plugin_process` example mounted as a
//! toolkit, driven through a session by the client SDK: list, call with
//! events, failures, timeouts, a plugin that dies, and the process group gone
//! with the host.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use a2e_client::{Client, ToolCall};
use a2e_host::config::PluginProcessConfig;
use a2e_host::transport::stdio::{StdioOptions, serve};
use a2e_host::{Host, HostConfig};
use a2e_proto::{A2ECapability, ErrorCode};
use serde_json::json;

/// The example's binary, which `cargo test` builds beside the tests.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let beside = exe.parent().and_then(|d| d.parent()).unwrap();
    let candidates = [
        beside.join("examples/plugin_process"),
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/examples/plugin_process"),
    ];
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .expect("the plugin_process example was not built")
}

fn config(root: &std::path::Path, timeout_secs: u64) -> HostConfig {
    let mut config = HostConfig {
        root: root.to_path_buf(),
        ..HostConfig::default()
    };
    config.timeouts.tool_secs = timeout_secs;
    config.plugins.push(PluginProcessConfig {
        name: "sample".into(),
        command: vec![example_binary().display().to_string()],
        args: Vec::new(),
        env: Default::default(),
        cwd: None,
        start_timeout_secs: 10,
    });
    config
}

/// A host with the plugin, served to a client over an in-memory pipe.
async fn connect(config: HostConfig) -> (Client, Arc<Host>, tokio::task::JoinHandle<()>) {
    let host = a2e_host::plugins::with_plugin_processes(Host::builder(config))
        .build()
        .unwrap();
    let (client_io, host_io) = tokio::io::duplex(1 << 16);
    let (host_read, host_write) = tokio::io::split(host_io);
    let served = tokio::spawn(serve(
        host.clone(),
        host_read,
        host_write,
        StdioOptions::default(),
    ));
    let (read, write) = tokio::io::split(client_io);
    let client = Client::builder()
        .capabilities([A2ECapability::TOOLS])
        .connect_io(read, write)
        .await
        .unwrap();
    (client, host, served)
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

#[tokio::test]
async fn a_plugin_process_serves_its_tools_through_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let (client, host, served) = connect(config(dir.path(), 30)).await;

    let tools = client.tools().list().await.unwrap();
    let echo = tools
        .iter()
        .find(|t| t.name == "echo")
        .expect("echo listed");
    assert_eq!(echo.toolkit.as_deref(), Some("sample"));
    for name in ["sleep", "fail", "exit"] {
        assert!(tools.iter().any(|t| t.name == name), "{name} listed");
    }

    // A call and its events, in order.
    let call = ToolCall::new("echo", json!({"text": "hi", "events": 3})).streaming(true);
    let mut seen = Vec::new();
    let result = client
        .tools()
        .call_with_events(call, |e| seen.push(e))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    assert_eq!(result.data["text"], "hi");
    let pid = i32::try_from(result.data["pid"].as_u64().unwrap()).unwrap();
    assert!(alive(pid));
    let messages: Vec<String> = seen
        .iter()
        .map(|e| e.data["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(messages, ["event 0", "event 1", "event 2"]);
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2]);

    // The host validates arguments against the plugin's schema.
    let err = client
        .tools()
        .call("echo", json!({"text": 5}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::SCHEMA_VIOLATION), "{err:?}");

    // A tool that fails is a failure, not a refusal.
    let failed = client.tools().call("fail", json!({})).await.unwrap();
    assert!(!failed.success);
    assert_eq!(failed.error_code, Some(ErrorCode::TOOL_ERROR));
    assert!(failed.error.unwrap().contains("failed on purpose"));

    // Ending the host ends the plugin's process group.
    client.close().await;
    drop(client);
    served.await.unwrap();
    drop(host);
    let mut gone = false;
    for _ in 0..100 {
        if !alive(pid) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "the plugin process {pid} outlived its host");
}

#[tokio::test]
async fn a_timed_out_call_ends_and_a_dead_plugin_starts_again() {
    let dir = tempfile::tempdir().unwrap();
    let done = dir.path().join("done.txt");
    let (client, _host, _served) = connect(config(dir.path(), 1)).await;

    let slow = client
        .tools()
        .call_with(
            ToolCall::new(
                "sleep",
                json!({"ms": 3000, "done_file": done.display().to_string()}),
            )
            .timeout_secs(1),
        )
        .await
        .unwrap();
    assert!(!slow.success);
    assert_eq!(slow.error_code, Some(ErrorCode::TIMEOUT), "{slow:?}");

    // The plugin exits in the middle of a call: the call fails, the next starts it anew.
    let first = client
        .tools()
        .call("echo", json!({"text": "a"}))
        .await
        .unwrap();
    let exited = client.tools().call("exit", json!({})).await.unwrap();
    assert!(!exited.success, "{exited:?}");
    let second = client
        .tools()
        .call("echo", json!({"text": "b"}))
        .await
        .unwrap();
    assert!(second.success, "{second:?}");
    assert_ne!(first.data["pid"], second.data["pid"], "a new process");

    // The sleep cut short by the timeout never finished in the plugin.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!done.exists(), "the timed-out sleep ran to its end");
}

#[tokio::test]
async fn a_plugin_that_cannot_start_is_reported_and_the_host_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), 30);
    config.plugins[0].command = vec!["/nonexistent/plugin".into()];
    let (client, _host, _served) = connect(config).await;
    let tools = client.tools().list().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let err = client
        .tools()
        .call("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::UNKNOWN_TOOL), "{err:?}");
    assert!(client.ping().await.is_ok());
}

#[test]
fn the_plugin_readmes_configuration_mounts_its_example() {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../a2e-plugin/README.md"
    ))
    .unwrap();
    let block = readme
        .split("```toml\n")
        .find(|b| b.starts_with("[[plugins]]"))
        .and_then(|b| b.split("```").next())
        .expect("the README shows a [[plugins]] entry");
    let config = HostConfig::from_toml(block).unwrap();
    let plugin = &config.plugins[0];
    assert_eq!(plugin.name, "notes");
    assert_eq!(plugin.argv(), ["target/release/examples/notes"]);
    assert_eq!(plugin.env["NOTES_DIR"], "notes");
}
