//! The way back to a connected MCP client: log messages at the level it
//! chose, sampling (`sampling/createMessage`), elicitation
//! (`elicitation/create`) and resource updates.
#![allow(deprecated)] // sampling and logging: deprecated for protocol versions after the ones served here

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationSchema, LoggingLevel, LoggingMessageNotificationParam,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;

/// How long a request to the client (sampling, elicitation) may take at most:
/// a person may be answering it.
pub const CLIENT_REQUEST_LIMIT: Duration = Duration::from_secs(600);

/// Why a request to the client did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientRequestError {
    /// The client did not declare the capability (`sampling`, `elicitation`).
    #[error("the MCP client does not support {0}")]
    Unsupported(&'static str),
    /// What was to be sent is not valid (an elicitation schema the protocol does not allow).
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// What was wrong (`elicitation schema`).
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// The client answered with an error, or the connection failed.
    #[error("the MCP client's {what} failed: {source}")]
    Failed {
        /// `sampling/createMessage` or `elicitation/create`.
        what: &'static str,
        /// The error.
        #[source]
        source: ServiceError,
    },
}

/// The levels in order of severity (RFC 5424), as MCP names them.
const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

fn rank(level: LoggingLevel) -> u8 {
    LEVELS
        .iter()
        .position(|l| *l == level)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(0)
}

/// An A2E log event's level (`debug`, `info`, `warn`/`warning`, `error`, …)
/// as an MCP level (`info` for anything unknown).
pub fn level_named(name: &str) -> LoggingLevel {
    match name.to_ascii_lowercase().as_str() {
        "trace" | "debug" => LoggingLevel::Debug,
        "notice" => LoggingLevel::Notice,
        "warn" | "warning" => LoggingLevel::Warning,
        "error" => LoggingLevel::Error,
        "critical" | "fatal" => LoggingLevel::Critical,
        "alert" => LoggingLevel::Alert,
        "emergency" => LoggingLevel::Emergency,
        _ => LoggingLevel::Info,
    }
}

/// The least severe level a connection sends, as the client set it with
/// `logging/setLevel` (`info` until it does). One per connection.
#[derive(Debug, Clone)]
pub struct LogLevel(Arc<AtomicU8>);

impl Default for LogLevel {
    fn default() -> Self {
        Self(Arc::new(AtomicU8::new(rank(LoggingLevel::Info))))
    }
}

impl LogLevel {
    /// Sets the level.
    pub fn set(&self, level: LoggingLevel) {
        self.0.store(rank(level), Ordering::Relaxed);
    }

    /// Whether a message at `level` is sent.
    pub fn admits(&self, level: LoggingLevel) -> bool {
        rank(level) >= self.0.load(Ordering::Relaxed)
    }
}

/// One connected MCP client, as the backend reaches it.
#[derive(Clone)]
pub struct ClientLink {
    peer: Peer<RoleServer>,
    level: LogLevel,
}

impl std::fmt::Debug for ClientLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientLink")
            .field("client", &self.client_name())
            .finish()
    }
}

impl ClientLink {
    pub(crate) fn new(peer: Peer<RoleServer>, level: LogLevel) -> Self {
        Self { peer, level }
    }

    /// The client's name from its `initialize`, if it gave one.
    pub fn client_name(&self) -> Option<String> {
        self.peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
    }

    /// Whether the client declared `sampling`.
    pub fn supports_sampling(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.sampling.is_some())
    }

    /// Whether the client declared `sampling` with `tools`: it takes `tools`
    /// and `toolChoice` in `sampling/createMessage` and answers with tool
    /// use.
    pub fn supports_sampling_tools(&self) -> bool {
        self.peer.peer_info().is_some_and(|info| {
            info.capabilities
                .sampling
                .as_ref()
                .is_some_and(|s| s.tools.is_some())
        })
    }

    /// Whether the client declared `elicitation`.
    pub fn supports_elicitation(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some())
    }

    /// Sends `notifications/message` when `level` is at or above the
    /// client's level; `false` when the connection is gone.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) -> bool {
        if !self.level.admits(level) {
            return true;
        }
        let mut params = LoggingMessageNotificationParam::new(level, data);
        params.logger = logger.map(str::to_owned);
        self.peer.notify_logging_message(params).await.is_ok()
    }

    /// Asks the client's model for a message (`sampling/createMessage`).
    pub async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ClientRequestError> {
        if !self.supports_sampling() {
            return Err(ClientRequestError::Unsupported("sampling"));
        }
        match tokio::time::timeout(CLIENT_REQUEST_LIMIT, self.peer.create_message(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(source)) => Err(ClientRequestError::Failed {
                what: "sampling/createMessage",
                source,
            }),
            Err(_) => Err(ClientRequestError::Failed {
                what: "sampling/createMessage",
                source: ServiceError::Timeout {
                    timeout: CLIENT_REQUEST_LIMIT,
                },
            }),
        }
    }

    /// Asks the client's user for input (`elicitation/create`, form mode):
    /// `schema` is the requested schema (an object of primitive properties,
    /// with defaults and enums as the protocol allows).
    pub async fn elicit(
        &self,
        message: &str,
        schema: Value,
    ) -> Result<ElicitResult, ClientRequestError> {
        if !self.supports_elicitation() {
            return Err(ClientRequestError::Unsupported("elicitation"));
        }
        let requested_schema: ElicitationSchema =
            serde_json::from_value(schema).map_err(|e| ClientRequestError::Invalid {
                what: "elicitation schema",
                reason: e.to_string(),
            })?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.to_owned(),
            requested_schema,
        };
        let limit = Some(CLIENT_REQUEST_LIMIT);
        self.peer
            .create_elicitation_with_timeout(params, limit)
            .await
            .map_err(|source| ClientRequestError::Failed {
                what: "elicitation/create",
                source,
            })
    }

    /// Sends `notifications/resources/updated` for `uri`; `false` when the
    /// connection is gone.
    pub async fn resource_updated(&self, uri: &str) -> bool {
        self.peer
            .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
            .await
            .is_ok()
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_and_names() {
        let level = LogLevel::default();
        assert!(level.admits(LoggingLevel::Info) && !level.admits(LoggingLevel::Debug));
        level.set(LoggingLevel::Error);
        assert!(!level.admits(LoggingLevel::Warning) && level.admits(LoggingLevel::Alert));
        assert_eq!(level_named("WARN"), LoggingLevel::Warning);
        assert_eq!(level_named("odd"), LoggingLevel::Info);
    }
}
