//! The `notes` example binary served over real standard input/output, as an
//! agent (or the host's `[[plugins]]`) starts it.

use std::path::PathBuf;

use a2e_client::Client;
use a2e_plugin::serde_json::json;
use a2e_proto::{A2ECapability, ErrorCode};

/// The `notes` example's binary, which `cargo test` builds beside the tests
/// (target/<profile>/deps/serve-… → target/<profile>/examples/notes), or in
/// the workspace's target directory when a separate build directory holds
/// the tests.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let beside = exe.parent().and_then(|d| d.parent()).unwrap();
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug");
    [beside.to_path_buf(), target]
        .into_iter()
        .map(|dir| dir.join("examples").join("notes"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| beside.join("examples").join("notes"))
}

#[tokio::test]
async fn the_example_plugin_binary_serves_over_stdio() {
    let binary = example_binary();
    assert!(binary.is_file(), "{} was not built", binary.display());
    let client = Client::builder()
        .capabilities([A2ECapability::TOOLS])
        .connect_stdio(tokio::process::Command::new(&binary))
        .await
        .unwrap();
    let tools = client.tools().list().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["repeat", "count_words"]);
    let result = client
        .tools()
        .call("count_words", json!({"text": "three small words"}))
        .await
        .unwrap();
    assert_eq!(result.data, json!({"words": 3}));
    let err = client
        .tools()
        .call("repeat", json!({"text": "x", "times": 1000}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::SCHEMA_VIOLATION), "{err:?}");
    client.shutdown(5).await.unwrap();
}
