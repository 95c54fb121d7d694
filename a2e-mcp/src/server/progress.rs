//! Where a call's events go: progress to `notifications/progress` (when the
//! client asked for it), log events to `notifications/message` (at the
//! client's level), in the order they happened, and all before the answer.
#![allow(deprecated)] // logging: deprecated only for protocol versions after the ones served here

use std::time::Duration;

use a2e_proto::{EventKind, ToolEvent};
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::client::{ClientLink, level_named};

/// Where a backend's events for one call go: `progress` events become MCP
/// `notifications/progress` (`progress` = pct, `total` = 100, `message`), in
/// order, when the call carried a progress token; progress that would go
/// backwards is dropped (MCP requires it to increase). `log` events become
/// `notifications/message` at the client's logging level. Other event kinds
/// are not forwarded. [`ProgressSink::discard`] drops everything.
#[derive(Debug, Clone, Default)]
pub struct ProgressSink {
    tx: Option<mpsc::UnboundedSender<SinkMsg>>,
    progress: bool,
    client: Option<ClientLink>,
}

#[derive(Debug)]
enum SinkMsg {
    Progress(f64, String),
    Log(rmcp::model::LoggingLevel, Value),
    /// Answered once everything before it has been sent.
    Flush(oneshot::Sender<()>),
}

/// How long a call's answer waits for its last notifications.
const FLUSH_LIMIT: Duration = Duration::from_secs(5);

impl ProgressSink {
    /// A sink that drops everything.
    pub fn discard() -> Self {
        Self::default()
    }

    pub(crate) fn for_call(
        peer: Peer<RoleServer>,
        token: Option<ProgressToken>,
        client: ClientLink,
    ) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<SinkMsg>();
        let progress = token.is_some();
        let link = client.clone();
        tokio::spawn(async move {
            let mut last = f64::MIN;
            let mut open = true;
            while let Some(msg) = rx.recv().await {
                match msg {
                    SinkMsg::Flush(done) => {
                        let _ = done.send(());
                    }
                    SinkMsg::Progress(pct, message) => {
                        let Some(token) = &token else { continue };
                        if !open || pct < last {
                            continue;
                        }
                        last = pct;
                        let mut params = ProgressNotificationParam::new(token.clone(), pct);
                        params.total = Some(100.0);
                        params.message = (!message.is_empty()).then_some(message);
                        open = peer.notify_progress(params).await.is_ok();
                    }
                    SinkMsg::Log(level, data) => {
                        if open {
                            open = link.log(level, Some("a2e"), data).await;
                        }
                    }
                }
            }
        });
        Self {
            tx: Some(tx),
            progress,
            client: Some(client),
        }
    }

    /// A sink that sends nothing but carries `client` (a call that runs as
    /// a task: its answer goes to the journal, its questions to the task's
    /// inbox).
    pub fn for_client(client: ClientLink) -> Self {
        Self {
            tx: None,
            progress: false,
            client: Some(client),
        }
    }

    /// Waits until the notifications reported so far have been sent, so the
    /// answer does not overtake them.
    pub(crate) async fn flush(&self) {
        if let Some(tx) = &self.tx {
            let (done, wait) = oneshot::channel();
            if tx.send(SinkMsg::Flush(done)).is_ok() {
                let _ = tokio::time::timeout(FLUSH_LIMIT, wait).await;
            }
        }
    }

    /// Whether the client asked for progress.
    pub fn is_active(&self) -> bool {
        self.progress
    }

    /// Whether anything reaches the client (progress or log messages).
    pub fn is_connected(&self) -> bool {
        self.tx.is_some()
    }

    /// The client the call came from (sampling, elicitation), if any.
    pub fn client(&self) -> Option<&ClientLink> {
        self.client.as_ref()
    }

    /// Reports `pct` (0–100) done.
    pub fn progress(&self, pct: i64, message: &str) {
        if let Some(tx) = &self.tx
            && self.progress
        {
            // pct is clamped to 0..=100, exactly representable as f64.
            let pct = pct.clamp(0, 100) as f64;
            let _ = tx.send(SinkMsg::Progress(pct, message.to_owned()));
        }
    }

    /// Sends a log message (`level` as A2E names it: `debug`, `info`, `warn`, …).
    pub fn log(&self, level: &str, data: Value) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(SinkMsg::Log(level_named(level), data));
        }
    }

    /// Forwards an A2E event (kind and `data`): `progress` and `log` events;
    /// the other kinds have no MCP notification (see `docs/protocol-decisions.md`).
    pub fn emit(&self, kind: &EventKind, data: &Map<String, Value>) {
        if *kind == EventKind::PROGRESS {
            let pct = data.get("pct").and_then(Value::as_i64).unwrap_or(0);
            let message = data.get("message").and_then(Value::as_str).unwrap_or("");
            self.progress(pct, message);
        } else if *kind == EventKind::LOG {
            let level = data.get("level").and_then(Value::as_str).unwrap_or("info");
            let data = match data.get("message") {
                Some(message) if data.len() <= 2 => message.clone(),
                _ => Value::Object(data.clone()),
            };
            self.log(level, data);
        }
    }

    /// Forwards a `tool/event`.
    pub fn event(&self, event: &ToolEvent) {
        self.emit(&event.kind, &event.data);
    }
}
