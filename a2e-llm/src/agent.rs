//! The agentic loop: the model answers, its tool calls run through a [`ToolExecutor`],
//! results go back, until it answers without tools or `max_turns` is reached.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::error::LoopError;
use crate::events::LoopEvent;
use crate::provider::ChatProvider;
use crate::types::{ChatRequest, Delta, Message, ModelToolCall, ToolChoice, ToolSpec, Usage};

/// Runs the tools the model calls. The host implements it over its tool registry.
pub trait ToolExecutor: Send + Sync {
    /// The tools offered to the model; calls of any other name are refused.
    fn tools(&self) -> Vec<ToolSpec>;

    /// Runs one tool. `Err` is a failure answered to the model as an error result.
    fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> impl Future<Output = Result<Value, String>> + Send;
}

/// Receives [`LoopEvent`]s as the loop runs. Closures `Fn(LoopEvent) + Send + Sync`
/// implement it.
pub trait LoopEventSink: Send + Sync {
    /// One event.
    fn event(&self, event: LoopEvent);
}

impl<F: Fn(LoopEvent) + Send + Sync> LoopEventSink for F {
    fn event(&self, event: LoopEvent) {
        self(event)
    }
}

/// Limits and switches of one loop.
#[derive(Debug, Clone)]
pub struct LoopOptions {
    /// Most model calls (turns). At least 1.
    pub max_turns: u32,
    /// Bound on the whole loop (model calls and tools).
    pub timeout: Option<Duration>,
    /// Stream model answers (text deltas become events).
    pub stream: bool,
    /// Tool choice for the first turn (later turns use `auto`), e.g. to force a tool.
    pub first_tool_choice: ToolChoice,
    /// Most bytes of a tool result fed back to the model.
    pub max_tool_result_bytes: usize,
    /// Most bytes of tool arguments or results quoted in an event.
    pub max_event_bytes: usize,
    /// Check tool arguments against each tool's JSON Schema before running it.
    pub validate_arguments: bool,
}

impl Default for LoopOptions {
    fn default() -> Self {
        Self {
            max_turns: 10,
            timeout: None,
            stream: false,
            first_tool_choice: ToolChoice::Auto,
            max_tool_result_bytes: 32 * 1024,
            max_event_bytes: 2 * 1024,
            validate_arguments: true,
        }
    }
}

/// How a loop ended well: the final answer and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopOutcome {
    /// The model's final text.
    pub text: String,
    /// Tokens of all turns.
    pub usage: Usage,
    /// Model calls made.
    pub turns: u32,
    /// Tool calls answered (run, refused or failed).
    pub tool_calls: u32,
    /// The whole conversation, final answer included.
    pub messages: Vec<Message>,
}

/// `text` cut to at most `max` bytes on a character boundary, with a note of the cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

/// Runs the loop: `request` holds the model settings and the opening messages (system
/// prompt and user content); the executor's tools are offered. Ends with the model's
/// first answer without tool calls, or [`LoopError::MaxTurns`] when it still calls tools
/// after `max_turns` turns, [`LoopError::Timeout`], [`LoopError::Cancelled`], or a
/// provider error. Cancelling or timing out drops the in-flight HTTP stream.
pub async fn run_loop<P, T, S>(
    provider: &P,
    request: ChatRequest,
    executor: &T,
    sink: &S,
    options: &LoopOptions,
    cancel: &CancellationToken,
) -> Result<LoopOutcome, LoopError>
where
    P: ChatProvider,
    T: ToolExecutor,
    S: LoopEventSink,
{
    let work = turns(provider, request, executor, sink, options, cancel);
    let bounded = async {
        match options.timeout {
            Some(after) => tokio::time::timeout(after, work)
                .await
                .unwrap_or(Err(LoopError::Timeout { after })),
            None => work.await,
        }
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(LoopError::Cancelled),
        result = bounded => result,
    }
}

