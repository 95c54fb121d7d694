//! Anthropic Messages (`POST {base_url}/messages`, `x-api-key`, `anthropic-version`).

use std::fmt;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::LlmError;
use crate::http::{SseReader, Transport};
use crate::provider::ChatProvider;
use crate::secret::Secret;
use crate::types::{
    ChatRequest, ChatResponse, Delta, DeltaSink, FinishReason, Message, ModelToolCall, ToolChoice,
    Usage,
};

/// The `anthropic-version` sent when the configuration names none.
pub const DEFAULT_ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the Messages API; this is sent when the request has none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A client of one Anthropic Messages endpoint.
#[derive(Clone)]
pub struct AnthropicProvider {
    pub(crate) transport: Transport,
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("name", &self.transport.provider)
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    pub(crate) fn new(
        transport: Transport,
        base_url: &str,
        api_key: Option<&Secret>,
        version: Option<&str>,
        mut headers: HeaderMap,
    ) -> Result<Self, LlmError> {
        if let Some(key) = api_key.filter(|k| !k.is_empty()) {
            let mut value = HeaderValue::from_str(key.expose())
                .map_err(|_| LlmError::Invalid("api_key is not a valid header value".into()))?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        let version = HeaderValue::from_str(version.unwrap_or(DEFAULT_ANTHROPIC_VERSION))
            .map_err(|_| LlmError::Invalid("anthropic_version is not a valid header".into()))?;
        headers.insert(HeaderName::from_static("anthropic-version"), version);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Self {
            transport,
            url: format!("{}/messages", base_url.trim_end_matches('/')),
            headers,
        })
    }
}

/// The tool-use `input` object for arguments text: parsed when it is a JSON object,
/// otherwise kept under `_raw` so the transcript stays valid for the API.
fn input_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ if arguments.trim().is_empty() => json!({}),
        _ => json!({ "_raw": arguments }),
    }
}

