//! The connected MCP client's model as a chat provider: an LLM skill called
//! from an MCP client runs its model calls through the client's
//! `sampling/createMessage` when the skill names the provider
//! [`CLIENT_PROVIDER`], or when the host has no provider configured. The
//! user of Claude Desktop (or any client with sampling) runs the host's LLM
//! skills on the model they already have, with no API key in the host.
//!
//! The skill's tools are offered to the client's model as sampling `tools`
//! when the client declared `sampling.tools`; the tool calls it asks for run
//! on the host, as with any provider, and their results go back as
//! `tool_result` blocks. A client without `sampling.tools` gets the
//! conversation without tools. The tools are offered under the names the
//! host's MCP server gives them ([`crate::names`]): a tool the tool APIs
//! would refuse (`server.tool`) goes as `server__tool`, and the model's
//! calls of it come back under the host's name.
#![allow(deprecated)] // sampling: deprecated only for protocol versions after the ones spoken here

use std::sync::Arc;

use a2e_llm::{
    CancellationToken, ChatProvider, ChatRequest, ChatResponse, DeltaSink, FinishReason, LlmError,
    Message, ModelToolCall, ToolChoice, Usage,
};
use a2e_mcp::ClientLink;
use a2e_mcp::rmcp::model::{
    ContentBlock, CreateMessageRequestParams, CreateMessageResult, ModelPreferences, Role,
    SamplingMessage, SamplingMessageContentBlock, Tool, ToolChoice as McpToolChoice,
    ToolResultContent,
};
use serde_json::{Map, Value};

use crate::names::{McpNames, Target};

pub use crate::llm::CLIENT_PROVIDER;

/// Most tokens a sampled answer may have when the skill does not say
/// (`maxTokens` is required in `sampling/createMessage`).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The connected client's model.
pub struct ClientModel {
    link: ClientLink,
    answered: std::sync::Mutex<Option<String>>,
}

impl ClientModel {
    /// The model of the client behind `link`.
    pub fn new(link: ClientLink) -> Self {
        Self {
            link,
            answered: std::sync::Mutex::new(None),
        }
    }

    /// The model the client last said it answered with.
    pub fn answered_model(&self) -> Option<String> {
        self.answered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The client's name from its `initialize` (`mcp-client` when it gave none).
    pub fn client_name(&self) -> String {
        self.link
            .client_name()
            .unwrap_or_else(|| CLIENT_PROVIDER.to_owned())
    }
}

/// The sampling request of a chat request: system messages become the
/// system prompt, tool calls `tool_use` blocks, tool results (consecutive
/// ones in one user message) `tool_result` blocks. `tools` says whether the
/// tools are offered.
pub fn sampling_request(request: &ChatRequest, tools: bool) -> CreateMessageRequestParams {
    let names = offered_names(request);
    let wire = |name: &str| -> String {
        names
            .name_of(&Target::Tool(name.to_owned()))
            .unwrap_or(name)
            .to_owned()
    };
    let mut system = Vec::new();
    let mut messages: Vec<SamplingMessage> = Vec::new();
    let mut results: Vec<SamplingMessageContentBlock> = Vec::new();
    let flush = |results: &mut Vec<SamplingMessageContentBlock>,
                 messages: &mut Vec<SamplingMessage>| {
        if !results.is_empty() {
            messages.push(SamplingMessage::new_multiple(
                Role::User,
                std::mem::take(results),
            ));
        }
    };
    for message in &request.messages {
        if !matches!(message, Message::Tool { .. }) {
            flush(&mut results, &mut messages);
        }
        match message {
            Message::System { content } => system.push(content.clone()),
            Message::User { content } => messages.push(SamplingMessage::user_text(content)),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if !content.is_empty() || tool_calls.is_empty() {
                    blocks.push(SamplingMessageContentBlock::text(content));
                }
                for call in tool_calls {
                    let input = serde_json::from_str::<Map<String, Value>>(&call.arguments)
                        .unwrap_or_default();
                    blocks.push(SamplingMessageContentBlock::tool_use(
                        &call.id,
                        wire(&call.name),
                        input,
                    ));
                }
                messages.push(SamplingMessage::new_multiple(Role::Assistant, blocks));
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => {
                let mut result =
                    ToolResultContent::new(tool_call_id, vec![ContentBlock::text(content.clone())]);
                result.is_error = Some(*is_error);
                results.push(SamplingMessageContentBlock::ToolResult(result));
            }
        }
    }
    flush(&mut results, &mut messages);
    let mut params = CreateMessageRequestParams::new(
        messages,
        request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).max(1),
    );
    params.system_prompt = (!system.is_empty()).then(|| system.join("\n\n"));
    #[allow(clippy::cast_possible_truncation)] // a temperature is a small number
    {
        params.temperature = request.temperature.map(|t| t as f32);
    }
    if !request.model.is_empty() {
        params.model_preferences = serde_json::from_value::<ModelPreferences>(
            serde_json::json!({"hints": [{"name": request.model}]}),
        )
        .ok();
    }
    if tools && !request.tools.is_empty() {
        params.tools = Some(
            request
                .tools
                .iter()
                .map(|t| {
                    let schema = match &t.parameters {
                        Value::Object(o) => o.clone(),
                        _ => Map::new(),
                    };
                    Tool::new(wire(&t.name), t.description.clone(), Arc::new(schema))
                })
                .collect(),
        );
        params.tool_choice = Some(match request.tool_choice {
            ToolChoice::Auto => McpToolChoice::auto(),
            ToolChoice::None => McpToolChoice::none(),
            ToolChoice::Required | ToolChoice::Tool(_) => McpToolChoice::required(),
        });
    }
    params
}