async fn turns<P: ChatProvider, T: ToolExecutor, S: LoopEventSink>(
    provider: &P,
    mut request: ChatRequest,
    executor: &T,
    sink: &S,
    options: &LoopOptions,
    cancel: &CancellationToken,
) -> Result<LoopOutcome, LoopError> {
    let max_turns = options.max_turns.max(1);
    request.tools = executor.tools();
    request.stream = options.stream;
    let validators = if options.validate_arguments {
        compile_validators(&request.tools)
    } else {
        HashMap::new()
    };
    let mut usage = Usage::default();
    let mut tool_calls: u32 = 0;
    for turn in 1..=max_turns {
        sink.event(LoopEvent::TurnStarted { turn, max_turns });
        request.tool_choice = if turn == 1 {
            options.first_tool_choice.clone()
        } else {
            ToolChoice::Auto
        };
        let mut on_delta = |delta: Delta| {
            if let Delta::Text(text) = delta {
                sink.event(LoopEvent::TextDelta { text });
            }
        };
        let answer = provider.chat(&request, &mut on_delta, cancel).await?;
        usage.add(answer.usage);
        sink.event(LoopEvent::Usage {
            turn,
            usage: answer.usage,
            total: usage,
        });
        request.messages.push(Message::Assistant {
            content: answer.content.clone(),
            tool_calls: answer.tool_calls.clone(),
        });
        if answer.tool_calls.is_empty() {
            return Ok(LoopOutcome {
                text: answer.content,
                usage,
                turns: turn,
                tool_calls,
                messages: request.messages,
            });
        }
        for call in &answer.tool_calls {
            tool_calls = tool_calls.saturating_add(1);
            sink.event(LoopEvent::ToolCall {
                turn,
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: truncate(&call.arguments, options.max_event_bytes),
            });
            let (content, is_error, refused) =
                answer_call(call, &request.tools, &validators, executor).await;
            let content = truncate(&content, options.max_tool_result_bytes);
            sink.event(LoopEvent::ToolResult {
                turn,
                id: call.id.clone(),
                name: call.name.clone(),
                is_error,
                refused,
                content: truncate(&content, options.max_event_bytes),
            });
            request.messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error,
            });
        }
    }
    Err(LoopError::MaxTurns {
        limit: max_turns,
        usage,
    })
}

fn compile_validators(tools: &[ToolSpec]) -> HashMap<String, jsonschema::Validator> {
    let mut out = HashMap::new();
    for tool in tools {
        let empty = tool.parameters.as_object().is_none_or(Map::is_empty);
        if empty {
            continue;
        }
        match jsonschema::validator_for(&tool.parameters) {
            Ok(v) => {
                out.insert(tool.name.clone(), v);
            }
            Err(e) => {
                tracing::warn!(tool = %tool.name, "tool schema does not compile, arguments go unchecked: {e}")
            }
        }
    }
    out
}

/// Answers one tool call: (content, is_error, refused).
async fn answer_call<T: ToolExecutor>(
    call: &ModelToolCall,
    offered: &[ToolSpec],
    validators: &HashMap<String, jsonschema::Validator>,
    executor: &T,
) -> (String, bool, bool) {
    if !offered.iter().any(|t| t.name == call.name) {
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        return (
            format!(
                "refused: tool {:?} is not offered here; the tools are: {}",
                call.name,
                names.join(", ")
            ),
            true,
            true,
        );
    }
    let arguments = match parse_arguments(&call.arguments) {
        Ok(v) => v,
        Err(e) => return (format!("error: {e}"), true, false),
    };
    if let Some(validator) = validators.get(&call.name) {
        let violations: Vec<String> = validator
            .iter_errors(&arguments)
            .take(20)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path = if path.is_empty() {
                    "$".to_owned()
                } else {
                    path
                };
                format!("{path}: {e}")
            })
            .collect();
        if !violations.is_empty() {
            return (
                format!(
                    "error: the arguments do not match the tool's schema: {}",
                    violations.join("; ")
                ),
                true,
                false,
            );
        }
    }
    match executor.call_tool(&call.name, arguments).await {
        Ok(Value::String(s)) => (s, false, false),
        Ok(v) => (v.to_string(), false, false),
        Err(e) => (format!("error: {e}"), true, false),
    }
}

/// Tool arguments as a JSON object: empty text is `{}`; anything not an object is an
/// error whose text tells the model what is wrong.
pub fn parse_arguments(text: &str) -> Result<Value, ArgumentsError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(ArgumentsError::NotAnObject {
            got: a2e_proto::json_kind(&other),
        }),
        Err(source) => Err(ArgumentsError::Json { source }),
    }
}

/// Why a model's tool arguments were not used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentsError {
    /// Valid JSON, but not an object.
    #[error("the arguments must be a JSON object, got {got}")]
    NotAnObject {
        /// The JSON kind they have.
        got: &'static str,
    },
    /// Not JSON.
    #[error(
        "the arguments are not valid JSON ({source}); send one JSON object matching the tool's parameters"
    )]
    Json {
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}
