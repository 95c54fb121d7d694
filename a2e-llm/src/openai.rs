//! OpenAI-compatible Chat Completions (`POST {base_url}/chat/completions`): OpenAI, Azure
//! OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter.

use std::fmt;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
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

/// A client of one OpenAI-compatible endpoint.
#[derive(Clone)]
pub struct OpenAiProvider {
    pub(crate) transport: Transport,
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) stream_usage: bool,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("name", &self.transport.provider)
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    pub(crate) fn new(
        transport: Transport,
        base_url: &str,
        api_key: Option<&Secret>,
        mut headers: HeaderMap,
        stream_usage: bool,
    ) -> Result<Self, LlmError> {
        if let Some(key) = api_key.filter(|k| !k.is_empty()) {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                .map_err(|_| LlmError::Invalid("api_key is not a valid header value".into()))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Self {
            transport,
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            headers,
            stream_usage,
        })
    }
}

/// The Chat Completions request body for `request`.
pub(crate) fn request_body(request: &ChatRequest, stream_usage: bool) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(m) = request.max_tokens {
        body.insert("max_tokens".into(), json!(m));
    }
    if request.stream {
        body.insert("stream".into(), json!(true));
        if stream_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    for (k, v) in &request.extra {
        body.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(body)
}

fn wire_message(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut m = json!({"role": "assistant", "content": content});
            // `content` stays a string even when empty: the API allows null beside
            // tool calls, but some compatible servers (llama-cpp-python) reject null.
            if let (false, Some(fields)) = (tool_calls.is_empty(), m.as_object_mut()) {
                let calls = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
                fields.insert("tool_calls".into(), calls);
            }
            m
        }
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

#[derive(Deserialize, Default)]
struct WireCompletion {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    delta: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
        }
    }
}

/// Text of a `content` that is a string or a list of `{type: text, text}` parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Arguments as text: a string is kept verbatim, anything else (some servers send an
/// object) is serialised.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Tool calls being assembled from stream fragments.
#[derive(Default)]
struct Calls {
    calls: Vec<ModelToolCall>,
}

impl Calls {
    fn apply(&mut self, wire: &WireToolCall, deltas: &mut dyn DeltaSink) {
        let index = match wire.index {
            Some(i) => i,
            None if wire.id.is_some() => self.calls.len(),
            None => self.calls.len().saturating_sub(1),
        };
        // A bound on how many calls one answer may hold; past it fragments are dropped.
        if index >= 1024 {
            return;
        }
        let function = wire.function.as_ref();
        if index >= self.calls.len() {
            self.calls.resize_with(index + 1, || ModelToolCall {
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
        }
        let Some(call) = self.calls.get_mut(index) else {
            return;
        };
        let starting = call.name.is_empty() && call.id.is_empty();
        if let Some(id) = &wire.id {
            call.id.clone_from(id);
        }
        if let Some(name) = function.and_then(|f| f.name.as_ref()) {
            call.name.push_str(name);
        }
        if starting && (!call.id.is_empty() || !call.name.is_empty()) {
            deltas.delta(Delta::ToolCallStart {
                index,
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
        if let Some(args) = function.and_then(|f| f.arguments.as_ref()) {
            let fragment = arguments_text(args);
            if !fragment.is_empty() {
                call.arguments.push_str(&fragment);
                deltas.delta(Delta::ToolCallArguments { index, fragment });
            }
        }
    }

    fn finish(self) -> Vec<ModelToolCall> {
        self.calls
            .into_iter()
            .enumerate()
            .filter(|(_, c)| !c.name.is_empty())
            .map(|(i, mut c)| {
                if c.id.is_empty() {
                    c.id = format!("call_{i}");
                }
                c
            })
            .collect()
    }
}

impl OpenAiProvider {
    fn error_in_body(&self, error: &Value) -> LlmError {
        self.transport
            .malformed(format!("the answer carries an error: {error}"))
    }

    fn parse_full(&self, body: &[u8]) -> Result<ChatResponse, LlmError> {
        let wire: WireCompletion = serde_json::from_slice(body).map_err(|e| {
            self.transport
                .malformed(format!("not a chat completion: {e}"))
        })?;
        if let Some(error) = &wire.error {
            return Err(self.error_in_body(error));
        }
        let choice = wire
            .choices
            .and_then(|c| c.into_iter().next())
            .ok_or_else(|| self.transport.malformed("choices is empty or missing"))?;
        let message = choice
            .message
            .ok_or_else(|| self.transport.malformed("choices[0].message is missing"))?;
        let mut calls = Calls::default();
        for wire_call in message.tool_calls.iter().flatten() {
            let wire_call = WireToolCall {
                index: None,
                id: Some(wire_call.id.clone().unwrap_or_default()),
                function: wire_call.function.as_ref().map(|f| WireFunction {
                    name: f.name.clone(),
                    arguments: f.arguments.clone(),
                }),
            };
            calls.apply(&wire_call, &mut crate::types::NoDeltas);
        }
        let tool_calls = calls.finish();
        Ok(ChatResponse {
            content: message
                .content
                .as_ref()
                .map(content_text)
                .unwrap_or_default(),
            finish_reason: finish(choice.finish_reason.as_deref(), &tool_calls),
            tool_calls,
            usage: wire.usage.map(|u| u.usage()).unwrap_or_default(),
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
        let mut calls = Calls::default();
        let mut reason: Option<String> = None;
        let mut usage = Usage::default();
        let mut model = String::new();
        let mut done = false;
        while let Some(event) = reader.next(&self.transport).await? {
            let data = event.data.trim();
            if data == "[DONE]" {
                done = true;
                break;
            }
            if data.is_empty() {
                continue;
            }
            let chunk: WireCompletion = serde_json::from_str(data)
                .map_err(|e| self.transport.malformed(format!("stream chunk: {e}")))?;
            if let Some(error) = &chunk.error {
                return Err(self.error_in_body(error));
            }
            if let Some(m) = chunk.model {
                model = m;
            }
            if let Some(u) = &chunk.usage {
                usage = u.usage();
            }
            for choice in chunk.choices.iter().flatten() {
                if let Some(r) = choice.finish_reason.as_ref().filter(|r| !r.is_empty()) {
                    reason = Some(r.clone());
                }
                let Some(delta) = choice.delta.as_ref().or(choice.message.as_ref()) else {
                    continue;
                };
                if let Some(text) = delta.content.as_ref().map(content_text)
                    && !text.is_empty()
                {
                    content.push_str(&text);
                    deltas.delta(Delta::Text(text));
                }
                for wire_call in delta.tool_calls.iter().flatten() {
                    calls.apply(wire_call, deltas);
                }
            }
        }
        if !done && reason.is_none() {
            // The server closed the stream mid-answer (interrupted, crashed, cut off).
            return Err(self.transport.malformed(
                "the stream ended before the answer was complete (no finish_reason, no [DONE])",
            ));
        }
        let tool_calls = calls.finish();
        Ok(ChatResponse {
            content,
            finish_reason: finish(reason.as_deref(), &tool_calls),
            tool_calls,
            usage,
            model,
        })
    }
}

fn finish(reason: Option<&str>, calls: &[ModelToolCall]) -> FinishReason {
    match reason {
        Some(r) if !r.is_empty() => FinishReason::from_wire(r),
        _ if !calls.is_empty() => FinishReason::ToolCalls,
        _ => FinishReason::Other(String::new()),
    }
}

impl ChatProvider for OpenAiProvider {
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

impl OpenAiProvider {
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
        let body = serde_json::to_vec(&request_body(request, self.stream_usage))
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
