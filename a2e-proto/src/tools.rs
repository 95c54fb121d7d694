//! The tools capability (`tool/*`, a2e-tools spec): messages and data models.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::codes::ErrorCode;
use crate::event::EventKind;

/// One input or output parameter of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "arbitrary", derive(proptest_derive::Arbitrary))]
pub struct ToolParameter {
    /// Parameter name.
    pub name: String,
    /// JSON Schema type: `string`, `integer`, `number`, `boolean`, `object`, `array`.
    #[serde(rename = "type")]
    pub param_type: String,
    /// What it means.
    pub description: String,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
    /// Allowed values.
    #[serde(default)]
    pub r#enum: Option<Vec<String>>,
    /// Nested properties of an `object` parameter.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(value = "None"))]
    pub properties: Option<BTreeMap<String, ToolParameter>>,
}

impl ToolParameter {
    /// A parameter with a name, a JSON type and a description.
    pub fn new(name: &str, param_type: &str, description: &str) -> Self {
        Self {
            name: name.into(),
            param_type: param_type.into(),
            description: description.into(),
            required: false,
            r#enum: None,
            properties: None,
        }
    }

    /// The same parameter, required.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
}

/// A tool's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "arbitrary", derive(proptest_derive::Arbitrary))]
pub struct ToolDefinition {
    /// Unique tool name, e.g. `read_file`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Input parameters.
    #[serde(default)]
    #[cfg_attr(
        feature = "arbitrary",
        proptest(
            strategy = "proptest::collection::vec(proptest::arbitrary::any::<ToolParameter>(), 0..3)"
        )
    )]
    pub input_parameters: Vec<ToolParameter>,
    /// Output parameters.
    #[serde(default)]
    #[cfg_attr(
        feature = "arbitrary",
        proptest(
            strategy = "proptest::collection::vec(proptest::arbitrary::any::<ToolParameter>(), 0..3)"
        )
    )]
    pub output_parameters: Vec<ToolParameter>,
    /// Whether it streams events.
    #[serde(default = "crate::envelope::yes")]
    pub streaming: bool,
    /// Whether a retry is safe.
    #[serde(default)]
    pub idempotent: bool,
    /// Classification tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Tool version.
    #[serde(default = "default_tool_version")]
    pub version: String,
    /// Parent toolkit.
    #[serde(default)]
    pub toolkit: Option<String>,
    /// Hidden from the plain listing; found by search.
    #[serde(default)]
    pub defer_loading: bool,
}

fn default_tool_version() -> String {
    "1.0.0".into()
}

impl ToolDefinition {
    /// A tool with a name and description and every other field at its default.
    pub fn new(name: &str, description: &str) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_parameters: Vec::new(),
            output_parameters: Vec::new(),
            streaming: true,
            idempotent: false,
            tags: Vec::new(),
            version: default_tool_version(),
            toolkit: None,
            defer_loading: false,
        }
    }

    /// Adds an input parameter.
    pub fn param(mut self, param: ToolParameter) -> Self {
        self.input_parameters.push(param);
        self
    }

    /// Adds tags.
    pub fn tags(mut self, tags: &[&str]) -> Self {
        self.tags.extend(tags.iter().map(|t| (*t).to_owned()));
        self
    }

    /// Marks the tool idempotent (calling it twice with the same arguments
    /// has the effect of calling it once).
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "arbitrary", derive(proptest_derive::Arbitrary))]
pub struct ToolResult {
    /// Whether it succeeded.
    pub success: bool,
    /// The tool that ran.
    pub tool_name: String,
    /// Result data (`null` when none).
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::json()"))]
    pub data: Value,
    /// A summary for a person (`null` when none).
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::json()"))]
    pub summary: Value,
    /// Output was cut at a limit.
    #[serde(default)]
    pub truncated: bool,
    /// Process exit code, where one ran.
    #[serde(default)]
    #[serde(deserialize_with = "crate::num::opt_int")]
    pub exit_code: Option<i64>,
    /// Error message.
    #[serde(default)]
    pub error: Option<String>,
    /// Machine-readable error code.
    #[serde(default)]
    pub error_code: Option<ErrorCode>,
    /// Execution time.
    #[serde(deserialize_with = "crate::num::int")]
    pub duration_ms: u64,
    /// Events streamed during the call.
    #[serde(default)]
    #[cfg_attr(
        feature = "arbitrary",
        proptest(
            strategy = "proptest::collection::vec(proptest::arbitrary::any::<ToolEvent>(), 0..3)"
        )
    )]
    pub events: Vec<ToolEvent>,
}

