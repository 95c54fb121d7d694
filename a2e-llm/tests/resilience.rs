//! Retries, timeouts, cancellation and size bounds of the providers and the loop, against
//! a scripted OpenAI-compatible server (tokio's paused clock where time matters).

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use a2e_llm::{
    CancellationToken, ChatProvider, Delta, LlmError, LoopError, LoopOptions, Message, NoDeltas,
    ProviderKind, run_loop,
};
use common::*;
use serde_json::json;

fn opening() -> Vec<Message> {
    vec![
        Message::system("You answer with tools."),
        Message::user("Add 1 and 2."),
    ]
}

#[tokio::test(start_paused = true)]
async fn a_429_is_retried_after_retry_after() {
    let server = Server::start(vec![
        Scripted::Body {
            status: 429,
            body: r#"{"error": {"message": "slow down"}}"#.into(),
            headers: vec![("retry-after", "3".into())],
        },
        Scripted::json(openai_text("after the wait")),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
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
    assert_eq!(answer.content, "after the wait");
    assert_eq!(server.received().len(), 2);
    // The paused clock advanced by exactly the server's Retry-After, not the 1 s backoff.
    assert_eq!(started.elapsed().as_secs(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_500_is_retried_with_backoff_and_a_400_is_not() {
    let server = Server::start(vec![
        Scripted::status(500, "boom"),
        Scripted::status(503, "still down"),
        Scripted::json(openai_text("third time")),
        Scripted::status(400, "bad request"),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let started = tokio::time::Instant::now();
    let request = model.request(opening(), vec![]);
    let answer = model
        .client
        .chat(&request, &mut NoDeltas, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(answer.content, "third time");
    // Backoff 1 s, then 2 s.
    assert_eq!(started.elapsed().as_secs(), 3);
    let err = model
        .client
        .chat(&request, &mut NoDeltas, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 400, .. }), "{err}");
    assert_eq!(server.received().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn retries_give_up_after_the_limit() {
    let server = Server::start(vec![
        Scripted::status(502, "a"),
        Scripted::status(502, "b"),
        Scripted::status(502, "c"),
        Scripted::json(openai_text("never reached")),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let err = model
        .client
        .chat(
            &model.request(opening(), vec![]),
            &mut NoDeltas,
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Status { status: 502, ref body, .. } if body == "c"),
        "{err}"
    );
    assert_eq!(server.left(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_hanging_server_hits_the_request_timeout() {
    let server = Server::start(vec![Scripted::Hang]);
    let mut c = config(ProviderKind::OpenAi, &server);
    c.timeout_seconds = Some(30);
    let model = model(c);
    let started = tokio::time::Instant::now();
    let err = model
        .client
        .chat(
            &model.request(opening(), vec![]),
            &mut NoDeltas,
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Timeout { after, .. } if after == Duration::from_secs(30)),
        "{err}"
    );
    assert_eq!(started.elapsed().as_secs(), 30);
}

#[tokio::test(start_paused = true)]
async fn the_loop_timeout_bounds_everything() {
    let server = Server::start(vec![
        Scripted::json(openai_tools(&[("c1", "add", r#"{"a":1,"b":1}"#)])),
        Scripted::Hang,
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let options = LoopOptions {
        timeout: Some(Duration::from_secs(45)),
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
    assert!(matches!(err, LoopError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("timeout_seconds"), "{err}");
}

#[tokio::test]
async fn cancelling_a_stream_closes_the_connection() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = Server::start(vec![Scripted::SseThenWait(
        vec![sse(
            json!({"choices": [{"index": 0, "delta": {"content": "partial"}}]}),
        )],
        dropped.clone(),
    )]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let mut request = model.request(opening(), vec![]);
    request.stream = true;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let err = model
        .client
        .chat(&request, &mut move |_d: Delta| trigger.cancel(), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Cancelled), "{err}");
    // The server notices the closed connection when its next keep-alive write fails.
    for _ in 0..500 {
        if dropped.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the server's stream was never dropped");
}

#[tokio::test]
async fn a_stream_cut_off_mid_answer_is_an_error() {
    let server = Server::start(vec![Scripted::Sse(vec![sse(
        json!({"choices": [{"index": 0, "delta": {"content": "half an ans"}}]}),
    )])]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let mut request = model.request(opening(), vec![]);
    request.stream = true;
    let err = model
        .client
        .chat(&request, &mut NoDeltas, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("stream ended before the answer was complete"),
        "{err}"
    );
}

/// A tool that cancels the run it is part of, as a host does when the caller goes away.
struct CancelsRun(CancellationToken);

impl a2e_llm::ToolExecutor for CancelsRun {
    fn tools(&self) -> Vec<a2e_llm::ToolSpec> {
        Tools::new().tools()
    }

    async fn call_tool(
        &self,
        _name: &str,
        _arguments: serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        self.0.cancel();
        std::future::pending::<()>().await;
        unreachable!()
    }
}

#[tokio::test]
async fn cancelling_the_loop_during_a_tool_call_ends_it() {
    let server = Server::start(vec![
        Scripted::json(openai_tools(&[("c1", "add", r#"{"a": 1, "b": 2}"#)])),
        Scripted::json(openai_text("never asked")),
    ]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let cancel = CancellationToken::new();
    let err = run_loop(
        &model.client,
        model.request(opening(), vec![]),
        &CancelsRun(cancel.clone()),
        &Collect::default(),
        &LoopOptions::default(),
        &cancel,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, LoopError::Cancelled), "{err}");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn an_oversized_stream_event_is_refused() {
    let huge = format!(
        "data: {{\"choices\": [{{\"delta\": {{\"content\": \"{}\"}}}}]}}",
        "a".repeat(a2e_llm::MAX_EVENT_BYTES + 10)
    );
    let server = Server::start(vec![Scripted::Sse(vec![huge])]);
    let model = model(config(ProviderKind::OpenAi, &server));
    let mut request = model.request(opening(), vec![]);
    request.stream = true;
    let err = model
        .client
        .chat(&request, &mut NoDeltas, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::TooLarge { limit, .. } if limit == a2e_llm::MAX_EVENT_BYTES),
        "{err}"
    );
}
