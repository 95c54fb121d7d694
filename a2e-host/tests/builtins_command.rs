//! `run_command`: allow-list, no shell, streamed log events, caps, and the
//! process group dying on timeout, cancellation and drop.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_host::builtins;
use a2e_host::plugin::{CallContext, EventSink, ToolOutput, ToolPlugin};
use a2e_host::proc::pid_alive;
use a2e_host::{CallOptions, Host, HostConfig, HostError, HostResult};
use a2e_proto::{ErrorCode, EventKind, ToolCallRequest};
use futures::FutureExt;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

type Events = Arc<Mutex<Vec<(EventKind, Map<String, Value>)>>>;

fn config(root: &Path) -> HostConfig {
    HostConfig {
        root: root.to_path_buf(),
        commands: a2e_host::config::CommandConfig {
            allow: ["echo", "sh", "cat", "sleep"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            ..Default::default()
        },
        ..HostConfig::default()
    }
}

fn context(cancel: CancellationToken) -> (CallContext, Events) {
    let events: Events = Arc::default();
    let keep = events.clone();
    let sink = EventSink::new(move |kind, data| {
        keep.lock().unwrap().push((kind, data));
        async {}.boxed()
    });
    (CallContext::new("s", "r", cancel, None, sink), events)
}

fn object(args: Value) -> Map<String, Value> {
    match args {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

async fn run(config: HostConfig, args: Value) -> HostResult<ToolOutput> {
    let tools = builtins::tools(Arc::new(config));
    tools
        .call("run_command", object(args), CallContext::detached())
        .await
}

fn log_lines(events: &Events, level: &str) -> Vec<String> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter(|(kind, data)| *kind == EventKind::LOG && data["level"] == level)
        .map(|(_, data)| data["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Waits until an `info` log line parses as a pid and returns it.
async fn first_pid(events: &Events) -> u32 {
    for _ in 0..500 {
        if let Some(pid) = log_lines(events, "info")
            .iter()
            .find_map(|l| l.trim().parse().ok())
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no pid was printed");
}

async fn assert_gone(pid: u32) {
    let gone = async {
        while pid_alive(pid) {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .unwrap_or_else(|_| panic!("process {pid} is still alive"));
}

#[tokio::test]
async fn runs_an_allowed_program_without_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        config(dir.path()),
        json!({"argv": ["echo", "hello", "$HOME", "a;b"]}),
    )
    .await
    .unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.data["exit_code"], 0);
    assert_eq!(
        out.data["stdout"], "hello $HOME a;b\n",
        "arguments reach the program verbatim"
    );
    assert_eq!(out.data["stderr"], "");
    assert!(!out.truncated);
}

#[tokio::test]
async fn non_zero_exit_is_a_successful_call_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        config(dir.path()),
        json!({"argv": ["sh", "-c", "echo bad >&2; exit 3"]}),
    )
    .await
    .unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.data["stderr"], "bad\n");
}

#[tokio::test]
async fn a_signal_death_has_no_exit_code_but_names_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        config(dir.path()),
        json!({"argv": ["sh", "-c", "kill -9 $$"]}),
    )
    .await
    .unwrap();
    assert_eq!(out.exit_code, None);
    assert_eq!(out.data["exit_code"], Value::Null);
    assert_eq!(out.data["signal"], 9);
}

#[tokio::test]
async fn commands_outside_the_allow_list_are_denied_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for argv in [
        json!(["ls"]),
        json!(["/bin/echo", "x"]),
        json!(["./echo"]),
        json!(["echo "]),
    ] {
        let first = argv[0].as_str().unwrap().to_owned();
        let err = run(config(dir.path()), json!({"argv": argv}))
            .await
            .unwrap_err();
        match err {
            HostError::Denied(m) => assert!(m.contains(&format!("`{first}`")), "{m}"),
            other => panic!("{first}: {other:?}"),
        }
    }
    let err = run(config(dir.path()), json!({"argv": []}))
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Schema { .. }), "{err:?}");
    let err = run(config(dir.path()), json!({"argv": ["echo", 1]}))
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Schema { .. }), "{err:?}");
}

#[tokio::test]
async fn a_full_path_entry_allows_that_path_only() {
    let dir = tempfile::tempdir().unwrap();
    let echo = a2e_host::proc::resolve_program("echo").unwrap();
    let echo = echo.to_str().unwrap().to_owned();
    let mut cfg = config(dir.path());
    cfg.commands.allow = vec![echo.clone()];
    let out = run(cfg.clone(), json!({"argv": [echo, "full"]}))
        .await
        .unwrap();
    assert_eq!(out.data["stdout"], "full\n");
    let err = run(cfg, json!({"argv": ["echo", "bare"]}))
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Denied(_)), "{err:?}");
}

#[tokio::test]
async fn output_lines_stream_as_log_events_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins::tools(Arc::new(config(dir.path())));
    let (ctx, events) = context(CancellationToken::new());
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; done; echo oops >&2";
    let out = tools
        .call(
            "run_command",
            object(json!({"argv": ["sh", "-c", script]})),
            ctx,
        )
        .await
        .unwrap();
    let expected: Vec<String> = (1..=10).map(|i| format!("line{i}")).collect();
    assert_eq!(log_lines(&events, "info"), expected);
    assert_eq!(log_lines(&events, "warn"), vec!["oops"]);
    assert_eq!(out.data["stdout"], format!("{}\n", expected.join("\n")));
}

