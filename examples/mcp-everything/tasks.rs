//! The suite's fixtures for the tasks extension (`io.modelcontextprotocol/tasks`):
//! tools the host runs as tasks, durable runs of its journal, when their
//! definition carries the tag `task` (or `task:required`; `task:gather` for
//! one that asks its input in rounds before it becomes a task).

use std::time::Duration;

use a2e_host::mcp::client_of;
use a2e_host::plugin::{CallContext, Error, ToolOutput, ToolPlugin};
use a2e_plugin::Content;
use a2e_proto::{ToolDefinition, ToolParameter};
use serde_json::{Map, Value, json};

/// The tasks fixtures.
pub struct TaskTools;

fn text(s: impl Into<String>) -> ToolOutput {
    ToolOutput::rich(vec![Content::text(s)])
}

fn tagged(def: ToolDefinition, tag: &str) -> ToolDefinition {
    let mut def = def;
    def.tags = tag.split(' ').map(str::to_owned).collect();
    def
}

impl ToolPlugin for TaskTools {
    fn name(&self) -> &str {
        "tasks"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![
            ToolDefinition::new("greet", "Greets by name, at once").param(ToolParameter::new(
                "name",
                "string",
                "Who to greet",
            )),
            tagged(
                ToolDefinition::new("slow_compute", "Sleeps for `seconds`, then answers")
                    .param(ToolParameter::new("seconds", "number", "How long"))
                    .param(ToolParameter::new("label", "string", "A label to echo")),
                "task",
            ),
            tagged(
                ToolDefinition::new("failing_job", "Fails with a tool error after a second"),
                "task:required",
            ),
            tagged(
                ToolDefinition::new("protocol_error_job", "Panics: a protocol-level failure"),
                "task",
            ),
            tagged(
                ToolDefinition::new(
                    "confirm_delete",
                    "Asks the user to confirm, then deletes nothing",
                )
                .param(ToolParameter::new("filename", "string", "The file"))
                .param(ToolParameter::new(
                    "delay_ms",
                    "integer",
                    "How long to wait before asking",
                )),
                "task",
            ),
            tagged(
                ToolDefinition::new("multi_input", "Asks the user two questions at once"),
                "task",
            ),
            tagged(
                ToolDefinition::new(
                    "greet_task",
                    "Greets `name` as a task, asking for it when it is not given",
                )
                .param(ToolParameter::new("name", "string", "Who to greet")),
                "task:required task:gather",
            ),
            tagged(
                ToolDefinition::new(
                    "test_tool_with_task",
                    "Asks the user's name in rounds, then greets them as a task",
                ),
                "task:required task:gather",
            ),
        ]
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> Result<ToolOutput, Error> {
        match tool {
            "greet" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("world");
                Ok(text(format!("Hello, {name}!")))
            }
            "slow_compute" => {
                let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
                tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 600.0))).await;
                let label = args
                    .get("label")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                Ok(text(format!("computed {label} after {seconds} s")))
            }
            "failing_job" => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Err(Error::failed("the job failed, as it always does"))
            }
            "protocol_error_job" => panic!("the job broke down"),
            "confirm_delete" => {
                let delay = args.get("delay_ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(delay.min(10_000))).await;
                let client =
                    client_of(&ctx).ok_or_else(|| Error::failed("no MCP client to ask"))?;
                let file = args
                    .get("filename")
                    .and_then(Value::as_str)
                    .unwrap_or("the file");
                let schema = json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]});
                let answer = client
                    .elicit(&format!("Delete {file}?"), schema)
                    .await
                    .map_err(|e| Error::failed(e.to_string()))?;
                let confirmed =
                    answer.content.as_ref().and_then(|c| c.get("confirm")) == Some(&json!(true));
                Ok(text(if confirmed {
                    format!("deleted {file} (not really)")
                } else {
                    format!("kept {file}")
                }))
            }
            "multi_input" => {
                let client =
                    client_of(&ctx).ok_or_else(|| Error::failed("no MCP client to ask"))?;
                let form = |field: &str| json!({"type": "object", "properties": {field: {"type": "string"}}});
                let (first, second) = tokio::join!(
                    client.elicit_as(Some("name"), "Your name?", form("name")),
                    client.elicit_as(Some("confirm"), "Confirm?", form("confirm")),
                );
                let ok = first.is_ok() && second.is_ok();
                Ok(text(format!("both answered: {ok}")))
            }
            "greet_task" => {
                let name = match args.get("name").and_then(Value::as_str) {
                    Some(name) => name.to_owned(),
                    None => ask_name(&ctx, "Who is to be greeted?", "name").await?,
                };
                Ok(text(format!("Hello, {name}! (a task)")))
            }
            "test_tool_with_task" => {
                let name = ask_name(&ctx, "What is your name?", "user_name").await?;
                Ok(text(format!("Hello, {name}! (greeted as a task)")))
            }
            other => Err(Error::unknown_tool(other.to_owned())),
        }
    }
}

/// Asks the call's MCP client for a name (form field `field`; an answer
/// under `name` is taken too).
async fn ask_name(ctx: &CallContext, message: &str, field: &str) -> Result<String, Error> {
    let client = client_of(ctx).ok_or_else(|| Error::failed("no MCP client to ask"))?;
    let schema = json!({"type": "object", "properties": {field: {"type": "string"}}});
    let answer = client
        .elicit(message, schema)
        .await
        .map_err(|e| Error::failed(e.to_string()))?;
    let content = answer.content.as_ref();
    let given = content.and_then(|c| c.get(field).or_else(|| c.get("name")));
    Ok(given
        .and_then(Value::as_str)
        .unwrap_or("stranger")
        .to_owned())
}
