//! Logs at TRACE level never carry the key, while a provider is retried with error
//! bodies that quote it. In its own test binary: `tracing` caches per-callsite interest
//! process-wide, and a test of another file running at the same time without a
//! subscriber could leave the retry callsite disabled for this one.

mod common;

use std::sync::Arc;

use a2e_llm::{CancellationToken, ChatProvider, Message, NoDeltas, ProviderKind};
use common::*;

fn opening() -> Vec<Message> {
    vec![
        Message::system("You answer with tools."),
        Message::user("Add 1 and 2."),
    ]
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct LogBuffer(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn retry_logs_never_carry_the_key() {
    let echo = format!(r#"{{"error": {{"message": "rate limited for key {FAKE_KEY}"}}}}"#);
    let server = Server::start(vec![
        Scripted::status(429, &echo),
        Scripted::status(500, &echo),
        Scripted::status(503, &echo),
    ]);
    let logs = LogBuffer::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
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
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("retrying model request"), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    assert!(!text.contains(FAKE_KEY), "{text}");
    assert!(!format!("{err} {err:?}").contains(FAKE_KEY));
}
