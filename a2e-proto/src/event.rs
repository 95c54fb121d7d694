//! Event kinds and their payload shapes (a2e-core.md §4).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

open_enum! {
    /// The kind of a streaming event.
    pub struct EventKind {
        /// `{pct, message}`.
        PROGRESS = "progress",
        /// `{message}`.
        STATUS = "status",
        /// `{name, mime, chunk (base64), final}`.
        ARTIFACT = "artifact",
        /// `{level, message}`.
        LOG = "log",
    }
}

impl Default for EventKind {
    fn default() -> Self {
        Self::STATUS
    }
}

/// Payload of a `progress` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProgressData {
    /// Percent done, 0–100.
    #[serde(deserialize_with = "crate::num::int")]
    pub pct: i64,
    /// What is happening.
    #[serde(default)]
    pub message: String,
}

/// Payload of a `status` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatusData {
    /// A one-line status.
    pub message: String,
}

/// Payload of an `artifact` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ArtifactData {
    /// Artifact name.
    pub name: String,
    /// MIME type.
    pub mime: String,
    /// A base64 chunk of the artifact.
    pub chunk: String,
    /// Whether this is the last chunk.
    #[serde(rename = "final", default)]
    pub is_final: bool,
}

/// Payload of a `log` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LogData {
    /// Log level (`debug`, `info`, `warn`, `error`).
    pub level: String,
    /// The line.
    pub message: String,
}

fn to_map<T: Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Builders for event `data` objects of each kind.
pub struct EventData;

impl EventData {
    /// `progress` data.
    pub fn progress(pct: i64, message: impl Into<String>) -> Map<String, Value> {
        to_map(&ProgressData {
            pct,
            message: message.into(),
        })
    }

    /// `status` data.
    pub fn status(message: impl Into<String>) -> Map<String, Value> {
        to_map(&StatusData {
            message: message.into(),
        })
    }

    /// `log` data.
    pub fn log(level: impl Into<String>, message: impl Into<String>) -> Map<String, Value> {
        to_map(&LogData {
            level: level.into(),
            message: message.into(),
        })
    }

    /// `artifact` data.
    pub fn artifact(
        name: &str,
        mime: &str,
        chunk_base64: &str,
        is_final: bool,
    ) -> Map<String, Value> {
        to_map(&ArtifactData {
            name: name.into(),
            mime: mime.into(),
            chunk: chunk_base64.into(),
            is_final,
        })
    }
}
