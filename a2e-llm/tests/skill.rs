//! A skill-shaped run as the host wires it: skill messages, options from the skill's
//! fields, `skill/event` payloads through `SkillEventSink`, metadata and error codes.

use crate::common;

use std::sync::Mutex;

use a2e_llm::{
    CancellationToken, LoopOptions, ProviderKind, SkillEventSink, run_loop, run_metadata,
    skill_messages,
};
use a2e_proto::{ErrorCode, EventKind};
use common::*;
use serde_json::{Map, Value, json};

fn chunk(delta: Value, finish: Option<&str>) -> String {
    sse(json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
}

#[tokio::test]
async fn a_streamed_skill_run_emits_skill_events_and_metadata() {
    let server = Server::start(vec![
        Scripted::Sse(vec![
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read_note", "arguments": "{\"name\": \"todo.md\"}"}}]}),
                Some("tool_calls"),
            ),
            sse_done(),
        ]),
        Scripted::Sse(vec![
            chunk(json!({"content": "{\"todos\": "}), None),
            chunk(json!({"content": "[\"write tests\"]}"}), Some("stop")),
            sse(json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 10}})),
            sse_done(),
        ]),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let arguments = json!({"note": "todo.md"}).as_object().unwrap().clone();
    let schema = json!({"type": "object", "required": ["todos"]})
        .as_object()
        .unwrap()
        .clone();
    let request = model.request(
        skill_messages("List the TODOs of a note.", &arguments, &schema),
        vec![],
    );
    let events: Mutex<Vec<(EventKind, Map<String, Value>)>> = Mutex::new(Vec::new());
    let sink = SkillEventSink(|kind, data| events.lock().unwrap().push((kind, data)));
    let options = LoopOptions::for_skill(Some(4), Some(30), 60, true);
    let outcome = run_loop(
        &model.client,
        request,
        &Tools::new(),
        &sink,
        &options,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.text, r#"{"todos": ["write tests"]}"#);

    let events = events.into_inner().unwrap();
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "progress", "status", "log", "log", "progress", "artifact", "artifact", "status"
        ]
    );
    assert_eq!(events[0].1["message"], "turn 1 of at most 4");
    assert_eq!(
        events[2].1["message"],
        r#"tool call read_note {"name": "todo.md"}"#
    );
    assert_eq!(events[3].1["level"], "info");
    assert_eq!(events[4].1["pct"], 25);
    assert_eq!(events[5].1["chunk"], a2e_llm::base64(br#"{"todos": "#));
    assert_eq!(events[5].1["mime"], "text/plain");
    for (_, data) in &events {
        assert!(!Value::Object(data.clone()).to_string().contains(FAKE_KEY));
    }

    let meta = run_metadata(&model, &outcome);
    assert_eq!(
        meta["usage"],
        json!({"input_tokens": 50, "output_tokens": 10, "total_tokens": 60})
    );
    assert_eq!(meta["turns"], 2);
    assert_eq!(meta["model"], "test-model");

    let sent = server.received();
    let system = sent[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.starts_with("List the TODOs of a note."));
    assert!(system.contains(r#""required":["todos"]"#));
    assert!(
        sent[0].body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("\"note\": \"todo.md\"")
    );
}

#[tokio::test]
async fn max_turns_maps_to_skill_error() {
    let server = Server::start(vec![Scripted::json(openai_tools(&[(
        "c1",
        "add",
        r#"{"a": 1, "b": 1}"#,
    )]))]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let err = run_loop(
        &model.client,
        model.request(skill_messages("Add.", &Map::new(), &Map::new()), vec![]),
        &Tools::new(),
        &Collect::default(),
        &LoopOptions::for_skill(Some(1), None, 60, false),
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::SKILL_ERROR);
    assert_eq!(
        err.to_string(),
        "max_turns reached: the model still called tools after 1 turns"
    );
}
