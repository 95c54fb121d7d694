//! LLM skills on the connected MCP client's model: with no provider
//! configured (or a skill naming the provider `mcp-client`), `a2e serve
//! --mcp-stdio` runs an LLM skill's model calls through the client's
//! `sampling/createMessage`, its tool calls on the host. The client is the
//! official MCP Python SDK (`.ci/install-mcp.sh`) with a scripted model
//! behind its sampling callback (`tests/mcp/client_sampling.py`).

use crate::llm_support;
use crate::skip;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

pub fn python(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("A2E_CI_TOOLS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci-tools"),
        PathBuf::from,
    );
    let python = dir.join("mcp-venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} needs the MCP Python SDK ({} is missing; run .ci/install-mcp.sh)",
        python.display()
    );
    skip::skipped(&format!(
        "{test} needs the MCP Python SDK (run .ci/install-mcp.sh)"
    ));
    None
}

const DIGEST: &str = "---\nname: digest\nversion: 1.0.0\ndescription: Digest the notes\n\
    tools: [read_file]\ninput_schema:\n  type: object\n  properties:\n    focus: { type: string }\n\
    ---\nYou digest notes. Read notes.md, then answer in one line.\n";

/// Runs `skill` over MCP stdio with the client in `mode`; the client's report.
fn run(python: &Path, config: &Path, mode: &str, skill: &str) -> Value {
    run_with(python, config, mode, skill, r#"{"focus": "the plan"}"#)
}

/// Runs `skill` with `args` (JSON) over MCP stdio with the client in `mode`.
fn run_with(python: &Path, config: &Path, mode: &str, skill: &str, args: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client_sampling.py");
    let out = Command::new(python)
        .arg(script)
        .args([mode, skill, args])
        .arg(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--mcp-stdio", "--config"])
        .arg(config)
        .env_remove("A2E_LLM_BASE_URL")
        .env_remove("A2E_LLM_MODEL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_llm_skill_runs_on_the_clients_model_when_the_host_has_no_provider() {
    let test = "an_llm_skill_runs_on_the_clients_model_when_the_host_has_no_provider";
    let Some(python) = python(test) else { return };
    let ws = llm_support::Workspace::new();
    std::fs::write(ws.root().join("notes.md"), "Ship the release on Friday.\n").unwrap();
    ws.skill("digest", DIGEST);
    let config = ws.config("");

    // A client whose sampling takes tools: the model reads a file on the host.
    let seen = run(&python, &config, "tools", "digest");
    assert_eq!(seen["is_error"], false, "{seen}");
    let text = seen["text"].as_str().unwrap();
    assert!(
        text.starts_with("Summary from the client:") && text.contains("Ship the release on Friday"),
        "{seen}"
    );
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{seen}");
    assert!(
        asked[0]["systemPrompt"]
            .as_str()
            .unwrap()
            .contains("You digest notes."),
        "{seen}"
    );
    assert!(
        asked[0]["messages"][0].to_string().contains("the plan"),
        "{seen}"
    );
    assert_eq!(asked[0]["tools"][0]["name"], "read_file", "{seen}");
    assert_eq!(asked[0]["toolChoice"]["mode"], "auto", "{seen}");
    let last = asked[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result", "{last}");
    assert_eq!(last["content"][0]["toolUseId"], "call-1", "{last}");
    let audit = std::fs::read_to_string(ws.audit_path()).unwrap();
    assert!(
        audit.contains("digest/read_file"),
        "the tool ran on the host: {audit}"
    );

    // A client whose sampling does not take tools: one model call, no tools.
    let seen = run(&python, &config, "plain", "digest");
    assert_eq!(seen["is_error"], false, "{seen}");
    assert_eq!(
        seen["text"], "Summary from the client: nothing read",
        "{seen}"
    );
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    assert!(asked[0].get("tools").is_none(), "{seen}");

    // Refused, or not supported: a skill_error saying so.
    let seen = run(&python, &config, "refuse", "digest");
    assert_eq!(seen["is_error"], true, "{seen}");
    let text = seen["text"].as_str().unwrap();
    assert!(text.starts_with("skill_error"), "{seen}");
    assert!(text.contains("declined to run the model"), "{seen}");
    let seen = run(&python, &config, "none", "digest");
    assert_eq!(seen["is_error"], true, "{seen}");
    let text = seen["text"].as_str().unwrap();
    assert!(text.starts_with("skill_error"), "{seen}");
    assert!(text.contains("does not support sampling"), "{seen}");
    assert_eq!(seen["asked"], json!([]));
}

#[test]
fn a_skill_naming_mcp_client_runs_on_the_clients_model_beside_a_configured_provider() {
    let test = "a_skill_naming_mcp_client_runs_on_the_clients_model_beside_a_configured_provider";
    let Some(python) = python(test) else { return };
    let model = llm_support::Server::start(vec![llm_support::text("from the host's provider")]);
    let ws = llm_support::Workspace::new();
    ws.skill(
        "on_client",
        &DIGEST.replace("name: digest", "name: on_client").replace(
            "tools: [read_file]\n",
            "llm_config: { provider: mcp-client, model: small, max_tokens: 300 }\n",
        ),
    );
    let config = ws.config(&llm_support::provider("scripted", "openai", &model, ""));
    let seen = run(&python, &config, "plain", "on_client");
    assert_eq!(seen["is_error"], false, "{seen}");
    assert_eq!(
        seen["text"], "Summary from the client: nothing read",
        "{seen}"
    );
    let asked = &seen["asked"][0];
    assert_eq!(asked["maxTokens"], 300, "{seen}");
    assert_eq!(
        asked["modelPreferences"]["hints"][0]["name"], "small",
        "{seen}"
    );
    assert!(
        model.received().is_empty(),
        "the host's provider was not asked"
    );
    // The key of the host's provider is in no request to the client.
    assert!(!seen.to_string().contains(llm_support::FAKE_KEY), "{seen}");
}

#[test]
fn a_skills_missing_arguments_are_asked_of_the_clients_user() {
    let test = "a_skills_missing_arguments_are_asked_of_the_clients_user";
    let Some(python) = python(test) else { return };
    let ws = llm_support::Workspace::new();
    ws.skill(
        "write_about",
        "---\nname: write_about\nversion: 1.0.0\ndescription: Write about a topic\n\
         input_schema:\n  type: object\n  required: [topic]\n  properties:\n    \
         topic: { type: string, description: What to write about }\n---\nWrite about the topic.\n",
    );
    let config = ws.config("");

    // Elicitation declared: the client's user gives the topic, then the
    // skill runs (on the client's model).
    let seen = run_with(&python, &config, "plain+elicit", "write_about", "{}");
    assert_eq!(seen["is_error"], false, "{seen}");
    let form = &seen["forms"][0];
    assert!(
        form["message"].as_str().unwrap().contains("topic"),
        "{seen}"
    );
    assert_eq!(
        form["requestedSchema"]["required"],
        json!(["topic"]),
        "{seen}"
    );
    assert_eq!(
        form["requestedSchema"]["properties"]["topic"]["description"],
        "What to write about"
    );
    assert!(
        seen["asked"][0]["messages"][0]
            .to_string()
            .contains("tides"),
        "the answer reached the skill: {seen}"
    );

    // Declined: a schema_violation naming the field, and no model call.
    let seen = run_with(&python, &config, "plain+decline", "write_about", "{}");
    assert_eq!(seen["is_error"], true, "{seen}");
    let text = seen["text"].as_str().unwrap();
    assert!(
        text.starts_with("schema_violation") && text.contains("topic") && text.contains("declined"),
        "{seen}"
    );
    assert_eq!(seen["asked"], json!([]));

    // No elicitation: nobody is asked, the call fails at once naming the field.
    let seen = run_with(&python, &config, "plain", "write_about", "{}");
    assert_eq!(seen["is_error"], true, "{seen}");
    let text = seen["text"].as_str().unwrap();
    assert!(
        text.starts_with("schema_violation") && text.contains("topic"),
        "{seen}"
    );
    assert_eq!(seen["forms"], json!([]));
}
