//! The client enum over both provider implementations: the one type the
//! configuration builds and callers hold, above the providers it chooses
//! between.

use tokio_util::sync::CancellationToken;

use crate::anthropic::AnthropicProvider;
use crate::error::LlmError;
use crate::openai::OpenAiProvider;
use crate::provider::ChatProvider;
use crate::types::{ChatRequest, ChatResponse, DeltaSink};

/// Either provider implementation, as built from a
/// [`ProviderConfig`](crate::ProviderConfig). Cheap to clone (the HTTP client is shared).
#[derive(Debug, Clone)]
pub enum ModelClient {
    /// OpenAI-compatible Chat Completions.
    OpenAi(OpenAiProvider),
    /// Anthropic Messages.
    Anthropic(AnthropicProvider),
}

impl ChatProvider for ModelClient {
    fn name(&self) -> &str {
        match self {
            ModelClient::OpenAi(p) => p.name(),
            ModelClient::Anthropic(p) => p.name(),
        }
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        deltas: &mut dyn DeltaSink,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        match self {
            ModelClient::OpenAi(p) => p.chat(request, deltas, cancel).await,
            ModelClient::Anthropic(p) => p.chat(request, deltas, cancel).await,
        }
    }
}

impl ModelClient {
    /// One chat completion, as [`ChatProvider::chat`], with more request
    /// headers next to the configured ones: the caller's W3C `traceparent`
    /// and `tracestate`, so that the provider (or a gateway before it) joins
    /// the caller's trace. An entry that is not a valid header is left out.
    pub async fn chat_with_headers(
        &self,
        request: &ChatRequest,
        deltas: &mut dyn DeltaSink,
        cancel: &CancellationToken,
        headers: &[(&str, &str)],
    ) -> Result<ChatResponse, LlmError> {
        match self {
            ModelClient::OpenAi(p) => p.chat_with_headers(request, deltas, cancel, headers).await,
            ModelClient::Anthropic(p) => {
                p.chat_with_headers(request, deltas, cancel, headers).await
            }
        }
    }
}
