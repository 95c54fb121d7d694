//! Errors of stores and embedders.

use crate::namespace::NamespaceError;

/// Why an embeddings request failed. Never contains the API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// The configuration cannot work (bad base URL, …).
    #[error("embeddings configuration: {0}")]
    Config(String),
    /// Connecting, sending or receiving failed, or the request timed out.
    #[error("embeddings transport: {0}")]
    Transport(String),
    /// The provider answered with a non-success status.
    #[error("embeddings provider answered {status}: {body}")]
    Status {
        /// HTTP status code.
        status: u16,
        /// The start of the response body, with the key redacted.
        body: String,
    },
    /// The answer is not the expected shape.
    #[error("embeddings response: {0}")]
    Decode(String),
}

/// Why a store operation did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A namespace outside the grammar.
    #[error("invalid namespace {namespace:?}: {source}")]
    Namespace {
        /// The namespace as given (truncated to 80 characters).
        namespace: String,
        /// What is wrong with it.
        source: NamespaceError,
    },
    /// Input over a limit or of the wrong shape (the message says which).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The embeddings provider failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database holds something this version cannot read.
    #[error("corrupt store: {0}")]
    Corrupt(String),
    /// The blocking worker stopped (panicked or was cancelled).
    #[error("store worker stopped: {0}")]
    Worker(String),
}

impl StoreError {
    /// Whether the caller's input was at fault (rather than the store).
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, Self::Namespace { .. } | Self::Invalid(_))
    }

    pub(crate) fn namespace(namespace: &str, source: NamespaceError) -> Self {
        Self::Namespace {
            namespace: namespace.chars().take(80).collect(),
            source,
        }
    }
}
