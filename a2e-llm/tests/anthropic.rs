//! Anthropic Messages provider and the loop, end to end against a scripted server.

use crate::common;

use a2e_llm::{
    CancellationToken, ChatProvider, LlmError, LoopEvent, LoopOptions, Message, NoDeltas,
    ProviderKind, ToolChoice, run_loop,
};
use common::*;
use serde_json::json;

fn opening() -> Vec<Message> {
    vec![
        Message::system("Summarise notes."),
        Message::user("Summarise todo.md and add 1 and 2."),
    ]
}

#[tokio::test]
async fn tool_loop_sends_messages_api_shapes() {
    let server = Server::start(vec![
        Scripted::json(anthropic_tools(&[
            ("toolu_1", "read_note", json!({"name": "todo.md"})),
            ("toolu_2", "add", json!({"a": 1, "b": 2})),
        ])),
        Scripted::json(anthropic_text("One TODO; 1 + 2 = 3.")),
    ]);
    let mut c = config(ProviderKind::Anthropic, &server);
    c.max_tokens = Some(256);
    let model = model(c);
    let tools = Tools::new();
    let sink = Collect::default();
    let outcome = run_loop(
        &model.client,
        model.request(opening(), vec![]),
        &tools,
        &sink,
        &LoopOptions {
            first_tool_choice: ToolChoice::Required,
            ..LoopOptions::default()
        },
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.text, "One TODO; 1 + 2 = 3.");
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.usage.input_tokens, 43);
    assert_eq!(outcome.usage.output_tokens, 13);
    assert_eq!(tools.calls().len(), 2);

    let got = server.received();
    assert_eq!(got[0].path, "/v1/messages");
    assert_eq!(got[0].headers["x-api-key"], FAKE_KEY);
    assert_eq!(got[0].headers["anthropic-version"], "2023-06-01");
    assert!(!got[0].headers.contains_key("authorization"));
    let first = &got[0].body;
    assert_eq!(first["model"], "test-model");
    assert_eq!(first["max_tokens"], 256);
    assert_eq!(first["system"], "Summarise notes.");
    assert_eq!(first["messages"].as_array().unwrap().len(), 1);
    assert_eq!(first["messages"][0]["role"], "user");
    assert_eq!(first["tools"][0]["name"], "add");
    assert_eq!(first["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(first["tool_choice"], json!({"type": "any"}));

    let second = got[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        second.len(),
        3,
        "user, assistant, one user turn of both results"
    );
    assert_eq!(second[1]["role"], "assistant");
    assert_eq!(
        second[1]["content"][0],
        json!({"type": "text", "text": "Let me look."})
    );
    assert_eq!(
        second[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "read_note", "input": {"name": "todo.md"}})
    );
    assert_eq!(second[2]["role"], "user");
    assert_eq!(
        second[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1",
            "content": "- buy milk\n- TODO: write tests", "is_error": false})
    );
    assert_eq!(second[2]["content"][1]["tool_use_id"], "toolu_2");
    assert_eq!(second[2]["content"][1]["content"], "3.0");
    assert_eq!(got[1].body["tool_choice"], json!({"type": "auto"}));
    assert!(!sink.all_text().contains(FAKE_KEY));
}