/// The names `request`'s tools are offered under to the client's model:
/// the host's MCP server's names for them ([`crate::names`]).
pub fn offered_names(request: &ChatRequest) -> McpNames {
    McpNames::build(
        request.tools.iter().map(|t| t.name.clone()),
        std::iter::empty(),
    )
}

/// `answer`'s tool calls under the host's names again (a name the model
/// made up is left as it is: the loop answers it as an unknown tool).
pub fn host_names(answer: &mut ChatResponse, names: &McpNames) {
    for call in &mut answer.tool_calls {
        if let Some(Target::Tool(name)) = names.get(&call.name) {
            call.name.clone_from(name);
        }
    }
}

/// The chat answer of a sampling result: text blocks joined, `tool_use`
/// blocks as tool calls (their input as JSON text).
pub fn chat_response(result: CreateMessageResult) -> ChatResponse {
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for block in result.message.content.into_vec() {
        match block {
            SamplingMessageContentBlock::Text(t) => content.push_str(&t.text),
            SamplingMessageContentBlock::ToolUse(u) => tool_calls.push(ModelToolCall {
                id: u.id,
                name: u.name,
                arguments: Value::Object(u.input).to_string(),
            }),
            _ => {}
        }
    }
    let finish_reason = match result.stop_reason.as_deref() {
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        Some(CreateMessageResult::STOP_REASON_END_MAX_TOKEN) => FinishReason::Length,
        Some(CreateMessageResult::STOP_REASON_TOOL_USE) => FinishReason::ToolCalls,
        None
        | Some(CreateMessageResult::STOP_REASON_END_TURN)
        | Some(CreateMessageResult::STOP_REASON_END_SEQUENCE) => FinishReason::Stop,
        Some(other) => FinishReason::Other(other.to_owned()),
    };
    ChatResponse {
        content,
        tool_calls,
        finish_reason,
        usage: Usage::default(),
        model: result.model,
    }
}

