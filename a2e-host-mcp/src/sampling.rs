//! A mounted server's `sampling/createMessage`, answered by one of the host's
//! model providers (only for servers whose config has `sampling`; the
//! provider, model and token limit come from there).
#![allow(deprecated)] // sampling: deprecated only for protocol versions after the ones spoken here

use std::sync::Arc;

use a2e_llm::{ChatProvider, ChatRequest, Message, NoDeltas, Providers};
use a2e_mcp::SamplingConfig;
use a2e_mcp::rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ErrorData, Role, SamplingMessage,
};
use a2e_mcp::toolkit::Sampler;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// The host's providers as the sampler of mounted servers.
pub struct HostSampler {
    providers: Arc<Providers>,
}

impl HostSampler {
    /// A sampler over `providers`.
    pub fn new(providers: Arc<Providers>) -> Self {
        Self { providers }
    }
}

/// The chat messages of a sampling request: its system prompt, then its
/// messages (text only; any other content is an `invalid params` error).
pub fn chat_messages(request: &CreateMessageRequestParams) -> Result<Vec<Message>, ErrorData> {
    let mut out = Vec::new();
    if let Some(system) = request.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        out.push(Message::System {
            content: system.to_owned(),
        });
    }
    for (i, message) in request.messages.iter().enumerate() {
        let mut text = String::new();
        for block in message.content.clone().into_vec() {
            let Some(t) = block.as_text() else {
                return Err(ErrorData::invalid_params(
                    format!("params.messages[{i}]: only text content can be sampled here"),
                    None,
                ));
            };
            text.push_str(&t.text);
        }
        out.push(match message.role {
            Role::Assistant => Message::Assistant {
                content: text,
                tool_calls: Vec::new(),
            },
            _ => Message::User { content: text },
        });
    }
    Ok(out)
}

impl Sampler for HostSampler {
    fn sample<'a>(
        &'a self,
        server: &'a str,
        config: &'a SamplingConfig,
        request: CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async move {
            let Some(client) = self.providers.get(&config.provider) else {
                return Err(ErrorData::internal_error(
                    format!(
                        "the sampling provider `{}` of MCP server `{server}` is not configured",
                        config.provider
                    ),
                    None,
                ));
            };
            let model = config
                .model
                .clone()
                .or_else(|| {
                    self.providers
                        .config(&config.provider)
                        .map(|c| c.model.clone())
                })
                .unwrap_or_default();
            let chat = ChatRequest {
                model,
                messages: chat_messages(&request)?,
                temperature: request.temperature.map(f64::from),
                max_tokens: Some(request.max_tokens.min(config.max_tokens)),
                ..ChatRequest::default()
            };
            let answer = client
                .chat(&chat, &mut NoDeltas, &CancellationToken::new())
                .await
                .map_err(|e| ErrorData::internal_error(format!("sampling failed: {e}"), None))?;
            let mut result = CreateMessageResult::new(
                SamplingMessage::assistant_text(answer.content),
                answer.model,
            );
            result.stop_reason = Some(CreateMessageResult::STOP_REASON_END_TURN.to_owned());
            Ok(result)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_becomes_chat_messages() {
        let mut request = CreateMessageRequestParams::new(
            vec![
                SamplingMessage::user_text("What is 2+2?"),
                SamplingMessage::assistant_text("4"),
            ],
            50,
        );
        request.system_prompt = Some("Be brief.".into());
        let messages = chat_messages(&request).unwrap();
        assert_eq!(messages.len(), 3);
        assert!(matches!(&messages[0], Message::System { content } if content == "Be brief."));
        assert!(matches!(&messages[2], Message::Assistant { content, .. } if content == "4"));
    }
}