#[tokio::test]
async fn streamed_tool_use_and_text_assemble() {
    let server = Server::start(vec![
        Scripted::Sse(vec![
            anthropic_event(
                "message_start",
                json!({"type": "message_start", "message": {"id": "m", "model": "test-model",
                    "content": [], "usage": {"input_tokens": 21, "output_tokens": 1}}}),
            ),
            anthropic_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Adding."}}),
            ),
            anthropic_event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            anthropic_event("ping", json!({"type": "ping"})),
            anthropic_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1,
                    "content_block": {"type": "tool_use", "id": "toolu_s", "name": "add", "input": {}}}),
            ),
            anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 4"}}),
            ),
            anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ", \"b\": 5}"}}),
            ),
            anthropic_event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
            anthropic_event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 17}}),
            ),
            anthropic_event("message_stop", json!({"type": "message_stop"})),
        ]),
        Scripted::Sse(vec![
            anthropic_event(
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 40, "output_tokens": 1}}}),
            ),
            anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "It is 9."}}),
            ),
            anthropic_event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
            ),
            anthropic_event("message_stop", json!({"type": "message_stop"})),
        ]),
    ]);
    let model = model(config(ProviderKind::Anthropic, &server));
    let tools = Tools::new();
    let sink = Collect::default();
    let outcome = run_loop(
        &model.client,
        model.request(opening(), vec![]),
        &tools,
        &sink,
        &LoopOptions {
            stream: true,
            ..LoopOptions::default()
        },
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.text, "It is 9.");
    assert_eq!(
        tools.calls(),
        vec![("add".to_owned(), json!({"a": 4, "b": 5}))]
    );
    assert_eq!(outcome.usage.input_tokens, 61);
    assert_eq!(outcome.usage.output_tokens, 21);
    let got = server.received();
    assert_eq!(got[0].body["stream"], true);
    let replay = &got[1].body["messages"][1]["content"];
    assert_eq!(replay[0]["text"], "Adding.");
    assert_eq!(replay[1]["input"], json!({"a": 4, "b": 5}));
    let texts: Vec<String> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            LoopEvent::TextDelta { text } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["Adding.", "It is 9."]);
}

#[tokio::test(start_paused = true)]
async fn overloaded_529_then_success() {
    let server = Server::start(vec![
        Scripted::status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
        ),
        Scripted::json(anthropic_text("fine now")),
    ]);
    let model = model(config(ProviderKind::Anthropic, &server));
    let started = tokio::time::Instant::now();
    let answer = model
        .client
        .chat(
            &model.request(opening(), vec![]),
            &mut NoDeltas,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(answer.content, "fine now");
    assert_eq!(started.elapsed().as_secs(), 1);
}

#[tokio::test]
async fn malformed_tool_input_from_history_stays_a_valid_transcript() {
    // An OpenAI-style raw argument string that is not JSON, replayed to Anthropic, goes
    // out as an object (`_raw`) rather than breaking the request.
    let server = Server::start(vec![Scripted::json(anthropic_text("ok"))]);
    let model = model(config(ProviderKind::Anthropic, &server));
    let mut messages = opening();
    messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![a2e_llm::ModelToolCall {
            id: "t1".into(),
            name: "add".into(),
            arguments: "{\"a\": 1,".into(),
        }],
    });
    messages.push(Message::Tool {
        tool_call_id: "t1".into(),
        name: "add".into(),
        content: "error: not valid JSON".into(),
        is_error: true,
    });
    model
        .client
        .chat(
            &model.request(messages, vec![]),
            &mut NoDeltas,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let body = &server.received()[0].body;
    assert_eq!(
        body["messages"][1]["content"][0]["input"],
        json!({"_raw": "{\"a\": 1,"})
    );
    assert_eq!(body["messages"][2]["content"][0]["is_error"], true);
}

#[tokio::test]
async fn anthropic_errors_never_echo_the_key() {
    let echo =
        format!(r#"{{"type":"error","error":{{"message":"invalid x-api-key {FAKE_KEY}"}}}}"#);
    let server = Server::start(vec![
        Scripted::status(401, &echo),
        Scripted::Sse(vec![anthropic_event(
            "error",
            json!({"type": "error", "error": {"message": format!("bad key {FAKE_KEY}")}}),
        )]),
    ]);
    let model = model(config(ProviderKind::Anthropic, &server));
    let mut request = model.request(opening(), vec![]);
    let cancel = CancellationToken::new();
    let e1 = model
        .client
        .chat(&request, &mut NoDeltas, &cancel)
        .await
        .unwrap_err();
    assert!(matches!(e1, LlmError::Status { status: 401, .. }));
    request.stream = true;
    let e2 = model
        .client
        .chat(&request, &mut NoDeltas, &cancel)
        .await
        .unwrap_err();
    for e in [e1, e2] {
        let text = format!("{e} {e:?}");
        assert!(!text.contains(FAKE_KEY), "{text}");
        assert!(text.contains("[REDACTED]"), "{text}");
    }
}
