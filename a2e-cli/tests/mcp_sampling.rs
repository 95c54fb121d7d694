//! A mounted MCP server's `sampling/createMessage` answered by one of the
//! host's model providers when the server's config has `sampling`, and
//! refused when it does not. The server is the example plugin set
//! (`examples/mcp-everything`, its `test_sampling` tool asks its client to
//! sample); the provider a scripted OpenAI-compatible server.

use crate::llm_support;
use crate::mcp_conformance_support;

use std::process::Command;

use serde_json::Value;

fn call_sampling(config: &std::path::Path) -> (bool, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .arg("--config")
        .arg(config)
        .args(["mcp", "call", "every", "test_sampling", "--input"])
        .arg(r#"{"prompt": "What is 2+2?"}"#)
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.success(), result)
}

#[test]
fn a_mounted_servers_sampling_is_answered_by_a_host_provider_only_when_allowed() {
    let model = llm_support::Server::start(vec![llm_support::text("It is four.")]);
    let root = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(mcp_conformance_support::everything_example());
    cmd.arg("--root").arg(root.path());
    let server = mcp_conformance_support::start(cmd);
    let ws = llm_support::Workspace::new();
    let provider = format!(
        "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = {:?}\nmodel = \"scripted-model\"\n",
        model.base_url
    );

    let allowed = ws.config(&format!(
        "{provider}\n[[mcp.servers]]\nname = \"every\"\nurl = {:?}\nsampling = {{ provider = \"scripted\", max_tokens = 64 }}\n",
        server.url
    ));
    let (ok, result) = call_sampling(&allowed);
    assert!(ok, "{result}");
    let text = result["data"]["output"].as_str().unwrap_or_default();
    assert_eq!(text, "LLM response: It is four.", "{result}");
    let asked = model.received();
    assert_eq!(asked.len(), 1);
    let body = &asked[0].body;
    assert_eq!(body["model"], "scripted-model");
    assert_eq!(
        body["max_tokens"], 64,
        "the server asked for 100, the config allows 64"
    );
    assert!(
        body["messages"].to_string().contains("What is 2+2?"),
        "{body}"
    );

    let refused = ws.config(&format!(
        "{provider}\n[[mcp.servers]]\nname = \"every\"\nurl = {:?}\n",
        server.url
    ));
    let (ok, result) = call_sampling(&refused);
    assert!(!ok, "{result}");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(error.contains("sampling"), "{result}");
    assert_eq!(
        model.received().len(),
        1,
        "no model call without `sampling`"
    );
}
