//! The A2A error catalogue (spec §3.3.2, §5.4, §9.5, §11.6): every error's
//! JSON-RPC code, gRPC status, HTTP status and `ErrorInfo` reason, and
//! [`A2aError`], which turns into a JSON-RPC error object or an HTTP error
//! body and back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decode::DecodeError;
use crate::wire::{Metadata, nullable};

/// `domain` of the `google.rpc.ErrorInfo` detail of every A2A error.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";
/// `@type` of a `google.rpc.ErrorInfo` detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// `@type` of a `google.rpc.BadRequest` detail.
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

/// An A2A error type, or one of JSON-RPC's standard errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// `TaskNotFoundError`: no such task, or not visible to the caller.
    TaskNotFound,
    /// `TaskNotCancelableError`: the task is in a state that cannot be canceled.
    TaskNotCancelable,
    /// `PushNotificationNotSupportedError`: the agent does not push.
    PushNotificationNotSupported,
    /// `UnsupportedOperationError`: the operation, or part of it, is not supported.
    UnsupportedOperation,
    /// `ContentTypeNotSupportedError`: a media type of the request is not supported.
    ContentTypeNotSupported,
    /// `InvalidAgentResponseError`: an agent's response broke the spec.
    InvalidAgentResponse,
    /// `ExtendedAgentCardNotConfiguredError`: there is no extended card.
    ExtendedAgentCardNotConfigured,
    /// `ExtensionSupportRequiredError`: a required extension was not declared.
    ExtensionSupportRequired,
    /// `VersionNotSupportedError`: the `A2A-Version` is not served here.
    VersionNotSupported,
    /// `JSONParseError` (-32700): the body is not JSON.
    JsonParse,
    /// `InvalidRequestError` (-32600): not a valid JSON-RPC request.
    InvalidRequest,
    /// `MethodNotFoundError` (-32601): no such method.
    MethodNotFound,
    /// `InvalidParamsError` (-32602): the parameters are invalid.
    InvalidParams,
    /// `InternalError` (-32603): the server failed.
    Internal,
}

impl ErrorKind {
    /// Every kind: the nine A2A errors, then JSON-RPC's five.
    pub const ALL: [ErrorKind; 14] = [
        ErrorKind::TaskNotFound,
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::UnsupportedOperation,
        ErrorKind::ContentTypeNotSupported,
        ErrorKind::InvalidAgentResponse,
        ErrorKind::ExtendedAgentCardNotConfigured,
        ErrorKind::ExtensionSupportRequired,
        ErrorKind::VersionNotSupported,
        ErrorKind::JsonParse,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::Internal,
    ];

