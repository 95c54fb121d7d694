//! The audit log: one JSON line per request.

use std::io::Write;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::AuditConfig;

/// One audited request.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// Unix epoch seconds.
    pub ts: f64,
    /// Session id.
    pub session: String,
    /// Agent id from the handshake.
    pub agent: String,
    /// Message type.
    #[serde(rename = "type")]
    pub msg_type: String,
    /// Tool, skill or chain name.
    pub name: String,
    /// Milliseconds from receipt to answer.
    pub duration_ms: u64,
    /// Whether it succeeded.
    pub success: bool,
    /// Error code when it did not.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error_code: String,
    /// Argument names, or names and values when configured.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub arguments: Value,
    /// The request's `correlation_id` (one agent turn), when it had one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub correlation_id: String,
}

/// Where audit lines go.
pub struct Audit {
    include_arguments: bool,
    file: Option<Mutex<std::fs::File>>,
}

impl Audit {
    /// An audit log per `config`: appended to its file, or logged on the `audit` target.
    pub fn new(config: &AuditConfig) -> std::io::Result<Self> {
        let file = if config.path.as_os_str().is_empty() {
            None
        } else {
            Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&config.path)?,
            ))
        };
        Ok(Self {
            include_arguments: config.include_arguments,
            file,
        })
    }

    /// What to record of `args`: values only when configured, else the sorted names.
    pub fn arguments(&self, args: &Map<String, Value>) -> Value {
        if self.include_arguments {
            Value::Object(crate::redact::redact_map(args))
        } else {
            Value::from(args.keys().cloned().collect::<Vec<_>>())
        }
    }

    /// Whether records go anywhere: to the file, or to a subscriber that
    /// takes the `audit` target. When not, callers skip building them.
    pub fn is_on(&self) -> bool {
        self.file.is_some() || tracing::enabled!(target: "audit", tracing::Level::INFO)
    }

    /// Writes one record.
    pub fn record(&self, record: &AuditRecord) {
        let Ok(line) = serde_json::to_string(record) else {
            return;
        };
        match &self.file {
            Some(file) => {
                if let Ok(mut f) = file.lock() {
                    let _ = writeln!(f, "{line}");
                }
            }
            None => tracing::info!(target: "audit", "{line}"),
        }
    }
}
