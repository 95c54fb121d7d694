//! The example plugin set: the conformance suite's test tools (a tool
//! plugin), resources and prompts (an MCP resource and prompt provider).
// Sampling: deprecated only for protocol versions after the ones the suite tests.
#![allow(deprecated)]

use std::time::Duration;

use a2e_host::mcp::{PromptProvider, ResourceProvider, client_of};
use a2e_host::plugin::{CallContext, Error, ToolOutput, ToolPlugin};
use a2e_mcp::rmcp::model::{
    ContentBlock, CreateMessageRequestParams, ErrorData, GetPromptResult, Prompt, PromptArgument,
    PromptMessage, Resource, ResourceContents, ResourceTemplate, Role, SamplingMessage,
};
use a2e_plugin::Content;
use a2e_proto::{ToolDefinition, ToolParameter};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

/// A 1×1 PNG.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A WAV file of eight silent 8-bit samples at 8 kHz, base64.
fn wav() -> String {
    use base64::Engine;
    let samples = [128u8; 8];
    let mut b = Vec::new();
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes()); // PCM
    b.extend_from_slice(&1u16.to_le_bytes()); // mono
    b.extend_from_slice(&8000u32.to_le_bytes());
    b.extend_from_slice(&8000u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&8u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    b.extend_from_slice(&samples);
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// The test tools.
pub struct ConformanceTools;

const NO_ARGS: [(&str, &str); 11] = [
    ("test_simple_text", "Returns a simple text"),
    ("test_image_content", "Returns an image"),
    ("test_audio_content", "Returns a sound"),
    ("test_embedded_resource", "Returns an embedded resource"),
    (
        "test_multiple_content_types",
        "Returns text, an image and a resource",
    ),
    (
        "test_tool_with_logging",
        "Sends three log messages while it runs",
    ),
    ("test_error_handling", "Always fails"),
    ("test_tool_with_progress", "Reports progress 0, 50 and 100"),
    (
        "test_elicitation_sep1034_defaults",
        "Asks the user, with defaults for every field",
    ),
    (
        "test_elicitation_sep1330_enums",
        "Asks the user to choose, in five kinds of enum",
    ),
    ("test_reconnection", "Answers after a short wait"),
];

fn text(s: impl Into<String>) -> ToolOutput {
    ToolOutput::rich(vec![Content::text(s)])
}

fn arg<'a>(args: &'a Map<String, Value>, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}

async fn elicit(ctx: &CallContext, message: &str, schema: Value) -> Result<ToolOutput, Error> {
    let client = client_of(ctx).ok_or_else(|| Error::failed("no MCP client to ask"))?;
    let answer = client
        .elicit(message, schema)
        .await
        .map_err(|e| Error::failed(e.to_string()))?;
    let content = answer.content.unwrap_or(Value::Null);
    Ok(text(format!(
        "Elicitation completed: action={}, content={content}",
        serde_json::to_value(answer.action).unwrap_or(Value::Null)
    )))
}

impl ToolPlugin for ConformanceTools {
    fn name(&self) -> &str {
        "conformance"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        let mut tools: Vec<ToolDefinition> = NO_ARGS
            .iter()
            .map(|(name, description)| ToolDefinition::new(name, description))
            .collect();
        tools.push(
            ToolDefinition::new("test_sampling", "Asks the client's model")
                .param(ToolParameter::new("prompt", "string", "The prompt").required()),
        );
        tools.push(
            ToolDefinition::new("test_elicitation", "Asks the client's user")
                .param(ToolParameter::new("message", "string", "What to ask").required()),
        );
        tools.push(
            ToolDefinition::new(
                "test_header_param",
                "Echoes its region, which an HTTP client also sends as the Mcp-Param-Region header",
            )
            .param(ToolParameter::new("region", "string", "The region").required()),
        );
        tools.push(
            ToolDefinition::new(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
            )
            .param(ToolParameter::new("name", "string", "")),
        );
        tools
    }

