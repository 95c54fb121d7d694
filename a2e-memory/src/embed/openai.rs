//! An OpenAI-compatible `/embeddings` client.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::Embedder;
use super::http::{Endpoint, post_json};
use crate::error::EmbedError;

/// Longest vector accepted from a provider.
pub const MAX_DIMENSIONS: usize = 16_384;

/// Where and how to ask for embeddings: the same provider settings as a chat
/// model (base URL such as `https://api.openai.com/v1`, key, model name).
#[derive(Clone)]
pub struct EmbedderConfig {
    /// Base URL; `/embeddings` is appended.
    pub base_url: String,
    /// Bearer token, if the provider needs one. Never printed.
    pub api_key: Option<String>,
    /// Model name, e.g. `text-embedding-3-small`.
    pub model: String,
    /// Per-request time limit (default 30 s).
    pub timeout: Duration,
    /// Most texts per request (default 64).
    pub batch_size: usize,
    /// Largest response body accepted (default 64 MiB).
    pub max_response_bytes: usize,
}

impl EmbedderConfig {
    /// A configuration with the defaults.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            timeout: Duration::from_secs(30),
            batch_size: 64,
            max_response_bytes: 64 * 1024 * 1024,
        }
    }

    /// The same configuration with an API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }
}

impl fmt::Debug for EmbedderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbedderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("batch_size", &self.batch_size)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

/// Embeddings from an OpenAI-compatible `POST {base_url}/embeddings`.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    config: EmbedderConfig,
    endpoint: Endpoint,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.url)
    }
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f64>,
}

impl OpenAiEmbedder {
    /// Checks the configuration (URL, batch size) and builds the client.
    pub fn new(config: EmbedderConfig) -> Result<Self, EmbedError> {
        let endpoint =
            Endpoint::parse(&config.base_url, "/embeddings").map_err(EmbedError::Config)?;
        if config.model.is_empty() {
            return Err(EmbedError::Config("model is empty".into()));
        }
        if config.batch_size == 0 {
            return Err(EmbedError::Config("batch_size is 0".into()));
        }
        Ok(Self { config, endpoint })
    }

    /// Removes the key from a message, wherever a provider echoed it.
    fn redact(&self, text: String) -> String {
        match self.config.api_key.as_deref() {
            Some(key) if !key.is_empty() && text.contains(key) => text.replace(key, "[redacted]"),
            _ => text,
        }
    }

    async fn embed_chunk(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = serde_json::to_vec(&serde_json::json!({
            "model": self.config.model,
            "input": texts,
            "encoding_format": "float",
        }))
        .map_err(|e| EmbedError::Config(format!("request body: {e}")))?;
        let call = post_json(
            &self.endpoint,
            self.config.api_key.as_deref(),
            body,
            self.config.max_response_bytes,
        );
        let (status, bytes) = tokio::time::timeout(self.config.timeout, call)
            .await
            .map_err(|_| {
                EmbedError::Transport(format!("no answer within {:?}", self.config.timeout))
            })?
            .map_err(|e| EmbedError::Transport(self.redact(e)))?;
        if !(200..300).contains(&status) {
            let excerpt: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
            return Err(EmbedError::Status {
                status,
                body: self.redact(excerpt),
            });
        }
        decode(&bytes, texts.len())
    }
}

/// The vectors of a response, in input order.
fn decode(bytes: &[u8], expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let resp: Response = serde_json::from_slice(bytes)
        .map_err(|e| EmbedError::Decode(format!("not an embeddings response: {e}")))?;
    if resp.data.len() != expected {
        return Err(EmbedError::Decode(format!(
            "{} vectors for {expected} inputs",
            resp.data.len()
        )));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
    let mut dims = None;
    for (pos, item) in resp.data.into_iter().enumerate() {
        let index = item.index.unwrap_or(pos);
        let len = item.embedding.len();
        if len == 0 || len > MAX_DIMENSIONS {
            return Err(EmbedError::Decode(format!(
                "data[{pos}]: {len} dimensions (1 to {MAX_DIMENSIONS})"
            )));
        }
        if *dims.get_or_insert(len) != len {
            return Err(EmbedError::Decode(format!(
                "data[{pos}]: {len} dimensions, others have {dims:?}"
            )));
        }
        let vector: Vec<f32> = item.embedding.iter().map(|&x| x as f32).collect();
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(EmbedError::Decode(format!(
                "data[{pos}]: a component is not a finite f32"
            )));
        }
        match out.get_mut(index) {
            Some(slot @ None) => *slot = Some(vector),
            Some(Some(_)) => {
                return Err(EmbedError::Decode(format!(
                    "data[{pos}]: index {index} repeated"
                )));
            }
            None => {
                return Err(EmbedError::Decode(format!(
                    "data[{pos}]: index {index} out of range"
                )));
            }
        }
    }
    out.into_iter()
        .map(|v| v.ok_or_else(|| EmbedError::Decode("an index is missing".into())))
        .collect()
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.config.model
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.config.batch_size) {
            out.extend(self.embed_chunk(chunk).await?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_in_index_order_and_refuses_bad_shapes() {
        let ok = br#"{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}]}"#;
        assert_eq!(decode(ok, 2).unwrap(), vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        let bad: &[(&[u8], &str)] = &[
            (b"nope", "not an embeddings response"),
            (br#"{"data":[]}"#, "0 vectors for 1 inputs"),
            (br#"{"data":[{"embedding":[]}]}"#, "0 dimensions"),
            (br#"{"data":[{"embedding":[1e300]}]}"#, "not a finite f32"),
            (br#"{"data":[{"index":5,"embedding":[1]}]}"#, "out of range"),
        ];
        for (body, want) in bad {
            let err = decode(body, 1).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
        let dup = br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#;
        assert!(decode(dup, 2).unwrap_err().to_string().contains("repeated"));
        let mixed = br#"{"data":[{"embedding":[1]},{"embedding":[1,2]}]}"#;
        assert!(
            decode(mixed, 2)
                .unwrap_err()
                .to_string()
                .contains("dimensions")
        );
    }

    #[test]
    fn config_is_checked_and_key_never_printed() {
        let cfg = EmbedderConfig::new("http://127.0.0.1:1/v1", "m").api_key("sk-secret-123");
        assert!(!format!("{cfg:?}").contains("sk-secret-123"));
        let emb = OpenAiEmbedder::new(cfg).unwrap();
        assert!(!format!("{emb:?}").contains("sk-secret-123"));
        assert_eq!(emb.redact("echo sk-secret-123".into()), "echo [redacted]");
        for bad in ["ftp://x/v1", "not a url", "/v1"] {
            assert!(
                matches!(
                    OpenAiEmbedder::new(EmbedderConfig::new(bad, "m")),
                    Err(EmbedError::Config(_))
                ),
                "{bad}"
            );
        }
    }
}
