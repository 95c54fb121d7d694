//! Per-call options and progress of mounted tools.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// A progress notification of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct McpProgress {
    /// Progress so far (increases with each notification).
    pub progress: f64,
    /// Total, when the server knows it.
    pub total: Option<f64>,
    /// What is happening.
    pub message: Option<String>,
}

impl McpProgress {
    /// Percent done, 0–100: `progress / total` when a total is known,
    /// otherwise `progress` itself, clamped.
    pub fn pct(&self) -> i64 {
        let pct = match self.total {
            Some(total) if total > 0.0 => self.progress / total * 100.0,
            _ => self.progress,
        };
        if pct.is_finite() {
            // Clamped to 0..=100 first, so the cast cannot overflow.
            pct.clamp(0.0, 100.0).round() as i64
        } else {
            0
        }
    }

    /// The payload of an A2E `tool/event` of kind `progress`: `{pct, message}`.
    pub fn event_data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        data.insert("pct".into(), Value::from(self.pct()));
        data.insert(
            "message".into(),
            Value::from(self.message.clone().unwrap_or_default()),
        );
        data
    }
}

/// Receives a call's progress; awaited before the next one is delivered.
pub type ProgressFn = Arc<dyn Fn(McpProgress) -> BoxFuture<'static, ()> + Send + Sync>;

/// Per-call options: a time limit, a cancellation token, a progress callback,
/// entries for the request's `params._meta`.
#[derive(Clone, Default)]
pub struct McpCallOptions {
    /// Time limit (the server's `call_timeout_secs` caps it).
    pub timeout: Option<Duration>,
    /// Cancels the call: `notifications/cancelled` goes to the server.
    pub cancel: Option<CancellationToken>,
    /// Receives progress notifications.
    pub progress: Option<ProgressFn>,
    /// Entries for the request's `params._meta`: the caller's W3C trace
    /// context (`traceparent`, `tracestate`), so that the server's spans join
    /// the caller's trace.
    pub meta: Map<String, Value>,
}

impl std::fmt::Debug for McpCallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpCallOptions")
            .field("timeout", &self.timeout)
            .field("cancel", &self.cancel.is_some())
            .field("progress", &self.progress.is_some())
            .field("meta", &self.meta.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl McpCallOptions {
    /// With a time limit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// With a cancellation token.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// With an entry of the request's `params._meta` (`traceparent`, say).
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.meta.insert(key.into(), value.into());
        self
    }

    /// With a progress callback.
    pub fn on_progress<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(McpProgress) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.progress = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }
}
