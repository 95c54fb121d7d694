//! Several real servers mounted together: names, deferred loading, calls.

use crate::common;

use std::collections::HashSet;

use a2e_mcp::{McpCallOptions, McpMounts, McpServerConfig};
use a2e_proto::ErrorCode;
use serde_json::{Map, Value, json};

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn three_servers_one_deferred_under_one_name_table() {
    let test = "three_servers_one_deferred";
    let (Some(time_bin), Some(entry)) = (common::time_server(test), common::everything(test))
    else {
        return;
    };
    let entry = entry.to_str().unwrap();
    let time = McpServerConfig::stdio("time", time_bin.to_str().unwrap(), &[]);
    let ev1 = McpServerConfig::stdio("ev1", "node", &[entry, "stdio"]);
    let mut ev2 = McpServerConfig::stdio("ev2", "node", &[entry, "stdio"]);
    ev2.defer_loading = true;
    let reserved: HashSet<String> = ["get_current_time".to_owned()].into();
    let mounts = McpMounts::mount(vec![time, ev1, ev2], reserved)
        .await
        .unwrap();
    assert!(mounts.definitions().is_empty(), "nothing listed before use");

    // Plain listing: the deferred server stays down.
    assert_eq!(mounts.list_unlisted(false).await, 2, "time and ev1 listed");
    assert!(!mounts.toolkit("ev2").unwrap().is_running().await);
    let defs = mounts.definitions();
    let names: HashSet<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    // Reserved by the host: qualified.
    assert!(names.contains("time.get_current_time"));
    assert!(names.contains("convert_time"));
    assert!(names.contains("echo"), "unique until ev2 is listed");

    // Search with include_deferred lists ev2: its echo collides with ev1's,
    // which keeps the plain name it was exposed under.
    assert_eq!(mounts.list_unlisted(true).await, 1);
    assert_eq!(mounts.list_unlisted(true).await, 0, "listed once");
    let defs = mounts.definitions();
    let echo2 = defs.iter().find(|d| d.name == "ev2.echo").unwrap();
    assert!(echo2.defer_loading);
    assert_eq!(echo2.toolkit.as_deref(), Some("ev2"));
    let echo1 = defs.iter().find(|d| d.name == "echo").unwrap();
    assert_eq!(echo1.toolkit.as_deref(), Some("ev1"));
    assert!(mounts.input_schema("ev1.echo").unwrap()["properties"]["message"].is_object());

    let r = mounts
        .call(
            "ev2.echo",
            args(json!({"message": "two"})),
            McpCallOptions::default(),
        )
        .await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.tool_name, "ev2.echo");
    assert!(r.data["output"].as_str().unwrap().contains("two"));
    let r = mounts
        .call(
            "time.get_current_time",
            args(json!({"timezone": "UTC"})),
            McpCallOptions::default(),
        )
        .await;
    assert!(r.success, "{r:?}");
    let r = mounts
        .call(
            "echo",
            args(json!({"message": "one"})),
            McpCallOptions::default(),
        )
        .await;
    assert!(r.success, "{r:?}");
    let r = mounts
        .call("no_such_tool", Map::new(), McpCallOptions::default())
        .await;
    assert_eq!(r.error_code, Some(ErrorCode::UNKNOWN_TOOL));
    let r = mounts
        .call_on("nowhere", "echo", Map::new(), McpCallOptions::default())
        .await;
    assert_eq!(r.error_code, Some(ErrorCode::SERVER_NOT_FOUND));
    mounts.shutdown().await;
}

#[tokio::test]
async fn a_qualified_name_starts_a_server_not_listed_yet() {
    let Some(bin) = common::time_server("a_qualified_name_starts_a_server") else {
        return;
    };
    let mut cfg = McpServerConfig::stdio("clock", bin.to_str().unwrap(), &[]);
    cfg.defer_loading = true;
    let mounts = McpMounts::mount(vec![cfg], HashSet::new()).await.unwrap();
    let r = mounts
        .call(
            "clock.get_current_time",
            args(json!({"timezone": "Asia/Tokyo"})),
            McpCallOptions::default(),
        )
        .await;
    assert!(r.success, "{r:?}");
    assert!(r.data["output"].as_str().unwrap().contains("Asia/Tokyo"));
    assert_eq!(mounts.definitions().len(), 2);
    mounts.shutdown().await;
}

#[tokio::test]
async fn duplicate_server_names_are_refused() {
    let a = McpServerConfig::stdio("x", "true", &[]);
    let err = McpMounts::mount(vec![a.clone(), a], HashSet::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("two mounted servers"), "{err}");
}
