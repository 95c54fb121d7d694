//! The way back to a connected MCP client: log messages at the level it
//! chose, sampling (`sampling/createMessage`), elicitation
//! (`elicitation/create`) and resource updates.
#![allow(deprecated)] // sampling and logging: deprecated for protocol versions after the ones served here

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationSchema, InputRequest,
    ListRootsRequest, ListRootsResult, LoggingLevel, LoggingMessageNotificationParam,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{Peer, RequestContext, ServiceError};
use serde_json::Value;

use super::inbox::TaskInbox;
use super::rounds::{Rounds, kind_of};

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
    /// The client's answer did not have the shape of the request's result.
    #[error("the MCP client's answer to {what} is not one: {reason}")]
    Answer {
        /// `sampling/createMessage`, `elicitation/create` or `roots/list`.
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

/// Above every level: nothing is sent.
const OFF: u8 = u8::MAX;

impl LogLevel {
    /// A level for one request: `level`, or nothing sent without one (MCP
    /// 2026-07-28: a request that sets no `logLevel` gets no log messages).
    pub fn for_request(level: Option<LoggingLevel>) -> Self {
        Self(Arc::new(AtomicU8::new(level.map_or(OFF, rank))))
    }

    /// Sets the level.
    pub fn set(&self, level: LoggingLevel) {
        self.0.store(rank(level), Ordering::Relaxed);
    }

    /// Whether a message at `level` is sent.
    pub fn admits(&self, level: LoggingLevel) -> bool {
        rank(level) >= self.0.load(Ordering::Relaxed)
    }
}

/// One connected MCP client, as the backend reaches it: the connection (a
/// 2025-11-25 session), or one request of a 2026-07-28 client, whose
/// questions (sampling, elicitation, roots) become the rounds of that
/// request ([`Rounds`](super::Rounds)).
#[derive(Clone)]
pub struct ClientLink {
    peer: Peer<RoleServer>,
    level: LogLevel,
    /// The request's rounds and declared capabilities, for a 2026-07-28 request.
    rounds: Option<Arc<Rounds>>,
    /// The task's questions, for a call that runs as a task.
    inbox: Option<Arc<TaskInbox>>,
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
        Self {
            peer,
            level,
            rounds: None,
            inbox: None,
        }
    }

    /// The link of a call that runs as a task: its questions wait in
    /// `inbox` for `tasks/update`; no log messages (the request that
    /// started it has its answer).
    pub(crate) fn for_task(context: &RequestContext<RoleServer>, inbox: Arc<TaskInbox>) -> Self {
        Self {
            peer: context.peer.clone(),
            level: LogLevel::for_request(None),
            rounds: None,
            inbox: Some(inbox),
        }
    }

    /// Whether [`notify_task`](Self::notify_task) reaches the client: a
    /// session's, still connected.
    pub fn hears_task_status(&self) -> bool {
        self.peer.peer_info().is_some() && !self.peer.is_transport_closed()
    }

    /// Tells a session's client the state of a task it started
    /// (`notifications/tasks`). A 2026-07-28 request's client is not told:
    /// nothing routes a notification to it after its request (it polls
    /// `tasks/get`); a client that went away is not either.
    pub async fn notify_task(&self, task: rmcp::model::DetailedTask) {
        if !self.hears_task_status() {
            return;
        }
        let notification = rmcp::model::TaskStatusNotification::new(
            rmcp::model::TaskStatusNotificationParams::new(task),
        );
        let _ = self
            .peer
            .send_notification(rmcp::model::ServerNotification::TaskStatusNotification(
                notification,
            ))
            .await;
    }

    /// The task's questions, for a call that runs as a task.
    pub fn task_inbox(&self) -> Option<&Arc<TaskInbox>> {
        self.inbox.as_ref()
    }

    /// The link of one 2026-07-28 request: its questions go to `rounds`, its
    /// log messages at the level the request set.
    pub(crate) fn for_rounds(context: &RequestContext<RoleServer>, rounds: Arc<Rounds>) -> Self {
        Self {
            peer: context.peer.clone(),
            level: LogLevel::for_request(context.meta.log_level()),
            rounds: Some(rounds),
            inbox: None,
        }
    }

    /// The client's name from its `initialize`, if it gave one.
    pub fn client_name(&self) -> Option<String> {
        self.peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
    }

    /// Whether the client declared what `test` looks for: in the request's
    /// `_meta` (2026-07-28) or at `initialize`.
    fn declares(&self, test: impl Fn(&ClientCapabilities) -> bool) -> bool {
        if let Some(inbox) = &self.inbox {
            return test(inbox.capabilities());
        }
        match &self.rounds {
            Some(rounds) => test(rounds.capabilities()),
            None => self.peer.peer_info().is_some_and(|i| test(&i.capabilities)),
        }
    }

    /// Whether the client declared `sampling`.
    pub fn supports_sampling(&self) -> bool {
        self.declares(|c| c.sampling.is_some())
    }

    /// Whether the client declared `sampling` with `tools`: it takes `tools`
    /// and `toolChoice` in `sampling/createMessage` and answers with tool
    /// use.
    pub fn supports_sampling_tools(&self) -> bool {
        self.declares(|c| c.sampling.as_ref().is_some_and(|s| s.tools.is_some()))
    }

    /// Whether the client declared `elicitation`.
    pub fn supports_elicitation(&self) -> bool {
        self.declares(|c| c.elicitation.is_some())
    }

    /// Whether the client declared `roots`.
    pub fn supports_roots(&self) -> bool {
        self.declares(|c| c.roots.is_some())
    }

    /// Asks the client `request`, under `key` when the client is asked in
    /// rounds (`None`: the n-th of its kind): its answer as JSON.
    pub async fn ask(
        &self,
        key: Option<&str>,
        request: InputRequest,
    ) -> Result<Value, ClientRequestError> {
        let what = kind_of(&request);
        let supported = match what {
            "sampling" => self.supports_sampling(),
            "elicitation" => self.supports_elicitation(),
            _ => self.supports_roots(),
        };
        if let Some(inbox) = &self.inbox {
            if !supported {
                return Err(ClientRequestError::Unsupported(what));
            }
            let key = key.map_or_else(|| inbox.next_key(&request), str::to_owned);
            return inbox
                .ask(key, request)
                .await
                .ok_or(ClientRequestError::Unsupported(what));
        }
        if let Some(rounds) = &self.rounds {
            if !supported {
                rounds.needs(needed(what));
                return Err(ClientRequestError::Unsupported(what));
            }
            let key = key.map_or_else(|| rounds.next_key(&request), str::to_owned);
            return Ok(rounds.ask(key, request).await);
        }
        if !supported {
            return Err(ClientRequestError::Unsupported(what));
        }
        match request {
            InputRequest::CreateMessage(r) => {
                bounded("sampling/createMessage", self.peer.create_message(r.params)).await
            }
            InputRequest::Elicitation(r) => {
                let limit = Some(CLIENT_REQUEST_LIMIT);
                let sent = self.peer.create_elicitation_with_timeout(r.params, limit);
                bounded("elicitation/create", sent).await
            }
            _ => bounded("roots/list", self.peer.list_roots()).await,
        }
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
        self.sample_as(None, params).await
    }

    /// [`sample`](Self::sample) under `key` (see [`ask`](Self::ask)).
    pub async fn sample_as(
        &self,
        key: Option<&str>,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ClientRequestError> {
        let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
        from_json("sampling/createMessage", self.ask(key, request).await?)
    }

    /// Asks the client's user for input (`elicitation/create`, form mode):
    /// `schema` is the requested schema (an object of primitive properties,
    /// with defaults and enums as the protocol allows).
    pub async fn elicit(
        &self,
        message: &str,
        schema: Value,
    ) -> Result<ElicitResult, ClientRequestError> {
        self.elicit_as(None, message, schema).await
    }

    /// [`elicit`](Self::elicit) under `key` (see [`ask`](Self::ask)).
    pub async fn elicit_as(
        &self,
        key: Option<&str>,
        message: &str,
        schema: Value,
    ) -> Result<ElicitResult, ClientRequestError> {
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
        let request = InputRequest::Elicitation(ElicitRequest::new(params));
        from_json("elicitation/create", self.ask(key, request).await?)
    }

    /// Asks the client for its roots (`roots/list`), under `key` (see
    /// [`ask`](Self::ask)).
    pub async fn list_roots_as(
        &self,
        key: Option<&str>,
    ) -> Result<ListRootsResult, ClientRequestError> {
        let request = InputRequest::ListRoots(ListRootsRequest::default());
        from_json("roots/list", self.ask(key, request).await?)
    }

    /// Sends `notifications/resources/updated` for `uri`; `false` when the
    /// connection is gone.
    pub async fn resource_updated(&self, uri: &str) -> bool {
        self.peer
            .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
            .await
            .is_ok()
    }

    /// Whether the connection has ended. A task's link stays open while
    /// the task runs: its questions go to the task's inbox, not to the
    /// request that started it (whose connection ends with its answer).
    pub fn is_closed(&self) -> bool {
        self.inbox.is_none() && self.peer.is_transport_closed()
    }
}

/// The capabilities object naming `what` (`sampling`, `elicitation`, `roots`).
fn needed(what: &str) -> ClientCapabilities {
    let caps = ClientCapabilities::builder();
    match what {
        "sampling" => caps.enable_sampling().build(),
        "elicitation" => caps.enable_elicitation().build(),
        _ => caps.enable_roots().build(),
    }
}

/// The answer to request `what` that `sent` brings, within [`CLIENT_REQUEST_LIMIT`].
async fn bounded<T: serde::Serialize>(
    what: &'static str,
    sent: impl std::future::Future<Output = Result<T, ServiceError>>,
) -> Result<Value, ClientRequestError> {
    let failed = |source| ClientRequestError::Failed { what, source };
    match tokio::time::timeout(CLIENT_REQUEST_LIMIT, sent).await {
        Ok(answer) => answer.map(to_json).map_err(failed),
        Err(_) => Err(failed(ServiceError::Timeout {
            timeout: CLIENT_REQUEST_LIMIT,
        })),
    }
}

fn to_json<T: serde::Serialize>(answer: T) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}

fn from_json<T: serde::de::DeserializeOwned>(
    what: &'static str,
    answer: Value,
) -> Result<T, ClientRequestError> {
    serde_json::from_value(answer).map_err(|e| ClientRequestError::Answer {
        what,
        reason: e.to_string(),
    })
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