impl ToolResult {
    /// A successful result carrying `data`.
    pub fn ok(tool_name: &str, data: Value) -> Self {
        Self {
            success: true,
            tool_name: tool_name.into(),
            data,
            summary: Value::Null,
            truncated: false,
            exit_code: None,
            error: None,
            error_code: None,
            duration_ms: 0,
            events: Vec::new(),
        }
    }

    /// A failed result.
    pub fn failed(tool_name: &str, code: ErrorCode, error: impl Into<String>) -> Self {
        Self {
            success: false,
            error: Some(error.into()),
            error_code: Some(code),
            ..Self::ok(tool_name, Value::Null)
        }
    }
}

wire_message! {
    /// `tool/list/req` — list (empty `query`) or search tools.
    pub struct ToolListRequest = "tool/list/req" {
        /// Tool kind filter (empty = all).
        #[serde(default)]
        pub filter_kind: String = String::new(),
        /// Tags every listed tool must carry (AND).
        #[serde(default)]
        pub filter_tags: Vec<String> = Vec::new(),
        /// Search query; empty = list mode.
        #[serde(default)]
        pub query: String = String::new(),
        /// Include deferred tools in search results.
        #[serde(default)]
        pub include_deferred: bool = false,
    }
}

wire_message! {
    /// `tool/list/resp` — the matching tool manifests.
    pub struct ToolListResponse = "tool/list/resp" {
        /// The request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// Tool definitions.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "proptest::collection::vec(proptest::arbitrary::any::<ToolDefinition>(), 0..3)"))]
        pub tools: Vec<ToolDefinition> = Vec::new(),
    }
}

wire_message! {
    /// `tool/call/req` — execute a tool.
    pub struct ToolCallRequest = "tool/call/req" {
        /// Session from the handshake.
        #[serde(default)]
        pub session_id: String = String::new(),
        /// Tool to run.
        pub tool_name: String = String::new(),
        /// Arguments, validated against the tool's parameters.
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub arguments: Map<String, Value> = Map::new(),
        /// Ties the call to an agent turn.
        #[serde(default)]
        pub correlation_id: String = String::new(),
        /// W3C trace context of the caller (`00-<trace id>-<span id>-<flags>`):
        /// the request's spans join the caller's trace. Optional; an unusable
        /// value starts a new trace (docs/observability.md).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub traceparent: String = String::new(),
        /// The W3C `tracestate` that goes with `traceparent`. Optional.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub tracestate: String = String::new(),
        /// Emit `tool/event`s before the response.
        #[serde(default)]
        pub streaming: bool = false,
        /// Wall-clock limit in seconds.
        #[serde(default = "default_tool_timeout")]
        #[serde(deserialize_with = "crate::num::int")]
        pub timeout: u64 = default_tool_timeout(),
    }
}

fn default_tool_timeout() -> u64 {
    30
}

impl ToolCallRequest {
    /// A call of `tool_name`; `arguments` should be a JSON object (anything else is sent as `{}`).
    ///
    /// ```
    /// use a2e_proto::ToolCallRequest;
    /// let req = ToolCallRequest::new("read_file", serde_json::json!({"path": "README.md"}));
    /// assert_eq!(req.timeout, 30);
    /// ```
    pub fn new(tool_name: &str, arguments: Value) -> Self {
        Self {
            tool_name: tool_name.into(),
            arguments: match arguments {
                Value::Object(map) => map,
                _ => Map::new(),
            },
            ..Self::default()
        }
    }
}

wire_message! {
    /// `tool/call/resp` — the final result of a tool call.
    pub struct ToolCallResponse = "tool/call/resp" {
        /// The request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// The result.
        pub data: ToolResult = ToolResult::ok("", Value::Null),
        /// When the result was made.
        #[serde(default = "crate::envelope::now")]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::finite()"))]
        pub created_at: f64 = crate::envelope::now(),
    }
}

wire_message! {
    /// `tool/event` — a streaming event during a tool call.
    pub struct ToolEvent = "tool/event" {
        /// Event kind.
        pub kind: EventKind = EventKind::STATUS,
        /// The call this belongs to.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// Payload.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub data: Map<String, Value> = Map::new(),
        /// 0, 1, 2, … per call.
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub seq: u64 = 0,
    }
}

impl_request!(ToolListRequest, ToolCallRequest);
impl_response!(ToolListResponse, ToolCallResponse, ToolEvent);
