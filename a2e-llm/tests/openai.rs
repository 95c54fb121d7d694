//! OpenAI-compatible provider and the loop, end to end against a scripted server.

use crate::common;

use a2e_llm::{
    CancellationToken, ChatProvider, Delta, FinishReason, LoopError, LoopEvent, LoopOptions,
    Message, NoDeltas, ProviderKind, ToolChoice, run_loop,
};
use common::*;
use serde_json::json;

fn opening() -> Vec<Message> {
    vec![
        Message::system("You answer with tools."),
        Message::user("What is 2 + 3? Then read todo.md."),
    ]
}

#[tokio::test]
async fn plain_completion_sends_model_messages_and_bearer_key() {
    let server = Server::start(vec![Scripted::json(openai_text("Hello there."))]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let mut request = model.request(opening(), vec![]);
    request.temperature = Some(0.2);
    request.max_tokens = Some(64);
    let answer = model
        .client
        .chat(&request, &mut NoDeltas, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(answer.content, "Hello there.");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage.input_tokens, 11);
    assert_eq!(answer.usage.output_tokens, 7);
    let got = server.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, "/v1/chat/completions");
    assert_eq!(
        got[0].headers["authorization"],
        format!("Bearer {FAKE_KEY}")
    );
    let body = &got[0].body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You answer with tools."})
    );
    assert_eq!(body["messages"][1]["role"], "user");
    assert!(body.get("tools").is_none());
    assert!(body.get("stream").is_none());
}

#[tokio::test]
async fn multi_turn_loop_runs_tools_and_answers_results_back() {
    let server = Server::start(vec![
        Scripted::json(openai_tools(&[
            ("call_1", "add", r#"{"a": 2, "b": 3}"#),
            ("call_2", "read_note", r#"{"name": "todo.md"}"#),
        ])),
        Scripted::json(openai_text("2 + 3 = 5; one TODO: write tests.")),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let tools = Tools::new();
    let sink = Collect::default();
    let outcome = run_loop(
        &model.client,
        model.request(opening(), vec![]),
        &tools,
        &sink,
        &LoopOptions::default(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.text, "2 + 3 = 5; one TODO: write tests.");
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.tool_calls, 2);
    assert_eq!(outcome.usage.input_tokens, 31);
    assert_eq!(outcome.usage.output_tokens, 12);
    assert_eq!(
        tools.calls(),
        vec![
            ("add".to_owned(), json!({"a": 2, "b": 3})),
            ("read_note".to_owned(), json!({"name": "todo.md"}))
        ]
    );

    let got = server.received();
    assert_eq!(got.len(), 2);
    let first = &got[0].body;
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["function"]["name"], "add");
    assert_eq!(
        first["tools"][1]["function"]["parameters"]["required"],
        json!(["name"])
    );
    assert_eq!(first["tool_choice"], "auto");
    let second = &got[1].body["messages"];
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(second[2]["content"], "");
    assert_eq!(second[2]["tool_calls"][1]["function"]["name"], "read_note");
    assert_eq!(
        second[3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "5.0"})
    );
    assert_eq!(second[4]["tool_call_id"], "call_2");
    assert_eq!(second[4]["content"], "- buy milk\n- TODO: write tests");

    let events = sink.events();
    assert!(matches!(
        events[0],
        LoopEvent::TurnStarted {
            turn: 1,
            max_turns: 10
        }
    ));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, LoopEvent::ToolCall { name, .. } if name == "add"))
    );
    assert!(events.iter().any(
        |e| matches!(e, LoopEvent::ToolResult { name, is_error: false, content, .. } if name == "add" && content == "5.0")
    ));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, LoopEvent::Usage { turn: 2, total, .. } if total.total() == 43))
    );
    assert!(!sink.all_text().contains(FAKE_KEY));
}

#[tokio::test]
async fn streamed_text_and_tool_call_fragments_assemble() {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        sse(
            json!({"id": "s", "object": "chat.completion.chunk", "model": "test-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let server = Server::start(vec![
        Scripted::Sse(vec![
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "add", "arguments": ""}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\": 40,"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"b\": 2}"}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
            sse(
                json!({"id": "s", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}}),
            ),
            sse_done(),
        ]),
        Scripted::Sse(vec![
            chunk(json!({"content": "The answer"}), None),
            ": keep-alive comment\n\n".to_owned(),
            chunk(json!({"content": " is 42."}), None),
            chunk(json!({}), Some("stop")),
            sse_done(),
        ]),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let tools = Tools::new();
    let sink = Collect::default();
    let options = LoopOptions {
        stream: true,
        ..LoopOptions::default()
    };
    let outcome = run_loop(
        &model.client,
        model.request(opening(), vec![]),
        &tools,
        &sink,
        &options,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.text, "The answer is 42.");
    assert_eq!(
        tools.calls(),
        vec![("add".to_owned(), json!({"a": 40, "b": 2}))]
    );
    assert_eq!(outcome.usage.input_tokens, 9);
    let got = server.received();
    assert_eq!(got[0].body["stream"], true);
    assert_eq!(
        got[0].body["stream_options"],
        json!({"include_usage": true})
    );
    let deltas: Vec<String> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            LoopEvent::TextDelta { text } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, vec!["The answer", " is 42."]);
}

#[tokio::test]
async fn stream_deltas_reach_the_callback_in_order() {
    let server = Server::start(vec![Scripted::Sse(vec![
        sse(json!({"choices": [{"index": 0, "delta": {"content": "a"}}]})),
        sse(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "add", "arguments": "{}"}}]}}]}),
        ),
        sse_done(),
    ])]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let mut request = model.request(opening(), vec![]);
    request.stream = true;
    let mut seen = Vec::new();
    let answer = model
        .client
        .chat(
            &request,
            &mut |d: Delta| seen.push(d),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        seen,
        vec![
            Delta::Text("a".into()),
            Delta::ToolCallStart {
                index: 0,
                id: "c".into(),
                name: "add".into()
            },
            Delta::ToolCallArguments {
                index: 0,
                fragment: "{}".into()
            },
        ]
    );
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
}

