//! Mounting real MCP servers over stdio: PyPI `mcp-server-time` and npm
//! `@modelcontextprotocol/server-everything`.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_mcp::{McpCallOptions, McpError, McpServerConfig, McpToolkit, NameTable};
use a2e_proto::ErrorCode;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Progress seen: (pct, event data).
type Seen = Arc<Mutex<Vec<(i64, Map<String, Value>)>>>;

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn time_kit(test: &str) -> Option<McpToolkit> {
    let bin = common::time_server(test)?;
    let cfg = McpServerConfig::stdio("time", bin.to_str()?, &["--local-timezone", "UTC"]);
    Some(McpToolkit::new(cfg).unwrap())
}

fn everything_kit(test: &str, name: &str) -> Option<McpToolkit> {
    let entry = common::everything(test)?;
    let cfg = McpServerConfig::stdio(name, "node", &[entry.to_str()?, "stdio"]);
    Some(McpToolkit::new(cfg).unwrap())
}

#[tokio::test]
async fn time_server_tools_are_listed_and_called() {
    let Some(kit) = time_kit("time_server_tools_are_listed_and_called") else {
        return;
    };
    assert!(
        !kit.is_running().await,
        "lazy: nothing runs before first use"
    );
    let defs = kit.definitions().await.unwrap();
    assert!(kit.is_running().await);
    let get = defs.iter().find(|d| d.name == "get_current_time").unwrap();
    assert_eq!(get.toolkit.as_deref(), Some("time"));
    let tz = get
        .input_parameters
        .iter()
        .find(|p| p.name == "timezone")
        .unwrap();
    assert!(tz.required && tz.param_type == "string");
    let convert = defs.iter().find(|d| d.name == "convert_time").unwrap();
    assert_eq!(convert.input_parameters.len(), 3);
    assert!(convert.input_parameters.iter().all(|p| p.required));

    let out = kit
        .call(
            "get_current_time",
            args(json!({"timezone": "Europe/Oslo"})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert!(!out.is_error);
    assert!(out.text().contains("Europe/Oslo"), "{}", out.text());

    let converted = kit
        .call_result(
            "convert_time",
            args(
                json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
            ),
            McpCallOptions::default(),
        )
        .await;
    assert!(converted.success, "{converted:?}");
    assert!(converted.data["output"].as_str().unwrap().contains("21:00"));
}

#[tokio::test]
async fn tool_errors_and_bad_arguments_fail_with_codes() {
    let Some(kit) = time_kit("tool_errors_and_bad_arguments_fail_with_codes") else {
        return;
    };
    // The server's own error (isError).
    let bad_zone = kit
        .call_result(
            "get_current_time",
            args(json!({"timezone": "Mars/Olympus"})),
            McpCallOptions::default(),
        )
        .await;
    assert!(!bad_zone.success);
    assert_eq!(bad_zone.error_code, Some(ErrorCode::TOOL_ERROR));
    assert!(bad_zone.error.unwrap().contains("Mars/Olympus"));
    // Checked against the full schema before anything is sent.
    let missing = kit
        .call("get_current_time", Map::new(), McpCallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(missing, McpError::InvalidArguments { .. }),
        "{missing}"
    );
    assert_eq!(missing.code(), ErrorCode::SCHEMA_VIOLATION);
    let unknown = kit
        .call_result("no_such_tool", Map::new(), McpCallOptions::default())
        .await;
    assert_eq!(unknown.error_code, Some(ErrorCode::UNKNOWN_TOOL));
    assert!(unknown.error.unwrap().contains("`time`"));
}

#[tokio::test]
async fn everything_server_echo_structured_and_enums() {
    let Some(kit) = everything_kit("everything_server_echo_structured_and_enums", "everything")
    else {
        return;
    };
    let catalog = kit.tools().await.unwrap();
    for name in [
        "echo",
        "get-sum",
        "get-structured-content",
        "trigger-long-running-operation",
    ] {
        assert!(catalog.get(name).is_some(), "{name} listed");
    }
    let structured = catalog.get("get-structured-content").unwrap();
    let location = &structured.definition.input_parameters[0];
    assert_eq!(location.name, "location");
    assert_eq!(
        location.r#enum.as_deref(),
        Some(
            &[
                "New York".to_owned(),
                "Chicago".into(),
                "Los Angeles".into()
            ][..]
        )
    );
    assert!(!structured.definition.output_parameters.is_empty());
    assert!(structured.definition.tags.contains(&"read-only".to_owned()));

    let echo = kit
        .call(
            "echo",
            args(json!({"message": "hi there"})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert!(echo.text().contains("hi there"));
    let sum = kit
        .call(
            "get-sum",
            args(json!({"a": 2, "b": 40})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert!(sum.text().contains("42"), "{}", sum.text());
    let weather = kit
        .call(
            "get-structured-content",
            args(json!({"location": "Chicago"})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(weather.data["structured"]["temperature"], json!(36));
    // An enum value the schema does not allow.
    let err = kit
        .call(
            "get-structured-content",
            args(json!({"location": "Paris"})),
            McpCallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::InvalidArguments { .. }), "{err}");
}

#[tokio::test]
async fn progress_of_a_long_running_operation_reaches_the_callback() {
    let Some(kit) = everything_kit("progress_of_a_long_running_operation", "everything") else {
        return;
    };
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let opts = McpCallOptions::default().on_progress(move |p| {
        let sink = sink.clone();
        async move {
            sink.lock().unwrap().push((p.pct(), p.event_data()));
        }
    });
    let out = kit
        .call(
            "trigger-long-running-operation",
            args(json!({"duration": 0.4, "steps": 4})),
            opts,
        )
        .await
        .unwrap();
    assert!(out.text().contains("Steps: 4"), "{}", out.text());
    let seen = seen.lock().unwrap();
    let pcts: Vec<i64> = seen.iter().map(|(p, _)| *p).collect();
    assert_eq!(pcts, [25, 50, 75, 100]);
    assert_eq!(seen[0].1["pct"], json!(25));
}

#[tokio::test]
async fn cancelling_a_call_sends_cancelled_and_the_server_keeps_serving() {
    let Some(kit) = everything_kit("cancelling_a_call", "everything") else {
        return;
    };
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let opts = McpCallOptions::default()
        .cancel(cancel)
        .on_progress(move |_| {
            trigger.cancel();
            async {}
        });
    let err = kit
        .call(
            "trigger-long-running-operation",
            args(json!({"duration": 60, "steps": 600})),
            opts,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err,
        McpError::Cancelled {
            server: "everything".into(),
            tool: "trigger-long-running-operation".into()
        }
    );
    let echo = kit
        .call(
            "echo",
            args(json!({"message": "still here"})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert!(echo.text().contains("still here"));

    // A call's own time limit: it times out and is cancelled the same way.
    let err = kit
        .call(
            "trigger-long-running-operation",
            args(json!({"duration": 60, "steps": 2})),
            McpCallOptions::default().timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Timeout { .. }), "{err}");
    assert_eq!(err.code(), ErrorCode::TIMEOUT);
    assert!(kit.is_running().await);
}

#[tokio::test]
async fn a_crash_fails_the_call_in_flight_and_the_server_restarts() {
    let Some(kit) = everything_kit("a_crash_fails_the_call_in_flight", "everything") else {
        return;
    };
    kit.start().await.unwrap();
    let pid = kit.server_pid().await.unwrap();
    let killer = CancellationToken::new();
    let opts = McpCallOptions::default().on_progress({
        let killer = killer.clone();
        move |_| {
            if !killer.is_cancelled() {
                killer.cancel();
                // The server dies mid-call.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            async {}
        }
    });
    let err = kit
        .call_result(
            "trigger-long-running-operation",
            args(json!({"duration": 60, "steps": 600})),
            opts,
        )
        .await;
    assert!(!err.success);
    assert_eq!(err.error_code, Some(ErrorCode::TOOL_ERROR));
    let message = err.error.unwrap();
    assert!(message.contains("`everything` stopped"), "{message}");
    assert!(killer.is_cancelled());

    // Restarted on next use (after the first, short backoff).
    let echo = kit
        .call(
            "echo",
            args(json!({"message": "back"})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert!(echo.text().contains("back"));
    let new_pid = kit.server_pid().await.unwrap();
    assert_ne!(new_pid, pid);
}

#[tokio::test]
async fn two_servers_with_the_same_tool_names_are_qualified() {
    let (Some(a), Some(b)) = (
        everything_kit("two_servers_collide", "ev1"),
        everything_kit("two_servers_collide", "ev2"),
    ) else {
        return;
    };
    let (ta, tb) = (a.tools().await.unwrap(), b.tools().await.unwrap());
    let (na, nb) = (ta.names(), tb.names());
    let table =
        NameTable::build([("ev1", &na[..]), ("ev2", &nb[..])], &Default::default()).unwrap();
    assert_eq!(table.exposed_name("ev1", "echo"), Some("ev1.echo"));
    let (server, tool) = table.resolve("ev2.echo").unwrap();
    assert_eq!((server, tool), ("ev2", "echo"));
    let kit = if server == "ev1" { &a } else { &b };
    let out = kit
        .call(
            tool,
            args(json!({"message": "via ev2"})),
            McpCallOptions::default(),
        )
        .await
        .unwrap();
    assert!(out.text().contains("via ev2"));
}

#[tokio::test]
async fn shutdown_kills_the_whole_process_group() {
    let Some(bin) = common::time_server("shutdown_kills_the_whole_process_group") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("sleeper.pid");
    // A server that started a helper of its own in the background.
    let script = format!(
        "sleep 600 & echo $! > '{}'; exec '{}'",
        pidfile.display(),
        bin.display()
    );
    let kit = McpToolkit::new(McpServerConfig::stdio("time", "sh", &["-c", &script])).unwrap();
    kit.start().await.unwrap();
    let server_pid = kit.server_pid().await.unwrap() as i32;
    let sleeper: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!common::process_gone(sleeper));
    kit.shutdown().await;
    assert!(
        common::wait_gone(sleeper).await,
        "helper {sleeper} survived"
    );
    assert!(
        common::wait_gone(server_pid).await,
        "server {server_pid} survived"
    );
    let err = kit
        .call("get_current_time", Map::new(), McpCallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Shutdown { .. }));
}

#[tokio::test]
async fn dropping_the_toolkit_kills_the_server() {
    let Some(kit) = time_kit("dropping_the_toolkit_kills_the_server") else {
        return;
    };
    kit.start().await.unwrap();
    let pid = kit.server_pid().await.unwrap() as i32;
    drop(kit);
    assert!(
        common::wait_gone(pid).await,
        "server {pid} survived the drop"
    );
}
