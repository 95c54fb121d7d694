//! A custom tool plugin in a few lines, served by the host.
//!
//! `cargo run -p a2e-host --example custom_plugin` calls the tool in-process;
//! `cargo run -p a2e-host --example custom_plugin -- --serve` serves it (and
//! the built-ins) over stdio, ready for an agent.

use a2e_host::plugin::{CallContext, ToolOutput, ToolPlugin};
use a2e_host::{Host, HostConfig, HostError, HostResult};
use a2e_proto::{ToolCallRequest, ToolDefinition, ToolParameter};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Counts words, lines and characters of a text.
struct TextStats;

impl ToolPlugin for TextStats {
    fn name(&self) -> &str {
        "text_stats"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![
            ToolDefinition::new(
                "word_count",
                "Count the words, lines and characters of a text",
            )
            .param(ToolParameter::new("text", "string", "The text to measure").required())
            .tags(&["text"]),
        ]
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> HostResult<ToolOutput> {
        let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
        ctx.progress(50, "counting").await;
        match tool {
            "word_count" => Ok(json!({
                "words": text.split_whitespace().count(),
                "lines": text.lines().count(),
                "chars": text.chars().count(),
            })
            .into()),
            other => Err(HostError::UnknownTool(other.into())),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = Host::builder(HostConfig::default())
        .with_builtins()
        .with_tool_plugin(TextStats)
        .build()?;

    if std::env::args().any(|a| a == "--serve") {
        a2e_host::transport::stdio::serve_stdio(host).await;
        return Ok(());
    }

    let req = ToolCallRequest::new("word_count", json!({"text": "to be or not to be\nthat is"}));
    let result = host
        .call_tool("", &req, None, &CancellationToken::new())
        .await?;
    println!("{}", serde_json::to_string_pretty(&result)?);
    assert_eq!(result.data["words"], 8);
    Ok(())
}
