//! Custom tools, served by the host: a typed one (its schema and parsing come from
//! a Rust type) and an untyped one (a hand-written parameter list).
//!
//! `cargo run -p a2e-host --example custom_plugin` calls both in-process (CI runs
//! it); `cargo run -p a2e-host --example custom_plugin -- --serve` serves them (and
//! the built-ins) over stdio, ready for an agent.

use a2e_host::plugin::{CallContext, Error, ToolOutput, ToolPlugin, Toolbox, TypedTool};
use a2e_host::{CallOptions, Host, HostConfig};
use a2e_proto::{ToolCallRequest, ToolDefinition, ToolParameter};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

// --- The typed way: 25 lines for a tool with a checked, documented schema. ---

/// Arguments of `repeat`.
#[derive(Deserialize, JsonSchema)]
struct RepeatArgs {
    /// The text to repeat.
    text: String,
    /// How often (1 to 10, default 2).
    #[schemars(range(min = 1, max = 10))]
    times: Option<u8>,
}

/// Repeats a text.
struct Repeat;

impl TypedTool for Repeat {
    type Args = RepeatArgs;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("repeat", "Repeat a text a few times").tags(&["text"])
    }

    async fn call(&self, args: RepeatArgs, ctx: CallContext) -> Result<ToolOutput, Error> {
        ctx.progress(50, "repeating").await;
        let times = usize::from(args.times.unwrap_or(2));
        Ok(json!({ "text": args.text.repeat(times) }).into())
    }
}

// --- The untyped way: a parameter list by hand and a JSON map. ---

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
    ) -> Result<ToolOutput, Error> {
        let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
        ctx.progress(50, "counting").await;
        match tool {
            "word_count" => Ok(json!({
                "words": text.split_whitespace().count(),
                "lines": text.lines().count(),
                "chars": text.chars().count(),
            })
            .into()),
            other => Err(Error::unknown_tool(other)),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = Host::builder(HostConfig::default())
        .with_builtins()
        .with_tool_plugin(TextStats)
        .with_tool_plugin(Toolbox::new("examples").with(Repeat))
        .build()?;

    if std::env::args().any(|a| a == "--serve") {
        a2e_host::transport::stdio::serve_stdio(host).await;
        return Ok(());
    }

    let cancel = CancellationToken::new();
    let req = ToolCallRequest::new("word_count", json!({"text": "to be or not to be\nthat is"}));
    let result = host
        .call_tool(req.clone(), CallOptions::new().cancel(&cancel))
        .await?;
    println!("{}", serde_json::to_string_pretty(&result)?);
    assert_eq!(result.data["words"], 8);

    let req = ToolCallRequest::new("repeat", json!({"text": "ab", "times": 3}));
    let result = host
        .call_tool(req.clone(), CallOptions::new().cancel(&cancel))
        .await?;
    println!("{}", serde_json::to_string_pretty(&result)?);
    assert_eq!(result.data["text"], "ababab");

    // The schema came from the type: a wrong shape is refused naming its path.
    let req = ToolCallRequest::new("repeat", json!({"text": "ab", "times": 11}));
    let refused = host
        .call_tool(req.clone(), CallOptions::new().cancel(&cancel))
        .await
        .unwrap_err();
    println!("refused: {refused}");
    assert!(refused.to_string().contains("/times"), "{refused}");
    Ok(())
}