    fn input_schema(&self, tool: &ToolDefinition) -> Value {
        if tool.name == "json_schema_2020_12_tool" {
            return json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
                    "street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            });
        }
        if tool.name == "test_header_param" {
            return json!({
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                "required": ["region"]
            });
        }
        tool.input_schema()
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> Result<ToolOutput, Error> {
        let pause = || tokio::time::sleep(Duration::from_millis(50));
        match tool {
            "test_simple_text" => Ok(text("This is a simple text response for testing.")),
            "test_image_content" => Ok(ToolOutput::rich(vec![Content::image(PNG, "image/png")])),
            "test_audio_content" => Ok(ToolOutput::rich(vec![Content::audio(wav(), "audio/wav")])),
            "test_embedded_resource" => Ok(ToolOutput::rich(vec![Content::resource_text(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            )])),
            "test_multiple_content_types" => Ok(ToolOutput::rich(vec![
                Content::text("Multiple content types test:"),
                Content::image(PNG, "image/png"),
                Content::resource_text(
                    "test://mixed-content-resource",
                    "application/json",
                    r#"{"test":"data","value":123}"#,
                ),
            ])),
            "test_tool_with_logging" => {
                ctx.log("info", "Tool execution started").await;
                pause().await;
                ctx.log("info", "Tool processing data").await;
                pause().await;
                ctx.log("info", "Tool execution completed").await;
                Ok(text("Logging completed"))
            }
            "test_error_handling" => Err(Error::failed(
                "This tool intentionally returns an error for testing",
            )),
            "test_tool_with_progress" => {
                for pct in [0, 50, 100] {
                    ctx.progress(pct, format!("{pct}/100")).await;
                    if pct < 100 {
                        pause().await;
                    }
                }
                Ok(text("Progress completed"))
            }
            "test_reconnection" => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(text("Reconnection test completed"))
            }
            "test_sampling" => {
                let client =
                    client_of(&ctx).ok_or_else(|| Error::failed("no MCP client to ask"))?;
                #[allow(deprecated)]
                let params = CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text(arg(&args, "prompt"))],
                    100,
                );
                let answer = client
                    .sample(params)
                    .await
                    .map_err(|e| Error::failed(e.to_string()))?;
                let said = serde_json::to_value(&answer.message.content).unwrap_or(Value::Null);
                let said = said
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                Ok(text(format!("LLM response: {said}")))
            }
            "test_elicitation" => {
                let schema = json!({"type": "object", "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}},
                    "required": ["username", "email"]});
                elicit(&ctx, arg(&args, "message"), schema).await
            }
            "test_elicitation_sep1034_defaults" => {
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}}});
                elicit(&ctx, "Please review these defaults", schema).await
            }
            "test_elicitation_sep1330_enums" => {
                let schema = json!({"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}}});
                elicit(&ctx, "Please choose", schema).await
            }
            "json_schema_2020_12_tool" => Ok(text(format!("received {}", Value::Object(args)))),
            "test_header_param" => Ok(text(format!("region: {}", arg(&args, "region")))),
            other => Err(Error::unknown_tool(other.to_owned())),
        }
    }
}

/// The test resources (`test://…`).
pub struct ConformanceResources;

const TEMPLATE_PREFIX: &str = "test://template/";

