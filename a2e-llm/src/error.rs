//! Errors of providers, configuration and the agentic loop.

use std::time::Duration;

use crate::types::Usage;

/// An error talking to a model provider. Texts never contain credentials: response bodies
/// quoted here are cut to a bound and scrubbed of the provider's secrets first.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The provider answered with an HTTP error status (after any retries).
    #[error("provider {provider} answered HTTP {status}: {body}")]
    Status {
        /// Provider name.
        provider: String,
        /// HTTP status code.
        status: u16,
        /// The start of the response body, scrubbed of secrets.
        body: String,
    },
    /// The request could not be sent or the response not read (after any retries).
    #[error("provider {provider}: transport error: {message}")]
    Transport {
        /// Provider name.
        provider: String,
        /// What failed, scrubbed of secrets.
        message: String,
    },
    /// One request took longer than the per-request timeout.
    #[error("provider {provider}: request timed out after {}s", .after.as_secs_f64())]
    Timeout {
        /// Provider name.
        provider: String,
        /// The limit that was reached.
        after: Duration,
    },
    /// The caller cancelled the request; the HTTP stream was dropped.
    #[error("request cancelled")]
    Cancelled,
    /// The provider's answer is not what its API documents.
    #[error("provider {provider}: malformed response: {message}")]
    Malformed {
        /// Provider name.
        provider: String,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The answer grew past a size bound.
    #[error("provider {provider}: response larger than {limit} bytes")]
    TooLarge {
        /// Provider name.
        provider: String,
        /// The bound in bytes.
        limit: usize,
    },
    /// The request could not be built (bad header, bad URL…).
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl LlmError {
    /// Whether retrying the same request later could succeed (429, 5xx, transport).
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || (500..600).contains(status),
            LlmError::Transport { .. } => true,
            _ => false,
        }
    }
}

/// An error resolving an [`a2e_proto::LLMConfig`] or a provider configuration. Every
/// variant names the field at fault (`llm_override.provider_name`,
/// `llm_config.provider_config.model`, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The configuration asks for something the host does not allow agents to pick. The
    /// host answers `unauthorized`.
    #[error("{field}: {reason}")]
    Unauthorized {
        /// The field at fault.
        field: String,
        /// Why it is refused.
        reason: String,
    },
    /// The configuration is malformed or names an unknown provider.
    #[error("{field}: {reason}")]
    Invalid {
        /// The field at fault.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

impl ConfigError {
    /// The field at fault.
    pub fn field(&self) -> &str {
        match self {
            ConfigError::Unauthorized { field, .. } | ConfigError::Invalid { field, .. } => field,
        }
    }

    /// Whether the host should answer `unauthorized`.
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, ConfigError::Unauthorized { .. })
    }

    /// A setting that is wrong: `field` names it.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// What the allow-list refuses: `field` names it.
    pub fn unauthorized(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError::Unauthorized {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Why an agentic loop ended without a final answer.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The model still asked for tools after `max_turns` model calls.
    #[error("max_turns reached: the model still called tools after {limit} turns")]
    MaxTurns {
        /// The `max_turns` limit.
        limit: u32,
        /// Tokens the turns used (for the result's metadata).
        usage: Usage,
    },
    /// The whole loop ran past its time bound.
    #[error("timeout_seconds reached: the loop ran longer than {}s", .after.as_secs())]
    Timeout {
        /// The bound.
        after: Duration,
    },
    /// The caller cancelled the loop.
    #[error("cancelled")]
    Cancelled,
    /// A model call failed.
    #[error(transparent)]
    Provider(#[from] LlmError),
}