#[tokio::test]
async fn stdin_env_and_cwd() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let out = run(
        config(dir.path()),
        json!({"argv": ["cat"], "stdin": "line one\nline two"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["stdout"], "line one\nline two");

    let out = run(
        config(dir.path()),
        json!({"argv": ["sh", "-c", "echo $A2E_TEST_VAR-$N; pwd"], "env": {"A2E_TEST_VAR": "value", "N": 7}, "cwd": "sub"}),
    )
    .await
    .unwrap();
    let canon = dir.path().canonicalize().unwrap().join("sub");
    assert_eq!(
        out.data["stdout"],
        format!("value-7\n{}\n", canon.display())
    );

    let err = run(
        config(dir.path()),
        json!({"argv": ["echo"], "env": {"LD_PRELOAD": "x.so"}}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, HostError::Denied(_)), "{err:?}");

    let err = run(config(dir.path()), json!({"argv": ["echo"], "cwd": "../"}))
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Denied(_)), "{err:?}");
}

#[tokio::test]
async fn each_stream_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.commands.output_max_bytes = 10;
    let tools = builtins::tools(Arc::new(cfg));
    let (ctx, events) = context(CancellationToken::new());
    let out = tools
        .call(
            "run_command",
            object(json!({"argv": ["sh", "-c", "echo 0123456789abcdef; echo more; echo e >&2"]})),
            ctx,
        )
        .await
        .unwrap();
    assert_eq!(out.data["stdout"], "0123456789");
    assert_eq!(out.data["stdout_truncated"], true);
    assert_eq!(out.data["stderr"], "e\n");
    assert_eq!(out.data["stderr_truncated"], false);
    assert!(out.truncated);
    assert_eq!(out.exit_code, Some(0));
    let info = log_lines(&events, "info");
    assert_eq!(
        info,
        vec!["0123456789"],
        "lines past the cap are not streamed"
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins::tools(Arc::new(config(dir.path())));
    let (ctx, events) = context(CancellationToken::new());
    let started = std::time::Instant::now();
    let err = tools
        .call(
            "run_command",
            object(json!({"argv": ["sh", "-c", "sleep 30 & echo $!; wait"], "timeout": 1})),
            ctx,
        )
        .await
        .unwrap_err();
    assert_eq!(err, HostError::Timeout(1));
    assert!(started.elapsed() < Duration::from_secs(20));
    let grandchild = first_pid(&events).await;
    assert_gone(grandchild).await;
}

/// Starts `run_command` on a shell that leaves a `sleep 30` in the background
/// and waits; the call's task and the sleeper's pid.
async fn start_background_sleeper(
    root: &Path,
    cancel: CancellationToken,
) -> (tokio::task::JoinHandle<HostResult<ToolOutput>>, u32) {
    let tools = Arc::new(builtins::tools(Arc::new(config(root))));
    let (ctx, events) = context(cancel);
    let task = tokio::spawn(async move {
        tools
            .call(
                "run_command",
                object(json!({"argv": ["sh", "-c", "sleep 30 & echo $!; wait"]})),
                ctx,
            )
            .await
    });
    (task, first_pid(&events).await)
}

#[tokio::test]
async fn cancellation_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let (task, grandchild) = start_background_sleeper(dir.path(), cancel.clone()).await;
    assert!(pid_alive(grandchild));
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the call did not end after cancellation")
        .unwrap();
    assert_eq!(result.unwrap_err(), HostError::Cancelled);
    assert_gone(grandchild).await;
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let (task, grandchild) = start_background_sleeper(dir.path(), CancellationToken::new()).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_gone(grandchild).await;
}

#[tokio::test]
async fn background_children_do_not_outlive_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins::tools(Arc::new(config(dir.path())));
    let (ctx, events) = context(CancellationToken::new());
    let out = tools
        .call(
            "run_command",
            object(json!({"argv": ["sh", "-c", "sleep 30 & echo $!"]})),
            ctx,
        )
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert_gone(first_pid(&events).await).await;
}

#[tokio::test]
async fn through_the_host_a_timeout_is_an_in_band_failure_and_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let host = Host::builder(config(dir.path()))
        .with_builtins()
        .build()
        .unwrap();
    let mut req = ToolCallRequest::new(
        "run_command",
        json!({"argv": ["sh", "-c", "sleep 30 & echo $! > pid; wait"], "timeout": 60}),
    );
    req.timeout = 1;
    let result = host
        .call_tool(req.clone(), CallOptions::new().session("s"))
        .await
        .unwrap();
    assert!(!result.success);
    assert_eq!(result.error_code, Some(ErrorCode::TIMEOUT));
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(pid).await;

    let req = ToolCallRequest::new("run_command", json!({"argv": ["rm", "-rf", "/"]}));
    let err = host
        .call_tool(req.clone(), CallOptions::new().session("s"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TOOL_DENIED);
}
