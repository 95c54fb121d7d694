//! The JSON-RPC 2.0 envelopes Layer 1 messages travel in.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::AcmpError;

/// The `jsonrpc` member: always `"2.0"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Version2;

impl Serialize for Version2 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("2.0")
    }
}

impl<'de> Deserialize<'de> for Version2 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = String::deserialize(deserializer)?;
        if v == "2.0" {
            Ok(Self)
        } else {
            Err(serde::de::Error::custom(format!(
                "jsonrpc must be \"2.0\", found \"{v}\""
            )))
        }
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Version2 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "JsonRpcVersion".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "const": "2.0" })
    }
}

/// A JSON-RPC request id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

/// A JSON-RPC request, e.g. an `acmp/invoke`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Request<P> {
    /// `"2.0"`.
    pub jsonrpc: Version2,
    /// The method, e.g. `acmp/invoke`.
    pub method: String,
    /// The request id.
    pub id: RequestId,
    /// The params.
    pub params: P,
}

/// A JSON-RPC notification, e.g. an `acmp/streamChunk`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Notification<P> {
    /// `"2.0"`.
    pub jsonrpc: Version2,
    /// The method.
    pub method: String,
    /// The params.
    pub params: P,
}

/// A successful JSON-RPC response, e.g. an `acmp/result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Response<R> {
    /// `"2.0"`.
    pub jsonrpc: Version2,
    /// The id of the request answered.
    pub id: RequestId,
    /// The result.
    pub result: R,
}

/// An error JSON-RPC response: an `acmp/error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorResponse {
    /// `"2.0"`.
    pub jsonrpc: Version2,
    /// The id of the request answered.
    pub id: RequestId,
    /// The error.
    pub error: AcmpError,
}

impl<P> Request<P> {
    /// A request.
    pub fn new(id: RequestId, method: impl Into<String>, params: P) -> Self {
        Self {
            jsonrpc: Version2,
            method: method.into(),
            id,
            params,
        }
    }
}

impl<P> Notification<P> {
    /// A notification.
    pub fn new(method: impl Into<String>, params: P) -> Self {
        Self {
            jsonrpc: Version2,
            method: method.into(),
            params,
        }
    }
}

impl<R> Response<R> {
    /// A response.
    pub fn new(id: RequestId, result: R) -> Self {
        Self {
            jsonrpc: Version2,
            id,
            result,
        }
    }
}
