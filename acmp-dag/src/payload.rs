//! The typed value `{type, data}`: a literal input, a task output, a stream chunk.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A typed value `{"type": …, "data": …}`.
///
/// ACMP uses the same shape for a literal task input (Layer 2 §1.1), for the `output` of an
/// `acmp/result`, and for the `chunk` of `acmp/inputChunk` / `acmp/streamChunk`.
/// `type` follows a MIME-like taxonomy (`text`, `json`, `image/png`, …) but any string is
/// accepted. `data` is required; it may be `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Payload {
    /// The value's type (`type` on the wire): `text`, `json`, `image/png`, … (any string).
    #[serde(rename = "type")]
    pub kind: String,
    /// The value itself.
    pub data: Value,
}

impl Payload {
    /// A payload of the given type.
    pub fn new(kind: impl Into<String>, data: impl Into<Value>) -> Self {
        Self {
            kind: kind.into(),
            data: data.into(),
        }
    }

    /// A `text` payload.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new("text", Value::String(text.into()))
    }

    /// A `json` payload.
    pub fn json(data: Value) -> Self {
        Self::new("json", data)
    }
}
