//! Layer 1 invocation messages: `acmp/invoke` params, `acmp/result`, streaming chunks,
//! heartbeats, cancellation, and the capability advertisement.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Payload, Task};

/// Method names of Layer 1.
pub mod methods {
    /// Request, buyer → provider.
    pub const INVOKE: &str = "acmp/invoke";
    /// Notification, buyer → provider.
    pub const INPUT_CHUNK: &str = "acmp/inputChunk";
    /// Notification, provider → buyer.
    pub const STREAM_CHUNK: &str = "acmp/streamChunk";
    /// Notification, provider → buyer.
    pub const HEARTBEAT: &str = "acmp/heartbeat";
    /// Notification, buyer → provider.
    pub const CANCEL: &str = "acmp/cancel";
}

/// The provider-side default of `timeout_ms` when an invoke names none.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The params of an `acmp/invoke`: one task, with a literal input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InvokeParams {
    /// Globally unique task id; also the idempotency key.
    pub task_id: String,
    /// Capability tag.
    pub capability: String,
    /// The literal input; omitted when `input_stream` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Payload>,
    /// Expected output format; `json` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_type: Option<String>,
    /// The buyer's estimate of input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens_est: Option<u64>,
    /// Maximum price in CU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_price_cu: Option<f64>,
    /// Preferred tier: `S`, `A` or `B`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_tier: Option<String>,
    /// Hard wall-clock deadline in milliseconds; 30000 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Stream the output as `acmp/streamChunk` (needs `output_streaming`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The input arrives as `acmp/inputChunk` (needs `input_streaming`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_stream: Option<bool>,
    /// Escrow to charge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escrow_id: Option<String>,
    /// Requested proof: `result-hash`, `execution-trace`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof_method: Option<String>,
    /// Arbitrary key-value metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// An `acmp/invoke` that breaks a Layer 1 rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeParamsError {
    /// Neither `input` nor `input_stream: true`.
    #[error("task \"{0}\": input: required unless input_stream is true")]
    MissingInput(String),
    /// Both `input` and `input_stream: true`.
    #[error("task \"{0}\": input: must be omitted when input_stream is true")]
    InputWithInputStream(String),
}

impl InvokeParams {
    /// The invoke for a task whose input is already literal.
    ///
    /// `input` replaces the task's own input (the orchestrator passes the resolved
    /// reference); `None` means the input arrives as a stream.
    pub fn for_task(task: &Task, input: Option<Payload>) -> Self {
        Self {
            task_id: task.task_id.clone(),
            capability: task.capability.clone(),
            input_stream: input.is_none().then_some(true),
            input,
            output_type: task.output_type.clone(),
            input_tokens_est: task.input_tokens_est,
            max_price_cu: task.max_price_cu,
            preferred_tier: task.preferred_tier.clone(),
            timeout_ms: task.timeout_ms,
            stream: None,
            escrow_id: task.escrow_id.clone(),
            proof_method: task.proof_method.clone(),
            metadata: task.metadata.clone(),
        }
    }

    /// Whether the output is to be streamed.
    pub fn is_stream(&self) -> bool {
        self.stream.unwrap_or(false)
    }

    /// Whether the input arrives as a stream.
    pub fn is_input_stream(&self) -> bool {
        self.input_stream.unwrap_or(false)
    }

    /// The deadline, with the Layer 1 default.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)
    }

    /// Checks the rule that decoding cannot express: `input` is present exactly when
    /// `input_stream` is not true.
    pub fn check(&self) -> Result<(), InvokeParamsError> {
        match (self.input.is_some(), self.is_input_stream()) {
            (false, false) => Err(InvokeParamsError::MissingInput(self.task_id.clone())),
            (true, true) => Err(InvokeParamsError::InputWithInputStream(
                self.task_id.clone(),
            )),
            _ => Ok(()),
        }
    }
}