#[tokio::test]
async fn malformed_tool_arguments_are_answered_as_an_error_and_the_loop_goes_on() {
    let server = Server::start(vec![
        Scripted::json(openai_tools(&[(
            "c1",
            "read_note",
            r#"{"path" :"Babayon:2017-12-31"#,
        )])),
        Scripted::json(openai_tools(&[(
            "c2",
            "read_note",
            r#"{"path": "todo.md"}"#,
        )])),
        Scripted::json(openai_tools(&[("c3", "read_note", "[1, 2]")])),
        Scripted::json(openai_text("I could not read it.")),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let tools = Tools::new();
    let sink = Collect::default();
    let outcome = run_loop(
        &model.client,
        model.request(opening(), vec![]),
        &tools,
        &sink,
        &LoopOptions::default(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.turns, 4);
    assert!(tools.calls().is_empty(), "no tool ran with bad arguments");
    let got = server.received();
    let answer = |i: usize| {
        got[i].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone()
    };
    let first = answer(1);
    assert_eq!(first["role"], "tool");
    assert!(
        first["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{first}"
    );
    let second = answer(2);
    assert!(
        second["content"]
            .as_str()
            .unwrap()
            .contains("\"name\" is a required property"),
        "{second}"
    );
    let third = answer(3);
    assert!(
        third["content"]
            .as_str()
            .unwrap()
            .contains("must be a JSON object, got an array"),
        "{third}"
    );
}

#[tokio::test]
async fn tools_not_offered_are_refused_to_the_model() {
    let server = Server::start(vec![
        Scripted::json(openai_tools(&[("c1", "delete_everything", "{}")])),
        Scripted::json(openai_text("ok")),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let tools = Tools::new();
    let sink = Collect::default();
    run_loop(
        &model.client,
        model.request(opening(), vec![]),
        &tools,
        &sink,
        &LoopOptions::default(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(tools.calls().is_empty());
    let got = server.received();
    let last = got[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .starts_with("refused: tool \"delete_everything\""),
        "{last}"
    );
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(e, LoopEvent::ToolResult { refused: true, .. }))
    );
}

#[tokio::test]
async fn max_turns_is_a_distinct_error_naming_the_limit() {
    let server = Server::start(vec![
        Scripted::json(openai_tools(&[("c1", "add", r#"{"a":1,"b":2}"#)])),
        Scripted::json(openai_tools(&[("c2", "add", r#"{"a":1,"b":2}"#)])),
        Scripted::json(openai_text("never asked")),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let options = LoopOptions {
        max_turns: 2,
        first_tool_choice: ToolChoice::Tool("add".into()),
        ..LoopOptions::default()
    };
    let err = run_loop(
        &model.client,
        model.request(opening(), vec![]),
        &Tools::new(),
        &Collect::default(),
        &options,
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, LoopError::MaxTurns { limit: 2, usage } if usage.input_tokens == 40),
        "{err}"
    );
    assert!(err.to_string().contains("max_turns"));
    let got = server.received();
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0].body["tool_choice"],
        json!({"type": "function", "function": {"name": "add"}})
    );
    assert_eq!(got[1].body["tool_choice"], "auto");
}

#[tokio::test]
async fn the_key_never_shows_in_errors_or_debug() {
    let echo = format!(r#"{{"error": {{"message": "Incorrect API key provided: {FAKE_KEY}"}}}}"#);
    let server = Server::start(vec![
        Scripted::status(401, &echo),
        Scripted::json(json!({"choices": "not a list", "note": FAKE_KEY})),
    ]);
    let c = config(ProviderKind::OpenAi, &server);
    assert!(!format!("{c:?}").contains(FAKE_KEY));
    let model = model(c);
    assert!(!format!("{model:?}").contains(FAKE_KEY));
    let request = model.request(opening(), vec![]);
    assert!(!format!("{request:?}").contains(FAKE_KEY));
    for _ in 0..2 {
        let err = model
            .client
            .chat(&request, &mut NoDeltas, &CancellationToken::new())
            .await
            .unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains(FAKE_KEY), "{text}");
        assert!(
            text.contains("[REDACTED]") || text.contains("malformed"),
            "{text}"
        );
    }
    // The key did go out, in the header only.
    let got = server.received();
    assert_eq!(
        got[0].headers["authorization"],
        format!("Bearer {FAKE_KEY}")
    );
    assert!(!got[0].body.to_string().contains(FAKE_KEY));
}

#[tokio::test]
async fn malformed_bodies_are_errors_naming_what_is_wrong() {
    let server = Server::start(vec![
        Scripted::status(200, "this is not json"),
        Scripted::json(json!({"choices": []})),
        Scripted::Sse(vec!["data: {not json\n\n".into()]),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let mut request = model.request(opening(), vec![]);
    let cancel = CancellationToken::new();
    let e1 = model
        .client
        .chat(&request, &mut NoDeltas, &cancel)
        .await
        .unwrap_err();
    assert!(e1.to_string().contains("not a chat completion"), "{e1}");
    let e2 = model
        .client
        .chat(&request, &mut NoDeltas, &cancel)
        .await
        .unwrap_err();
    assert!(e2.to_string().contains("choices"), "{e2}");
    request.stream = true;
    let e3 = model
        .client
        .chat(&request, &mut NoDeltas, &cancel)
        .await
        .unwrap_err();
    assert!(e3.to_string().contains("stream chunk"), "{e3}");
}