    /// `(name, JSON-RPC code, HTTP status, gRPC status, ErrorInfo reason,
    /// default message)`: spec §5.4 and §9.5 for the first four; the
    /// reasons of the standard errors and the messages follow the Python SDK.
    #[rustfmt::skip]
    const fn row(self) -> (&'static str, i32, u16, &'static str, &'static str, &'static str) {
        match self {
            ErrorKind::TaskNotFound => ("TaskNotFoundError", -32001, 404, "NOT_FOUND", "TASK_NOT_FOUND", "Task not found"),
            ErrorKind::TaskNotCancelable => ("TaskNotCancelableError", -32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", "Task cannot be canceled"),
            ErrorKind::PushNotificationNotSupported => ("PushNotificationNotSupportedError", -32003, 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED", "Push notifications are not supported"),
            ErrorKind::UnsupportedOperation => ("UnsupportedOperationError", -32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION", "This operation is not supported"),
            ErrorKind::ContentTypeNotSupported => ("ContentTypeNotSupportedError", -32005, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", "Incompatible content types"),
            ErrorKind::InvalidAgentResponse => ("InvalidAgentResponseError", -32006, 500, "INTERNAL", "INVALID_AGENT_RESPONSE", "Invalid agent response"),
            ErrorKind::ExtendedAgentCardNotConfigured => ("ExtendedAgentCardNotConfiguredError", -32007, 400, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "Extended agent card is not configured"),
            ErrorKind::ExtensionSupportRequired => ("ExtensionSupportRequiredError", -32008, 400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED", "Extension support required"),
            ErrorKind::VersionNotSupported => ("VersionNotSupportedError", -32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED", "Version not supported"),
            ErrorKind::JsonParse => ("JSONParseError", -32700, 400, "INVALID_ARGUMENT", "INVALID_REQUEST", "Invalid JSON payload"),
            ErrorKind::InvalidRequest => ("InvalidRequestError", -32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST", "Request payload validation error"),
            ErrorKind::MethodNotFound => ("MethodNotFoundError", -32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND", "Method not found"),
            ErrorKind::InvalidParams => ("InvalidParamsError", -32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "Invalid parameters"),
            ErrorKind::Internal => ("InternalError", -32603, 500, "INTERNAL", "INTERNAL_ERROR", "Internal error"),
        }
    }

    /// The spec's name, e.g. `TaskNotFoundError`.
    pub const fn name(self) -> &'static str {
        self.row().0
    }

    /// The JSON-RPC error code, e.g. -32001.
    pub const fn code(self) -> i32 {
        self.row().1
    }

    /// The HTTP status of the HTTP+JSON binding, e.g. 404.
    pub const fn http_status(self) -> u16 {
        self.row().2
    }

    /// The gRPC status name, e.g. `NOT_FOUND`; also the `status` of an
    /// HTTP+JSON error body.
    pub const fn grpc_status(self) -> &'static str {
        self.row().3
    }

    /// The `reason` of its `google.rpc.ErrorInfo`: the name in UPPER_SNAKE_CASE
    /// without `Error` (`TASK_NOT_FOUND`).
    pub const fn reason(self) -> &'static str {
        self.row().4
    }

    /// A message for when there is nothing more specific to say.
    pub const fn default_message(self) -> &'static str {
        self.row().5
    }

    /// The kind of a JSON-RPC error code.
    pub fn from_code(code: i32) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|kind| kind.code() == code)
    }

    /// The kind of an `ErrorInfo` reason. `INVALID_REQUEST` is
    /// [`ErrorKind::InvalidRequest`] (a parse error has no reason of its own).
    pub fn from_reason(reason: &str) -> Option<ErrorKind> {
        ErrorKind::ALL
            .into_iter()
            .filter(|kind| *kind != ErrorKind::JsonParse)
            .find(|kind| kind.reason() == reason)
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A `google.rpc.ErrorInfo` error detail: `{"@type": …, "reason", "domain",
/// "metadata"}`. Every A2A error carries one with [`ERROR_DOMAIN`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorInfo {
    /// `@type`: [`ERROR_INFO_TYPE`].
    #[serde(rename = "@type")]
    pub type_url: String,
    /// `reason`: e.g. `TASK_NOT_FOUND`.
    #[serde(default, deserialize_with = "nullable")]
    pub reason: String,
    /// `domain`: [`ERROR_DOMAIN`] for A2A's errors.
    #[serde(default, deserialize_with = "nullable")]
    pub domain: String,
    /// `metadata`: context, e.g. `{"taskId": "…"}`.
    #[serde(default, deserialize_with = "nullable")]
    pub metadata: Metadata,
}

/// One bad field of a request, as in a `google.rpc.BadRequest` detail's
/// `fieldViolations`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FieldViolation {
    /// `field`: its path, camelCase (`message.parts[0].text`).
    pub field: String,
    /// `description`: what is wrong with it.
    pub description: String,
}

/// An A2A error: its kind, a human-readable message and its details, each
/// an object with an `@type`: a `google.rpc.ErrorInfo` with the kind's
/// reason (kept first), and any others (e.g. a `google.rpc.BadRequest`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct A2aError {
    /// Which error.
    pub kind: ErrorKind,
    /// The human-readable message.
    pub message: String,
    /// The details, as sent.
    pub details: Vec<Value>,
}

fn is_a2a_error_info(detail: &Value) -> bool {
    detail.get("@type").and_then(Value::as_str) == Some(ERROR_INFO_TYPE)
        && detail.get("domain").and_then(Value::as_str) == Some(ERROR_DOMAIN)
}

impl A2aError {
    /// An error of a kind with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        A2aError {
            kind,
            message: message.into(),
            details: vec![Self::error_info(kind)],
        }
    }

    fn error_info(kind: ErrorKind) -> Value {
        serde_json::json!({
            "@type": ERROR_INFO_TYPE,
            "reason": kind.reason(),
            "domain": ERROR_DOMAIN,
            "metadata": {},
        })
    }

    /// An error of a kind with its default message.
    pub fn of(kind: ErrorKind) -> Self {
        Self::new(kind, kind.default_message())
    }

    /// Adds an entry to the metadata of the A2A `ErrorInfo` (e.g. `taskId`).
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        if !self.details.iter().any(is_a2a_error_info) {
            self.details.insert(0, Self::error_info(self.kind));
        }
        let info = self
            .details
            .iter_mut()
            .find(|detail| is_a2a_error_info(detail))
            .and_then(Value::as_object_mut);
        if let Some(info) = info {
            let metadata = info
                .entry("metadata")
                .or_insert_with(|| Value::Object(Metadata::new()));
            if !metadata.is_object() {
                *metadata = Value::Object(Metadata::new());
            }
            if let Some(metadata) = metadata.as_object_mut() {
                metadata.insert(key.into(), value.into());
            }
        }
        self
    }

