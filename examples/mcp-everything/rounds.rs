//! The suite's tools and prompt for multi-round requests (MCP 2026-07-28):
//! each asks the client through the call's [`ClientLink`], which a
//! 2026-07-28 client answers in rounds (`input_required`, then a retry with
//! `inputResponses`) and an earlier client in its session.
#![allow(deprecated)] // sampling and roots: asked of clients of every version served

use a2e_host::mcp::{PromptProvider, client_of};
use a2e_host::plugin::{CallContext, Error, ToolOutput, ToolPlugin};
use a2e_mcp::ClientLink;
use a2e_mcp::rmcp::model::{
    CreateMessageRequestParams, ErrorData, GetPromptResult, Prompt, PromptMessage, Role,
    SamplingMessage,
};
use a2e_plugin::Content;
use a2e_proto::ToolDefinition;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

/// The multi-round test tools.
pub struct RoundTools;

const TOOLS: [(&str, &str); 9] = [
    (
        "test_input_required_result_elicitation",
        "Asks the user's name",
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model a question",
    ),
    (
        "test_input_required_result_list_roots",
        "Asks the client's roots",
    ),
    (
        "test_input_required_result_request_state",
        "Asks for a confirmation",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks the user, the model and the roots at once",
    ),
    (
        "test_input_required_result_multi_round",
        "Asks the user twice, one question after the other",
    ),
    (
        "test_input_required_result_tampered_state",
        "Asks for a confirmation",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only what the client declared it can answer",
    ),
    (
        "test_missing_capability",
        "Needs the client's model (sampling)",
    ),
];

fn text(s: impl Into<String>) -> ToolOutput {
    ToolOutput::rich(vec![Content::text(s)])
}

fn failed(e: impl std::fmt::Display) -> Error {
    Error::failed(e.to_string())
}

/// A form of one string or boolean field.
fn form(field: &str, kind: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": kind}}, "required": [field]})
}

/// The user's answer to a one-field form, as text (`declined` when they did).
async fn ask_user(
    client: &ClientLink,
    key: &str,
    message: &str,
    field: &str,
    kind: &str,
) -> Result<String, Error> {
    let answer = client
        .elicit_as(Some(key), message, form(field, kind))
        .await
        .map_err(failed)?;
    Ok(match answer.content {
        Some(content) => match content.get(field) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => content.to_string(),
        },
        None => "declined".to_owned(),
    })
}

/// What the client's model says to `prompt`.
async fn ask_model(
    client: &ClientLink,
    key: &str,
    prompt: &str,
    max_tokens: u32,
) -> Result<String, Error> {
    let params =
        CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens);
    let answer = client.sample_as(Some(key), params).await.map_err(failed)?;
    let said = serde_json::to_value(&answer.message.content).unwrap_or(Value::Null);
    Ok(said
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned())
}

/// The client's roots' URIs.
async fn ask_roots(client: &ClientLink, key: &str) -> Result<String, Error> {
    let roots = client.list_roots_as(Some(key)).await.map_err(failed)?;
    Ok(roots
        .roots
        .iter()
        .map(|r| r.uri.as_str())
        .collect::<Vec<_>>()
        .join(", "))
}

impl ToolPlugin for RoundTools {
    fn name(&self) -> &str {
        "rounds"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        TOOLS
            .iter()
            .map(|(name, description)| ToolDefinition::new(name, description))
            .collect()
    }

    async fn call(
        &self,
        tool: &str,
        _args: Map<String, Value>,
        ctx: CallContext,
    ) -> Result<ToolOutput, Error> {
        let client = client_of(&ctx).ok_or_else(|| Error::failed("no MCP client to ask"))?;
        let c = &client;
        match tool {
            "test_input_required_result_elicitation" => {
                let name = ask_user(c, "user_name", "What is your name?", "name", "string").await?;
                Ok(text(format!("Hello, {name}!")))
            }
            "test_input_required_result_sampling" => {
                let said =
                    ask_model(c, "capital_question", "What is the capital of France?", 100).await?;
                Ok(text(format!("The model said: {said}")))
            }
            "test_input_required_result_list_roots" => Ok(text(format!(
                "Roots: {}",
                ask_roots(c, "client_roots").await?
            ))),
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                let ok = ask_user(c, "confirm", "Please confirm", "ok", "boolean").await?;
                Ok(text(format!("state-ok: confirmed={ok}")))
            }
            "test_input_required_result_multiple_inputs" => {
                let (name, greeting, roots) = futures::try_join!(
                    ask_user(c, "user_name", "What is your name?", "name", "string"),
                    ask_model(c, "greeting", "Generate a greeting", 50),
                    ask_roots(c, "client_roots"),
                )?;
                Ok(text(format!("{greeting} {name} (roots: {roots})")))
            }
            "test_input_required_result_multi_round" => {
                let name =
                    ask_user(c, "step1", "Step 1: What is your name?", "name", "string").await?;
                let color = ask_user(
                    c,
                    "step2",
                    "Step 2: What is your favorite color?",
                    "color",
                    "string",
                )
                .await?;
                Ok(text(format!("{name} likes {color}")))
            }
            "test_input_required_result_capabilities" => {
                let user = async {
                    match c.supports_elicitation() {
                        true => ask_user(c, "user_name", "What is your name?", "name", "string")
                            .await
                            .map(Some),
                        false => Ok(None),
                    }
                };
                let model = async {
                    match c.supports_sampling() {
                        true => ask_model(c, "greeting", "Generate a greeting", 50)
                            .await
                            .map(Some),
                        false => Ok(None),
                    }
                };
                let (name, greeting) = futures::try_join!(user, model)?;
                Ok(text(format!("name: {name:?}, greeting: {greeting:?}")))
            }
            "test_missing_capability" => {
                let said = ask_model(c, "question", "Say something", 20).await?;
                Ok(text(format!("The model said: {said}")))
            }
            other => Err(Error::unknown_tool(other.to_owned())),
        }
    }
}

/// The multi-round test prompt.
pub struct RoundPrompts;

const PROMPT: &str = "test_input_required_result_prompt";

impl PromptProvider for RoundPrompts {
    fn list(&self) -> Vec<Prompt> {
        vec![Prompt::new(
            PROMPT,
            Some("A prompt that asks the user for its context"),
            None,
        )]
    }

    fn get<'a>(
        &'a self,
        name: &'a str,
        _arguments: &'a Map<String, Value>,
        client: &'a ClientLink,
    ) -> BoxFuture<'a, Option<Result<GetPromptResult, ErrorData>>> {
        Box::pin(async move {
            if name != PROMPT {
                return None;
            }
            let asked = ask_user(
                client,
                "user_context",
                "What context should the prompt use?",
                "context",
                "string",
            );
            Some(match asked.await {
                Ok(context) => Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                    Role::User,
                    format!("Answer in this context: {context}"),
                )])),
                Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
            })
        })
    }
}
