//! Provider-neutral chat types: messages, tools, tool calls, deltas, usage.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// Instructions (the system prompt).
    System {
        /// The text.
        content: String,
    },
    /// The user's (or caller's) words.
    User {
        /// The text.
        content: String,
    },
    /// A model answer: text and/or tool calls.
    Assistant {
        /// The text (may be empty when the answer is only tool calls).
        content: String,
        /// The tool calls asked for.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ModelToolCall>,
    },
    /// The result of one tool call, answered back to the model.
    Tool {
        /// The [`ModelToolCall::id`] answered.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// The result (or the error) as text.
        content: String,
        /// Whether `content` describes a failure.
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// An assistant message of text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }
}

/// A tool (function) the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

impl ToolSpec {
    /// A tool with a description and a JSON Schema for its arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// How the model should pick tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool must be called.
    Tool(String),
}

/// A tool call in a model answer. `arguments` is the raw text the model produced, which
/// need not be valid JSON: the loop parses it and answers a parse failure to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelToolCall {
    /// Call id, echoed in the tool result.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model wrote them (JSON text, possibly malformed).
    pub arguments: String,
}

/// A chat request, free of credentials (those live in the provider).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// Model name.
    pub model: String,
    /// The conversation so far; system messages included.
    pub messages: Vec<Message>,
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
    /// How the model should pick tools (ignored when `tools` is empty).
    pub tool_choice: ToolChoice,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Most tokens to generate.
    pub max_tokens: Option<u32>,
    /// Stream the answer (deltas go to the callback as they arrive).
    pub stream: bool,
    /// More body parameters (`top_p`, `stop`, `seed`…), merged into the request body
    /// without overriding the fields above.
    pub extra: Map<String, Value>,
}

/// Token counts of one or more model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt (input) tokens.
    pub input_tokens: u64,
    /// Generated (output) tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Adds `other` into `self` (saturating).
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end of the answer.
    Stop,
    /// It wants tool calls answered.
    ToolCalls,
    /// It hit `max_tokens`.
    Length,
    /// Anything else the provider said (kept verbatim), or nothing.
    Other(String),
}

impl FinishReason {
    pub(crate) fn from_wire(value: &str) -> Self {
        match value {
            "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "tool_calls" | "tool_use" | "function_call" => FinishReason::ToolCalls,
            "length" | "max_tokens" => FinishReason::Length,
            other => FinishReason::Other(other.to_owned()),
        }
    }
}

/// A model's complete answer (serialisable, so that a host can journal it
/// and answer the same turn again without asking the model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text.
    pub content: String,
    /// The tool calls asked for, in order.
    pub tool_calls: Vec<ModelToolCall>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Tokens used by this call (zero when the provider did not say).
    pub usage: Usage,
    /// The model that answered, as the provider named it.
    pub model: String,
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    /// More answer text.
    Text(String),
    /// A tool call begins.
    ToolCallStart {
        /// Its position in the answer.
        index: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// More argument text of the tool call at `index`.
    ToolCallArguments {
        /// Its position in the answer.
        index: usize,
        /// The fragment.
        fragment: String,
    },
}

/// Receives streamed [`Delta`]s. Closures `FnMut(Delta) + Send` implement it.
pub trait DeltaSink: Send {
    /// One delta arrived.
    fn delta(&mut self, delta: Delta);
}

impl<F: FnMut(Delta) + Send> DeltaSink for F {
    fn delta(&mut self, delta: Delta) {
        self(delta)
    }
}

/// A [`DeltaSink`] that drops every delta (for non-streaming calls).
pub struct NoDeltas;

impl DeltaSink for NoDeltas {
    fn delta(&mut self, _delta: Delta) {}
}
