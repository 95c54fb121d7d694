//! The JSON-RPC 2.0 binding (spec §9): the request and response envelopes,
//! with the operation's name as `method` and its request message as
//! `params`. Streaming methods answer with Server-Sent Events whose `data`
//! is a [`JsonRpcResponse`] of a [`crate::StreamResponse`].

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::decode::decode;
use crate::errors::{A2aError, ErrorKind};
use crate::operations::{A2aRequest, Operation};

/// The `jsonrpc` member: always `"2.0"`; anything else fails to decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JsonRpcVersion;

impl JsonRpcVersion {
    /// The only version: `2.0`.
    pub const STR: &'static str = "2.0";
}

impl Serialize for JsonRpcVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Self::STR)
    }
}

impl<'de> Deserialize<'de> for JsonRpcVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text == Self::STR {
            Ok(JsonRpcVersion)
        } else {
            Err(serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&text),
                &"\"2.0\"",
            ))
        }
    }
}

impl JsonSchema for JsonRpcVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "JsonRpcVersion".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "const": "2.0" })
    }
}

/// A request's `id`: a string, a number or `null`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum JsonRpcId {
    /// A number.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// `null`: what a response carries when the request's id could not be read.
    Null,
}

impl From<i64> for JsonRpcId {
    fn from(n: i64) -> Self {
        JsonRpcId::Number(n.into())
    }
}

impl From<&str> for JsonRpcId {
    fn from(s: &str) -> Self {
        JsonRpcId::String(s.to_owned())
    }
}

impl From<String> for JsonRpcId {
    fn from(s: String) -> Self {
        JsonRpcId::String(s)
    }
}

/// A present `"id": null` is `Some(Null)`, not an absent id.
fn present_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<JsonRpcId>, D::Error> {
    JsonRpcId::deserialize(deserializer).map(Some)
}

/// A JSON-RPC request: `{"jsonrpc": "2.0", "id", "method", "params"}`.
/// Without an `id` it is a notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcRequest {
    /// `jsonrpc`: `2.0`.
    pub jsonrpc: JsonRpcVersion,
    /// `id`: echoed in the response; absent for a notification.
    #[serde(
        default,
        deserialize_with = "present_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<JsonRpcId>,
    /// `method`: an operation's name (`SendMessage`…).
    pub method: String,
    /// `params`: the operation's request message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl JsonRpcRequest {
    /// The request of an operation.
    pub fn new(id: impl Into<JsonRpcId>, request: &A2aRequest) -> Self {
        JsonRpcRequest {
            jsonrpc: JsonRpcVersion,
            id: Some(id.into()),
            method: request.operation().name().to_owned(),
            params: Some(request.to_params()),
        }
    }

    /// Reads a request body: `JSONParseError` if it is not JSON,
    /// `InvalidRequestError` if it is not a JSON-RPC request.
    pub fn decode(body: &[u8]) -> Result<JsonRpcRequest, A2aError> {
        decode::<JsonRpcRequest>(body).map_err(|e| {
            if e.syntax {
                A2aError::new(ErrorKind::JsonParse, e.message)
            } else {
                A2aError::new(ErrorKind::InvalidRequest, e.to_string())
            }
        })
    }

    /// The operation and its typed request: `MethodNotFoundError` for an
    /// unknown method, `InvalidParamsError` naming the bad field.
    pub fn to_a2a(&self) -> Result<A2aRequest, A2aError> {
        let operation = Operation::from_name(&self.method).ok_or_else(|| {
            A2aError::new(
                ErrorKind::MethodNotFound,
                format!("Method not found: {}", self.method),
            )
        })?;
        let params = self.params.clone().unwrap_or(Value::Null);
        A2aRequest::decode(operation, params).map_err(A2aError::from)
    }
}

/// A JSON-RPC error object: `{"code", "message", "data"}`. A2A puts an array
/// of details in `data` (see [`A2aError::to_jsonrpc`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcError {
    /// `code`: see [`ErrorKind::code`].
    pub code: i32,
    /// `message`: human-readable.
    #[serde(default)]
    pub message: String,
    /// `data`: the error's details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A response's outcome: `result` or `error`, as a key of the response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub enum JsonRpcOutcome<R> {
    /// `result`: the operation's response message.
    #[serde(rename = "result")]
    Result(R),
    /// `error`: what went wrong.
    #[serde(rename = "error")]
    Error(JsonRpcError),
}

/// A JSON-RPC response: `{"jsonrpc": "2.0", "id", "result" | "error"}`.
/// `R` is the operation's response type ([`Value`] when not known yet).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcResponse<R = Value> {
    /// `jsonrpc`: `2.0`.
    pub jsonrpc: JsonRpcVersion,
    /// `id`: the request's, or `null` if it could not be read.
    pub id: JsonRpcId,
    /// `result` or `error`.
    #[serde(flatten)]
    pub outcome: JsonRpcOutcome<R>,
}

impl<R> JsonRpcResponse<R> {
    /// A successful response.
    pub fn result(id: JsonRpcId, result: R) -> Self {
        JsonRpcResponse {
            jsonrpc: JsonRpcVersion,
            id,
            outcome: JsonRpcOutcome::Result(result),
        }
    }

    /// An error response.
    pub fn error(id: JsonRpcId, error: &A2aError) -> Self {
        JsonRpcResponse {
            jsonrpc: JsonRpcVersion,
            id,
            outcome: JsonRpcOutcome::Error(error.to_jsonrpc()),
        }
    }

    /// The result, or the error as an [`A2aError`].
    pub fn into_result(self) -> Result<R, A2aError> {
        match self.outcome {
            JsonRpcOutcome::Result(result) => Ok(result),
            JsonRpcOutcome::Error(error) => Err(A2aError::from_jsonrpc(&error)),
        }
    }
}