    /// The A2A `ErrorInfo` detail, if there is one.
    pub fn error_info_detail(&self) -> Option<ErrorInfo> {
        self.details
            .iter()
            .find(|detail| is_a2a_error_info(detail))
            .and_then(|detail| serde_json::from_value(detail.clone()).ok())
    }

    /// `InvalidParamsError` naming the bad fields in a `google.rpc.BadRequest`.
    pub fn invalid_params(violations: Vec<FieldViolation>) -> Self {
        let message = match violations.as_slice() {
            [one] => format!("Invalid parameters: `{}`: {}", one.field, one.description),
            _ => ErrorKind::InvalidParams.default_message().to_owned(),
        };
        let mut error = Self::new(ErrorKind::InvalidParams, message);
        error.details.push(serde_json::json!({
            "@type": BAD_REQUEST_TYPE,
            "fieldViolations": violations,
        }));
        error
    }

    /// The details to send: an A2A `ErrorInfo` first (added if missing),
    /// then the others.
    pub fn wire_details(&self) -> Vec<Value> {
        let mut details = self.details.clone();
        if !details.iter().any(is_a2a_error_info) {
            details.insert(0, Self::error_info(self.kind));
        }
        details
    }

    fn from_details(kind: ErrorKind, message: String, details: Vec<Value>) -> Self {
        A2aError {
            kind,
            message,
            details,
        }
    }

    /// The JSON-RPC error object: the kind's code, the message, and the
    /// details as `data`.
    pub fn to_jsonrpc(&self) -> crate::jsonrpc::JsonRpcError {
        crate::jsonrpc::JsonRpcError {
            code: self.kind.code(),
            message: self.message.clone(),
            data: Some(Value::Array(self.wire_details())),
        }
    }

    /// The error a JSON-RPC error object stands for. An unknown code is an
    /// [`ErrorKind::Internal`] that keeps the message; `data` that is not an
    /// array of details is kept as one detail.
    pub fn from_jsonrpc(error: &crate::jsonrpc::JsonRpcError) -> Self {
        let kind = ErrorKind::from_code(error.code).unwrap_or(ErrorKind::Internal);
        let details = match &error.data {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.clone(),
            Some(other) => vec![other.clone()],
        };
        Self::from_details(kind, error.message.clone(), details)
    }

    /// The HTTP+JSON response: its status and its body.
    pub fn to_http(&self) -> (u16, HttpErrorBody) {
        let status = self.kind.http_status();
        let body = HttpErrorBody {
            error: HttpError {
                code: i32::from(status),
                status: self.kind.grpc_status().to_owned(),
                message: self.message.clone(),
                details: self.wire_details(),
            },
        };
        (status, body)
    }

    /// The error an HTTP+JSON error body stands for, by the reason of its
    /// A2A `ErrorInfo`, else by the HTTP status (404 `TaskNotFoundError`,
    /// 400 `InvalidParamsError`, anything else `InternalError`).
    pub fn from_http(status: u16, body: &HttpErrorBody) -> Self {
        let by_reason = body.error.details.iter().find_map(|detail| {
            let info: ErrorInfo = serde_json::from_value(detail.clone()).ok()?;
            (info.type_url == ERROR_INFO_TYPE && info.domain == ERROR_DOMAIN)
                .then(|| ErrorKind::from_reason(&info.reason))
                .flatten()
        });
        let kind = by_reason.unwrap_or(match status {
            404 => ErrorKind::TaskNotFound,
            400 => ErrorKind::InvalidParams,
            _ => ErrorKind::Internal,
        });
        Self::from_details(kind, body.error.message.clone(), body.error.details.clone())
    }
}

impl From<DecodeError> for A2aError {
    /// A body that is not JSON is a `JSONParseError`; JSON of the wrong shape
    /// is an `InvalidParamsError` naming the field.
    fn from(error: DecodeError) -> Self {
        if error.syntax {
            A2aError::new(ErrorKind::JsonParse, error.message)
        } else {
            A2aError::invalid_params(vec![FieldViolation {
                field: error.path,
                description: error.message,
            }])
        }
    }
}

/// The body of an HTTP+JSON error response: a `google.rpc.Status` in JSON,
/// under `error` (spec §11.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HttpErrorBody {
    /// `error`: the status.
    pub error: HttpError,
}

/// The `error` of an [`HttpErrorBody`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HttpError {
    /// `code`: the HTTP status again.
    #[serde(default, deserialize_with = "nullable")]
    pub code: i32,
    /// `status`: the gRPC status name (`NOT_FOUND`).
    #[serde(default, deserialize_with = "nullable")]
    pub status: String,
    /// `message`: human-readable.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
    /// `details`: objects with an `@type`; an A2A error's `ErrorInfo` first.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub details: Vec<Value>,
}
