//! [`ClientError`]: everything a client call can fail with, in one enum to match on.

use std::sync::Arc;
use std::time::Duration;

use a2e_proto::{ErrorCode, ErrorMessage};
use serde_json::{Map, Value};

/// Result of a client operation.
pub type ClientResult<T> = Result<T, ClientError>;

/// Why a client operation failed.
///
/// A request the host refused before running anything comes back as
/// [`ClientError::Protocol`] with the wire code; a call that ran and failed
/// is *not* an error here: its result carries `success: false`.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The transport could not be set up or failed (connect, spawn, I/O).
    #[error("transport error: {context}")]
    Transport {
        /// What was being done, for a person.
        context: String,
        /// The underlying error (I/O, HTTP, WebSocket), when there is one.
        #[source]
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// The connection ended; every request still waiting fails with this.
    #[error("connection closed: {0}")]
    ConnectionClosed(String),
    /// No answer within the client-side limit.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The host answered the request with an `error` message.
    #[error("host refused the request ({code}): {message}")]
    Protocol {
        /// The wire error code, e.g. `unknown_tool`, `schema_violation`.
        code: ErrorCode,
        /// What went wrong, for a person.
        message: String,
        /// Structured detail (e.g. the JSON path of a schema violation).
        detail: Box<Map<String, Value>>,
        /// Whether a retry may succeed.
        retryable: bool,
        /// The capability concerned, if any.
        capability: String,
    },
    /// The host refused the handshake (`reason`: `auth_failed`, `version_mismatch`, …).
    /// A network transport that rejects the bearer token also reports `auth_failed`.
    #[error("handshake refused: {reason}")]
    HandshakeRefused {
        /// The host's reason.
        reason: String,
    },
    /// The host answered with a message of an unexpected type.
    #[error("expected `{expected}` in answer, got `{got}`")]
    UnexpectedAnswer {
        /// The type that was expected.
        expected: &'static str,
        /// The type that came.
        got: String,
    },
    /// The host answered, but said the operation did not work (`ok: false`).
    #[error("{what} failed: {message}")]
    Failed {
        /// The operation, e.g. `proc/spawn`.
        what: &'static str,
        /// The host's explanation.
        message: String,
    },
    /// The request could not be built (bad URL, bad argument).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The peer answered with a message that does not decode (a result of
    /// the wrong shape), or wrote a line that is not JSON while the request
    /// waited: it broke the protocol, so the request fails at once instead
    /// of waiting for its timeout. The message names the peer and what it
    /// sent.
    #[error("{0}")]
    Malformed(String),
}

impl ClientError {
    /// The wire code of a [`ClientError::Protocol`] error.
    pub fn code(&self) -> Option<&ErrorCode> {
        match self {
            Self::Protocol { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Whether retrying may succeed: retryable wire codes and timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Protocol { retryable, .. } => *retryable,
            Self::Timeout(_) => true,
            _ => false,
        }
    }

    pub(crate) fn from_wire(e: ErrorMessage) -> Self {
        Self::Protocol {
            code: e.code,
            message: e.message,
            detail: Box::new(e.detail),
            retryable: e.retryable,
            capability: e.capability_name,
        }
    }

    /// A transport failure with its cause.
    pub(crate) fn transport(
        context: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        let context = context.into();
        let context = format!("{context}: {source}");
        Self::Transport {
            context,
            source: Some(Arc::new(source)),
        }
    }

    /// A transport failure without an underlying error.
    pub(crate) fn transport_msg(context: impl Into<String>) -> Self {
        Self::Transport {
            context: context.into(),
            source: None,
        }
    }
}