/// Proof of execution attached to a result (Layer 3), e.g. `{method: "result-hash", hash}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Proof {
    /// The proof method: `result-hash`, `execution-trace`, …
    pub method: String,
    /// The method's other fields (`hash`, …).
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// An `acmp/result`: the JSON-RPC result of a successful `acmp/invoke`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InvokeResult {
    /// The task this result answers.
    pub task_id: String,
    /// The output; omitted when it was streamed (`output_streamed: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Payload>,
    /// Whether the output went out as `acmp/streamChunk`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_streamed: Option<bool>,
    /// Tokens consumed.
    pub tokens_used: u64,
    /// Cost in CU (≤ `max_price_cu`).
    pub cost_cu: f64,
    /// Proof of execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
    /// The provider, `agent:<name>:<region>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
}

impl InvokeResult {
    /// A result carrying its output, with zero tokens and cost.
    pub fn new(task_id: impl Into<String>, output: Payload) -> Self {
        Self {
            task_id: task_id.into(),
            output: Some(output),
            output_streamed: None,
            tokens_used: 0,
            cost_cu: 0.0,
            proof: None,
            provider_id: None,
        }
    }

    /// A result for an output that went out as stream chunks.
    pub fn streamed(task_id: impl Into<String>) -> Self {
        Self {
            output: None,
            output_streamed: Some(true),
            ..Self::new(task_id, Payload::json(Value::Null))
        }
    }

    /// Sets `tokens_used` and `cost_cu`.
    #[must_use]
    pub fn with_usage(mut self, tokens_used: u64, cost_cu: f64) -> Self {
        self.tokens_used = tokens_used;
        self.cost_cu = cost_cu;
        self
    }

    /// Whether the output was streamed.
    pub fn is_output_streamed(&self) -> bool {
        self.output_streamed.unwrap_or(false)
    }
}

/// The params of an `acmp/inputChunk` (buyer → provider).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InputChunk {
    /// The receiving task.
    pub task_id: String,
    /// Monotonic sequence number from 0; chunks are processed in `seq` order.
    pub seq: u64,
    /// The chunk.
    pub chunk: Payload,
    /// Whether this is the last chunk.
    #[serde(rename = "final")]
    pub is_final: bool,
}

/// The params of an `acmp/streamChunk` (provider → buyer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StreamChunk {
    /// The producing task.
    pub task_id: String,
    /// Monotonic sequence number from 0.
    pub seq: u64,
    /// The chunk.
    pub chunk: Payload,
    /// Whether this is the last chunk; `acmp/result` with `output_streamed: true` follows.
    #[serde(rename = "final")]
    pub is_final: bool,
}

/// The params of an `acmp/heartbeat` (provider → buyer). Heartbeats never extend
/// `timeout_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Heartbeat {
    /// The task.
    pub task_id: String,
    /// Progress, 0.0–1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
    /// Free-form detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The params of an `acmp/cancel` (buyer → provider). The provider stops and answers the
/// original invoke with -33004.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cancel {
    /// The task to cancel.
    pub task_id: String,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Optional features a provider advertises (`capabilities.acmp.features`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProviderFeatures {
    /// Can send `acmp/streamChunk` (needs server push).
    #[serde(default)]
    pub output_streaming: bool,
    /// Can receive `acmp/inputChunk`.
    #[serde(default)]
    pub input_streaming: bool,
    /// Interval of `acmp/heartbeat`, if the provider sends them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_interval_ms: Option<u64>,
}

impl ProviderFeatures {
    /// Both streaming directions.
    pub fn streaming() -> Self {
        Self {
            output_streaming: true,
            input_streaming: true,
            heartbeat_interval_ms: None,
        }
    }
}

/// The ACMP advertisement in an MCP `initialize` result (`capabilities.acmp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AcmpCapabilities {
    /// ACMP version, e.g. `0.1.0`.
    pub version: String,
    /// `provider` or `buyer`.
    pub role: String,
    /// Methods accepted.
    #[serde(default)]
    pub accepts: Vec<String>,
    /// Methods emitted.
    #[serde(default)]
    pub emits: Vec<String>,
    /// Optional features.
    #[serde(default)]
    pub features: ProviderFeatures,
}
