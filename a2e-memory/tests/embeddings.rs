//! The OpenAI-compatible client against a real HTTP server on 127.0.0.1.

use crate::common;

use std::time::Duration;

use a2e_memory::{EmbedError, Embedder, EmbedderConfig, OpenAiEmbedder};
use common::{EmbeddingServer, KEY};

#[tokio::test]
async fn vectors_come_back_in_input_order_in_batches() {
    let server = EmbeddingServer::start().await;
    let mut config = EmbedderConfig::new(server.url("/v1/"), "hash-512").api_key(KEY);
    config.batch_size = 2;
    let embedder = OpenAiEmbedder::new(config).unwrap();
    let texts: Vec<String> = ["alpha", "beta gamma", "delta", "alpha"]
        .map(String::from)
        .to_vec();
    let vectors = embedder.embed(texts.clone()).await.unwrap();
    assert_eq!(vectors.len(), 4);
    for (t, v) in texts.iter().zip(&vectors) {
        assert_eq!(v, &common::embed_text(t));
    }
    assert_eq!(
        server
            .seen
            .requests
            .load(std::sync::atomic::Ordering::SeqCst),
        2
    );
    assert!(embedder.embed(Vec::new()).await.unwrap().is_empty());
}

#[tokio::test]
async fn the_key_never_shows() {
    let server = EmbeddingServer::start().await;
    let wrong = "sk-wrong-9d8c7b6a";
    let embedder =
        OpenAiEmbedder::new(EmbedderConfig::new(server.url("/v1"), "m").api_key(wrong)).unwrap();
    let err = embedder.embed(vec!["x".into()]).await.unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(
        matches!(err, EmbedError::Status { status: 401, .. }),
        "{text}"
    );
    assert!(
        text.contains("bad credentials: Bearer [redacted]"),
        "{text}"
    );
    assert!(!text.contains(wrong), "{text}");
    assert!(!format!("{embedder:?}").contains(wrong));
}

#[tokio::test]
async fn bad_answers_are_named() {
    let server = EmbeddingServer::start().await;
    let at =
        |prefix: &str| OpenAiEmbedder::new(EmbedderConfig::new(server.url(prefix), "m")).unwrap();
    let err = at("/wrong-count")
        .embed(vec!["x".into()])
        .await
        .unwrap_err();
    assert_eq!(err, EmbedError::Decode("0 vectors for 1 inputs".into()));
    let err = at("/not-json").embed(vec!["x".into()]).await.unwrap_err();
    assert!(
        matches!(&err, EmbedError::Decode(m) if m.starts_with("not an embeddings response")),
        "{err}"
    );
    let err = at("/missing").embed(vec!["x".into()]).await.unwrap_err();
    assert!(
        matches!(err, EmbedError::Status { status: 404, .. }),
        "{err}"
    );

    let mut config = EmbedderConfig::new(server.url("/v1"), "m").api_key(KEY);
    config.max_response_bytes = 100;
    let err = OpenAiEmbedder::new(config)
        .unwrap()
        .embed(vec!["x".into()])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EmbedError::Transport(m) if m.contains("limit 100 bytes")),
        "{err}"
    );
}

// The paused clock runs the 30 s default timeout out at once.
#[tokio::test(start_paused = true)]
async fn a_silent_provider_times_out() {
    let server = EmbeddingServer::start().await;
    let config = EmbedderConfig::new(server.url("/never"), "m");
    assert_eq!(config.timeout, Duration::from_secs(30));
    let err = OpenAiEmbedder::new(config)
        .unwrap()
        .embed(vec!["x".into()])
        .await
        .unwrap_err();
    assert_eq!(err, EmbedError::Transport("no answer within 30s".into()));
}

#[tokio::test]
async fn a_closed_port_fails() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let embedder = OpenAiEmbedder::new(EmbedderConfig::new(
        format!("http://127.0.0.1:{port}/v1"),
        "m",
    ))
    .unwrap();
    let err = embedder.embed(vec!["x".into()]).await.unwrap_err();
    assert!(
        matches!(&err, EmbedError::Transport(m) if m.starts_with("connect to 127.0.0.1")),
        "{err}"
    );
}
