//! Test helpers: a scripted OpenAI-compatible embeddings server.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};

/// Dimensions of the scripted vectors.
pub const DIMS: usize = 512;
/// The key the server expects.
pub const KEY: &str = "sk-test-4f9a1c";

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Words the scripted model ignores.
const STOP: &[&str] = &[
    "the", "and", "for", "with", "what", "which", "when", "where", "who", "how", "does", "about",
    "this", "that", "are", "is", "on", "in", "of", "to", "at", "a", "an", "do", "i", "she", "he",
    "be", "by", "or", "it", "its", "every", "each", "from", "not", "only",
];

/// Stand-ins for what a trained model knows: words of one meaning share a
/// concept (and so a dimension).
const CONCEPTS: &[(&str, &[&str])] = &[
    (
        "flight",
        &["plane", "planes", "airplane", "flights", "flight", "flying"],
    ),
    ("nut", &["nut", "nuts", "peanut", "peanuts"]),
    ("editor", &["vim", "neovim", "editor", "editors"]),
    ("gift", &["present", "presents", "gift", "gifts"]),
    ("feed", &["feed", "feeding", "fed"]),
    ("allergy", &["allergy", "allergies", "allergic"]),
    ("doctor", &["doctor", "dentist", "vet"]),
];

/// A deterministic vector: a hashed bag of words, stop words dropped, each
/// word first mapped to its concept when it has one.
pub fn embed_text(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if STOP.contains(&word.as_str()) {
            continue;
        }
        let token = CONCEPTS
            .iter()
            .find(|(_, words)| words.contains(&word.as_str()))
            .map_or(word.as_str(), |(concept, _)| concept);
        let h = fnv(token.as_bytes());
        v[(h % DIMS as u64) as usize] += 1.0;
    }
    v
}

/// What the server saw.
#[derive(Default)]
pub struct Seen {
    pub requests: AtomicUsize,
    pub texts: AtomicUsize,
}

async fn embeddings(
    State(seen): State<Arc<Seen>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if auth != format!("Bearer {KEY}") {
        // Echo the header, as careless providers do: the client must redact it.
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": {"message": format!("bad credentials: {auth}")}})),
        );
    }
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => return (StatusCode::BAD_REQUEST, Json(json!({"error": "input"}))),
    };
    seen.requests.fetch_add(1, Ordering::SeqCst);
    seen.texts.fetch_add(inputs.len(), Ordering::SeqCst);
    // Answer in reverse order with explicit indexes, as the API allows.
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": embed_text(t)}))
        .collect();
    (
        StatusCode::OK,
        Json(json!({"object": "list", "data": data, "model": body["model"]})),
    )
}

async fn wrong_count() -> Json<Value> {
    Json(json!({"data": []}))
}

async fn not_json() -> &'static str {
    "<html>gateway error</html>"
}

async fn never() -> &'static str {
    std::future::pending::<()>().await;
    ""
}

/// A running scripted server: `/v1/embeddings` answers; `/wrong-count`,
/// `/not-json` and `/never` (+ `/embeddings`) misbehave.
pub struct EmbeddingServer {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
}

impl EmbeddingServer {
    pub async fn start() -> Self {
        let seen = Arc::new(Seen::default());
        let app = Router::new()
            .route("/v1/embeddings", post(embeddings))
            .route("/wrong-count/embeddings", post(wrong_count))
            .route("/not-json/embeddings", post(not_json))
            .route("/never/embeddings", post(never))
            .with_state(Arc::clone(&seen));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, seen }
    }

    pub fn url(&self, prefix: &str) -> String {
        format!("http://{}{prefix}", self.addr)
    }

    pub fn embedder(&self) -> a2e_memory::OpenAiEmbedder {
        a2e_memory::OpenAiEmbedder::new(
            a2e_memory::EmbedderConfig::new(self.url("/v1"), "hash-512").api_key(KEY),
        )
        .unwrap()
    }
}