impl ResourceProvider for ConformanceResources {
    fn list(&self) -> BoxFuture<'_, Vec<Resource>> {
        Box::pin(async {
            vec![
                Resource::new("test://static-text", "static-text")
                    .with_description("A static text resource")
                    .with_mime_type("text/plain"),
                Resource::new("test://static-binary", "static-binary")
                    .with_description("A static binary resource")
                    .with_mime_type("image/png"),
                Resource::new("test://watched-resource", "watched-resource")
                    .with_description("A resource to subscribe to")
                    .with_mime_type("text/plain"),
            ]
        })
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        vec![
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .with_description("Data for an id")
                .with_mime_type("application/json"),
        ]
    }

    fn owns(&self, uri: &str) -> bool {
        uri.starts_with("test://")
    }

    fn read<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<Vec<ResourceContents>, ErrorData>> {
        Box::pin(async move {
            let contents = match uri {
                "test://static-text" => ResourceContents::text(
                    "This is the content of the static text resource.",
                    uri,
                )
                .with_mime_type("text/plain"),
                "test://static-binary" => ResourceContents::blob(PNG, uri).with_mime_type("image/png"),
                "test://watched-resource" => {
                    ResourceContents::text("Watched resource content", uri).with_mime_type("text/plain")
                }
                _ => match uri
                    .strip_prefix(TEMPLATE_PREFIX)
                    .and_then(|rest| rest.strip_suffix("/data"))
                    .filter(|id| !id.is_empty() && !id.contains('/'))
                {
                    Some(id) => ResourceContents::text(
                        json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                            .to_string(),
                        uri,
                    )
                    .with_mime_type("application/json"),
                    None => return Err(a2e_mcp::server::resource_not_found(uri)),
                },
            };
            Ok(vec![contents])
        })
    }
}

/// The test prompts.
pub struct ConformancePrompts;

fn required(name: &str, description: &str) -> PromptArgument {
    let mut a = PromptArgument::new(name);
    a.description = Some(description.to_owned());
    a.required = Some(true);
    a
}

impl PromptProvider for ConformancePrompts {
    fn list(&self) -> Vec<Prompt> {
        vec![
            Prompt::new(
                "test_simple_prompt",
                Some("A simple prompt without arguments"),
                None,
            ),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with two arguments"),
                Some(vec![
                    required("arg1", "First test argument"),
                    required("arg2", "Second test argument"),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt embedding a resource"),
                Some(vec![required(
                    "resourceUri",
                    "URI of the resource to embed",
                )]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt with an image"),
                None,
            ),
        ]
    }

    fn get<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Map<String, Value>,
        _client: &'a a2e_mcp::ClientLink,
    ) -> BoxFuture<'a, Option<Result<GetPromptResult, ErrorData>>> {
        Box::pin(async move {
            let prompt = self.list().into_iter().find(|p| p.name == name)?;
            if let Err(e) = a2e_host::mcp::prompts::check_arguments(&prompt, arguments) {
                return Some(Err(e));
            }
            let user = |content| PromptMessage::new(Role::User, content);
            let messages = match name {
                "test_simple_prompt" => vec![PromptMessage::new_text(
                    Role::User,
                    "This is a simple prompt for testing.",
                )],
                "test_prompt_with_arguments" => vec![PromptMessage::new_text(
                    Role::User,
                    format!(
                        "Prompt with arguments: arg1='{}', arg2='{}'",
                        arg(arguments, "arg1"),
                        arg(arguments, "arg2")
                    ),
                )],
                "test_prompt_with_embedded_resource" => vec![
                    user(ContentBlock::resource(
                        ResourceContents::text(
                            "Embedded resource content for testing.",
                            arg(arguments, "resourceUri"),
                        )
                        .with_mime_type("text/plain"),
                    )),
                    PromptMessage::new_text(
                        Role::User,
                        "Please process the embedded resource above.",
                    ),
                ],
                _ => vec![
                    user(ContentBlock::image(PNG, "image/png")),
                    PromptMessage::new_text(Role::User, "Please analyze the image above."),
                ],
            };
            Some(Ok(GetPromptResult::new(messages)))
        })
    }

    fn complete(&self, name: &str, argument: &str, prefix: &str) -> Vec<String> {
        if name != "test_prompt_with_arguments" || argument != "arg1" {
            return Vec::new();
        }
        ["paris", "park", "party"]
            .iter()
            .filter(|v| v.starts_with(prefix))
            .map(|v| (*v).to_owned())
            .collect()
    }
}
