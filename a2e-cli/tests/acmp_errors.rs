//! What a buyer says when ACMP goes wrong through configuration: a provider
//! that refuses the buyer's token is named with the refusal (not "no
//! provider for capability"), and a `token_env` the environment does not
//! set is named when the host starts.

use crate::acmp_support;

use acmp_support::{ProviderHost, buyer_run, capability, example_dag, workspace};
use serde_json::Value;

#[test]
fn a_provider_that_refuses_the_token_is_named() {
    let left = ProviderHost::start(
        "left",
        &(capability("split_text", "tool = \"split_text\"", 0.001)
            + &capability("text_stats", "tool = \"text_stats\"", 0.001)
            + &capability("aggregate_stats", "skill = \"aggregate_stats\"", 0.002)),
        200,
        "",
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("buyer.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = \"{}\"\n[journal]\nenabled = false\n[acmp]\n\
             [[acmp.providers]]\nname = \"left\"\nurl = \"{}\"\ntoken = \"wrong\"\n",
            dir.path().join("data").display(),
            left.url
        ),
    )
    .unwrap();
    let out = buyer_run(&config, &example_dag(), &workspace())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = outcome.to_string();
    assert!(
        text.contains("provider `left` refused the token (HTTP 401)"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("no provider for capability"), "{text}");
    // The tasks after it were cancelled for it, said as wire values.
    let stats = outcome["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task_id"] == "task_stats_a")
        .unwrap();
    assert_eq!(stats["cancel_reason"], "upstream_failed", "{stats}");
    assert_eq!(stats["cancelled_by"], "task_split", "{stats}");
}

#[test]
fn an_unset_token_env_is_named_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("buyer.toml");
    std::fs::write(
        &config,
        "[journal]\nenabled = false\n[acmp]\n[[acmp.providers]]\nname = \"left\"\n\
         url = \"ws://127.0.0.1:9/\"\ntoken_env = \"A2E_TEST_UNSET_TOKEN\"\n",
    )
    .unwrap();
    let out = buyer_run(&config, &example_dag(), &workspace())
        .env_remove("A2E_TEST_UNSET_TOKEN")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("acmp.providers \"left\": token_env `A2E_TEST_UNSET_TOKEN` is not set"),
        "{said}"
    );
}
