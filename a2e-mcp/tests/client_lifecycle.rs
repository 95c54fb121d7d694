//! Lifecycle of mounted servers: a server that never answers `initialize`,
//! eager start and restart, and server-everything over Streamable HTTP.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_mcp::{McpCallOptions, McpError, McpServerConfig, McpToolkit};
use serde_json::{Map, Value, json};

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

async fn read_pid(path: &std::path::Path) -> i32 {
    for _ in 0..400 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{} never appeared", path.display());
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_fails_clearly_and_is_killed() {
    let test = "a_server_that_never_answers_initialize";
    let (Some(python), Some(time_bin)) = (common::python(test), common::time_server(test)) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, child_file) = (dir.path().join("server.pid"), dir.path().join("child.pid"));
    let mut cfg = McpServerConfig::stdio(
        "silent",
        python.to_str().unwrap(),
        &[
            common::test_file("py/hang_server.py").to_str().unwrap(),
            pid_file.to_str().unwrap(),
            child_file.to_str().unwrap(),
        ],
    );
    cfg.init_timeout_secs = 2;
    let silent = McpToolkit::new(cfg).unwrap();
    let time = McpToolkit::new(McpServerConfig::stdio(
        "time",
        time_bin.to_str().unwrap(),
        &[],
    ))
    .unwrap();

    let (hung, served) = tokio::join!(
        silent.start(),
        time.call(
            "get_current_time",
            args(json!({"timezone": "UTC"})),
            McpCallOptions::default()
        )
    );
    let err = hung.unwrap_err();
    assert_eq!(
        err,
        McpError::InitTimeout {
            server: "silent".into(),
            after: Duration::from_secs(2)
        }
    );
    assert_eq!(
        err.to_string(),
        "MCP server `silent` did not answer `initialize` within 2s"
    );
    // The other server kept serving meanwhile.
    assert!(served.unwrap().text().contains("UTC"));
    // The hung server and the child it started are gone.
    let (server, child) = (read_pid(&pid_file).await, read_pid(&child_file).await);
    assert!(common::wait_gone(server).await, "server {server} survived");
    assert!(common::wait_gone(child).await, "child {child} survived");
    assert!(!silent.is_running().await);
    // The next attempt waits for its backoff and fails the same way, by name.
    let again = silent.start().await.unwrap_err();
    assert_eq!(again.server(), "silent");
}

#[tokio::test]
async fn an_eager_server_starts_at_mount_and_restarts_after_a_crash() {
    let Some(entry) = common::everything("an_eager_server_starts_at_mount") else {
        return;
    };
    let mut cfg = McpServerConfig::stdio("ev", "node", &[entry.to_str().unwrap(), "stdio"]);
    cfg.eager = true;
    cfg.defer_loading = true;
    let kit = McpToolkit::mount(cfg).await.unwrap();
    assert!(kit.is_running().await);
    let cached = kit.cached_tools().unwrap();
    assert!(cached.iter().all(|t| t.definition.defer_loading));
    let pid = kit.server_pid().await.unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Restarted in the background, without a call.
    let mut restarted = None;
    for _ in 0..400 {
        if let Some(new_pid) = kit.server_pid().await
            && new_pid != pid
        {
            restarted = Some(new_pid);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(restarted.is_some(), "no restart");
    let out = kit
        .call(
            "echo",
            args(json!({"message": "again"})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert!(out.text().contains("again"));
    kit.shutdown().await;
}

/// server-everything in Streamable HTTP mode on a free loopback port.
struct HttpEverything {
    child: tokio::process::Child,
    url: String,
}

impl HttpEverything {
    async fn start(test: &str) -> Option<Self> {
        let entry = common::everything(test)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new("node")
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Some(Self {
                    child,
                    url: format!("http://127.0.0.1:{port}/mcp"),
                });
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("server-everything did not listen on {port}");
    }
}

#[tokio::test]
async fn everything_over_streamable_http() {
    let Some(mut server) = HttpEverything::start("everything_over_streamable_http").await else {
        return;
    };
    let mut cfg = McpServerConfig::http("evhttp", &server.url);
    cfg.headers.insert("X-Test".into(), "a2e".into());
    let kit = McpToolkit::new(cfg).unwrap();
    let defs = kit.definitions().await.unwrap();
    assert!(defs.iter().any(|d| d.name == "get-sum"));
    assert!(defs.iter().all(|d| d.toolkit.as_deref() == Some("evhttp")));
    let sum = kit
        .call(
            "get-sum",
            args(json!({"a": 1.5, "b": 2})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert!(sum.text().contains("3.5"), "{}", sum.text());

    let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
    let sink = seen.clone();
    let out = kit
        .call(
            "trigger-long-running-operation",
            args(json!({"duration": 0.3, "steps": 3})),
            McpCallOptions::default().on_progress(move |p| {
                sink.lock().unwrap().push(p.pct());
                async {}
            }),
        )
        .await
        .unwrap();
    assert!(out.text().contains("Steps: 3"));
    assert_eq!(*seen.lock().unwrap(), [33, 67, 100]);
    kit.shutdown().await;
    let _ = server.child.kill().await;
}

#[tokio::test]
async fn an_unreachable_https_server_fails_with_its_name() {
    // Port 1 on loopback: nothing listens there.
    let kit = McpToolkit::new(McpServerConfig::http("remote", "https://127.0.0.1:1/mcp")).unwrap();
    let err = kit.start().await.unwrap_err();
    assert!(matches!(err, McpError::Init { .. }), "{err}");
    assert!(err.to_string().starts_with("MCP server `remote`"), "{err}");
    assert!(!kit.is_running().await);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_keeps_failing_backs_off_further_each_time() {
    // Not an MCP server at all: it exits at once.
    let kit = McpToolkit::new(McpServerConfig::stdio("broken", "sh", &["-c", "exit 3"])).unwrap();
    // Attempts 1-4: each fails to start (short backoffs of 0.5, 1 and 2 s are
    // waited out inside the call).
    for attempt in 1..=4 {
        let err = kit.start().await.unwrap_err();
        assert!(
            matches!(err, McpError::Init { .. } | McpError::InitTimeout { .. }),
            "attempt {attempt}: {err}"
        );
        assert_eq!(err.server(), "broken");
    }
    // The next backoff (4 s) is longer than a call waits: it fails at once.
    let err = kit.start().await.unwrap_err();
    let McpError::Unavailable {
        failures, retry_in, ..
    } = &err
    else {
        panic!("expected Unavailable, got {err}");
    };
    assert_eq!(*failures, 4);
    assert!(*retry_in <= Duration::from_secs(4) && *retry_in > Duration::from_secs(2));
    assert!(err.to_string().contains("`broken` is unavailable"), "{err}");
    // After the backoff it is tried again.
    tokio::time::sleep(*retry_in).await;
    let err = kit.start().await.unwrap_err();
    assert!(
        matches!(err, McpError::Init { .. } | McpError::InitTimeout { .. }),
        "{err}"
    );
}