/// The Messages request body for `request`.
pub(crate) fn request_body(request: &ChatRequest) -> Value {
    let mut system = Vec::new();
    // (role, content blocks); consecutive blocks of one role are merged, as the API wants
    // strictly alternating turns and all tool results of a turn in one user message.
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, block: Value| match turns.last_mut() {
        Some((r, blocks)) if *r == role => blocks.push(block),
        _ => turns.push((role, vec![block])),
    };
    for message in &request.messages {
        match message {
            Message::System { content } => system.push(content.as_str()),
            Message::User { content } => push("user", json!({"type": "text", "text": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() || tool_calls.is_empty() {
                    push("assistant", json!({"type": "text", "text": content}));
                }
                for call in tool_calls {
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": call.id, "name": call.name,
                            "input": input_object(&call.arguments)}),
                    );
                }
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": tool_call_id,
                    "content": content, "is_error": is_error}),
            ),
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert(
        "max_tokens".into(),
        json!(request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if request.stream {
        body.insert("stream".into(), json!(true));
    }
    for (k, v) in &request.extra {
        body.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(body)
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Option<Vec<Value>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl AnthropicProvider {
    fn parse_full(&self, body: &[u8]) -> Result<ChatResponse, LlmError> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| self.transport.malformed(format!("not a message: {e}")))?;
        if value.get("type").and_then(Value::as_str) == Some("error") {
            return Err(self.transport.malformed(format!("error answer: {value}")));
        }
        let wire: WireMessage = serde_json::from_value(value)
            .map_err(|e| self.transport.malformed(format!("not a message: {e}")))?;
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        for (i, block) in wire.content.iter().flatten().enumerate() {
            match str_field(block, "type") {
                "text" => content.push_str(str_field(block, "text")),
                "tool_use" => tool_calls.push(ModelToolCall {
                    id: non_empty(str_field(block, "id"), i),
                    name: str_field(block, "name").to_owned(),
                    arguments: block.get("input").map(Value::to_string).unwrap_or_default(),
                }),
                _ => {}
            }
        }
        let usage = wire.usage.unwrap_or_default();
        Ok(ChatResponse {
            content,
            finish_reason: finish(wire.stop_reason.as_deref(), &tool_calls),
            tool_calls,
            usage: Usage {
                input_tokens: usage.input_tokens.unwrap_or(0),
                output_tokens: usage.output_tokens.unwrap_or(0),
            },
            model: wire.model.unwrap_or_default(),
        })
    }

    async fn read_stream(
        &self,
        response: reqwest::Response,
        deltas: &mut dyn DeltaSink,
    ) -> Result<ChatResponse, LlmError> {
        let mut reader = SseReader::new(response);
        let mut content = String::new();
        // Content block index -> position in `calls`.
        let mut blocks: Vec<Option<usize>> = Vec::new();
        let mut calls: Vec<ModelToolCall> = Vec::new();
        let mut usage = Usage::default();
        let mut reason: Option<String> = None;
        let mut model = String::new();
        let mut stopped = false;
        while let Some(event) = reader.next(&self.transport).await? {
            if event.data.trim().is_empty() {
                continue;
            }
            let data: Value = serde_json::from_str(&event.data)
                .map_err(|e| self.transport.malformed(format!("stream event: {e}")))?;
            let kind = match str_field(&data, "type") {
                "" => event.event.as_str(),
                k => k,
            };
            match kind {
                "message_start" => {
                    let message = data.get("message").cloned().unwrap_or_default();
                    model = str_field(&message, "model").to_owned();
                    if let Some(u) = message.get("usage") {
                        let u: WireUsage = serde_json::from_value(u.clone()).unwrap_or_default();
                        usage.input_tokens = u.input_tokens.unwrap_or(0);
                        usage.output_tokens = u.output_tokens.unwrap_or(0);
                    }
                }
                "content_block_start" => {
                    let index = block_index(&data)?;
                    let block = data.get("content_block").cloned().unwrap_or_default();
                    if blocks.len() <= index {
                        blocks.resize(index + 1, None);
                    }
                    if str_field(&block, "type") == "tool_use" {
                        let call = ModelToolCall {
                            id: non_empty(str_field(&block, "id"), index),
                            name: str_field(&block, "name").to_owned(),
                            arguments: String::new(),
                        };
                        deltas.delta(Delta::ToolCallStart {
                            index: calls.len(),
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                        if let Some(slot) = blocks.get_mut(index) {
                            *slot = Some(calls.len());
                        }
                        calls.push(call);
                    }
                }
                "content_block_delta" => {
                    let index = block_index(&data)?;
                    let delta = data.get("delta").cloned().unwrap_or_default();
                    match str_field(&delta, "type") {
                        "text_delta" => {
                            let text = str_field(&delta, "text");
                            if !text.is_empty() {
                                content.push_str(text);
                                deltas.delta(Delta::Text(text.to_owned()));
                            }
                        }
                        "input_json_delta" => {
                            let Some(Some(at)) = blocks.get(index).copied() else {
                                return Err(self.transport.malformed(format!(
                                    "input_json_delta for block {index}, which is not a tool_use"
                                )));
                            };
                            let fragment = str_field(&delta, "partial_json").to_owned();
                            if let Some(call) = calls.get_mut(at) {
                                call.arguments.push_str(&fragment);
                            }
                            deltas.delta(Delta::ToolCallArguments {
                                index: at,
                                fragment,
                            });
                        }
                        _ => {}
                    }
                }
                "message_delta" => {
                    if let Some(r) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                        reason = Some(r.to_owned());
                    }
                    if let Some(n) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                        usage.output_tokens = n;
                    }
                    if let Some(n) = data.pointer("/usage/input_tokens").and_then(Value::as_u64) {
                        usage.input_tokens = n;
                    }
                }
                "message_stop" => {
                    stopped = true;
                    break;
                }
                "error" => {
                    return Err(self.transport.malformed(format!("error event: {data}")));
                }
                _ => {}
            }
        }
        if !stopped && reason.is_none() {
            return Err(self.transport.malformed(
                "the stream ended before the answer was complete (no stop_reason, no message_stop)",
            ));
        }
        for call in &mut calls {
            if call.arguments.trim().is_empty() {
                call.arguments = "{}".into();
            }
        }
        Ok(ChatResponse {
            content,
            finish_reason: finish(reason.as_deref(), &calls),
            tool_calls: calls,
            usage,
            model,
        })
    }
}

fn block_index(data: &Value) -> Result<usize, LlmError> {
    let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
    usize::try_from(index)
        .ok()
        .filter(|i| *i < 4096)
        .ok_or_else(|| LlmError::Invalid(format!("content block index {index} out of range")))
}

fn non_empty(id: &str, index: usize) -> String {
    if id.is_empty() {
        format!("toolu_{index}")
    } else {
        id.to_owned()
    }
}

fn finish(reason: Option<&str>, calls: &[ModelToolCall]) -> FinishReason {
    match reason {
        Some(r) if !r.is_empty() => FinishReason::from_wire(r),
        _ if !calls.is_empty() => FinishReason::ToolCalls,
        _ => FinishReason::Other(String::new()),
    }
}

impl ChatProvider for AnthropicProvider {
    fn name(&self) -> &str {
        &self.transport.provider
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        deltas: &mut dyn DeltaSink,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        self.chat_with_headers(request, deltas, cancel, &[]).await
    }
}

impl AnthropicProvider {
    /// [`ChatProvider::chat`] with more request headers next to the
    /// configured ones (a W3C `traceparent`, say); see
    /// [`ModelClient::chat_with_headers`](crate::ModelClient::chat_with_headers).
    pub async fn chat_with_headers(
        &self,
        request: &ChatRequest,
        deltas: &mut dyn DeltaSink,
        cancel: &CancellationToken,
        headers: &[(&str, &str)],
    ) -> Result<ChatResponse, LlmError> {
        let body = serde_json::to_vec(&request_body(request))
            .map_err(|e| LlmError::Invalid(e.to_string()))?;
        let headers = crate::http::with_headers(&self.headers, headers);
        let (response, deadline) = self
            .transport
            .post(&self.url, &headers, &body, cancel)
            .await?;
        self.transport
            .guard(deadline, cancel, async {
                if request.stream {
                    self.read_stream(response, deltas).await
                } else {
                    let bytes = self.transport.body(response).await?;
                    self.parse_full(&bytes)
                }
            })
            .await
    }
}