impl ChatProvider for ClientModel {
    fn name(&self) -> &str {
        CLIENT_PROVIDER
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        _deltas: &mut dyn DeltaSink,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        let params = sampling_request(request, self.link.supports_sampling_tools());
        let names = offered_names(request);
        tokio::select! {
            () = cancel.cancelled() => Err(LlmError::Cancelled),
            answer = self.link.sample(params) => {
                let mut answer = answer.map(chat_response).map_err(|e| LlmError::Transport {
                    provider: CLIENT_PROVIDER.to_owned(),
                    message: e.to_string(),
                })?;
                host_names(&mut answer, &names);
                *self
                    .answered
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(answer.model.clone());
                Ok(answer)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2e_llm::ToolSpec;
    use serde_json::json;

    #[test]
    fn a_conversation_with_tool_calls_becomes_a_sampling_request() {
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![
                Message::system("Be brief."),
                Message::user("Read a.md"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![
                        ModelToolCall {
                            id: "c1".into(),
                            name: "read_file".into(),
                            arguments: r#"{"path":"a.md"}"#.into(),
                        },
                        ModelToolCall {
                            id: "c2".into(),
                            name: "list_dir".into(),
                            arguments: "not json".into(),
                        },
                    ],
                },
                Message::Tool {
                    tool_call_id: "c1".into(),
                    name: "read_file".into(),
                    content: "hello".into(),
                    is_error: false,
                },
                Message::Tool {
                    tool_call_id: "c2".into(),
                    name: "list_dir".into(),
                    content: "bad arguments".into(),
                    is_error: true,
                },
            ],
            tools: vec![ToolSpec::new(
                "read_file",
                "Reads a file",
                json!({"type": "object"}),
            )],
            max_tokens: Some(100),
            ..ChatRequest::default()
        };
        let params = sampling_request(&request, true);
        let wire = serde_json::to_value(&params).unwrap();
        assert_eq!(wire["systemPrompt"], "Be brief.");
        assert_eq!(wire["maxTokens"], 100);
        assert_eq!(wire["modelPreferences"]["hints"][0]["name"], "m");
        let messages = wire["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{wire}");
        assert_eq!(messages[1]["content"][0]["type"], "tool_use");
        assert_eq!(messages[1]["content"][0]["input"]["path"], "a.md");
        assert_eq!(messages[1]["content"][1]["input"], json!({}));
        assert_eq!(messages[2]["role"], "user");
        assert_eq!(messages[2]["content"][1]["toolUseId"], "c2");
        assert_eq!(messages[2]["content"][1]["isError"], true);
        assert_eq!(wire["tools"][0]["name"], "read_file");
        assert_eq!(wire["toolChoice"]["mode"], "auto");
        let without = serde_json::to_value(sampling_request(&request, false)).unwrap();
        assert!(without.get("tools").is_none(), "{without}");
    }

    #[test]
    fn a_dotted_tool_is_offered_under_its_mcp_name_and_called_back_under_its_own() {
        let request = ChatRequest {
            messages: vec![
                Message::user("Read a.md"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ModelToolCall {
                        id: "c1".into(),
                        name: "files.read_file".into(),
                        arguments: "{}".into(),
                    }],
                },
            ],
            tools: vec![
                ToolSpec::new("files.read_file", "Reads", json!({"type": "object"})),
                ToolSpec::new("list_dir", "Lists", json!({"type": "object"})),
            ],
            ..ChatRequest::default()
        };
        let wire = serde_json::to_value(sampling_request(&request, true)).unwrap();
        assert_eq!(wire["tools"][0]["name"], "files__read_file", "{wire}");
        assert_eq!(wire["tools"][1]["name"], "list_dir");
        assert_eq!(
            wire["messages"][1]["content"][0]["name"],
            "files__read_file"
        );
        let result: CreateMessageResult = serde_json::from_value(json!({
            "model": "m", "role": "assistant", "stopReason": "toolUse",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "files__read_file", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "made_up", "input": {}}
            ]
        }))
        .unwrap();
        let mut answer = chat_response(result);
        host_names(&mut answer, &offered_names(&request));
        assert_eq!(answer.tool_calls[0].name, "files.read_file");
        assert_eq!(answer.tool_calls[1].name, "made_up");
    }

    #[test]
    fn a_sampling_result_becomes_a_chat_answer() {
        let result: CreateMessageResult = serde_json::from_value(json!({
            "model": "client-model", "role": "assistant", "stopReason": "toolUse",
            "content": [{"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}]
        }))
        .unwrap();
        let answer = chat_response(result);
        assert_eq!(answer.content, "Reading.");
        assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
        assert_eq!(answer.tool_calls[0].name, "read_file");
        assert_eq!(answer.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(answer.model, "client-model");
        let text: CreateMessageResult = serde_json::from_value(json!({
            "model": "x", "role": "assistant", "stopReason": "maxTokens",
            "content": {"type": "text", "text": "cut"}
        }))
        .unwrap();
        assert_eq!(chat_response(text).finish_reason, FinishReason::Length);
    }
}
