//! A small tool backend for the demo server, the tests and the bench.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use a2e_mcp::{BackendTool, ProgressSink, ToolBackend};
use a2e_proto::{ErrorCode, EventKind, ToolDefinition, ToolParameter, ToolResult};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Tools: `greet`, `nested`, `slow` (progress), `wait_for_cancel`,
/// `cancelled_count`, `fail`.
#[derive(Debug, Default)]
pub struct DemoBackend {
    /// Calls of `wait_for_cancel` that saw their cancellation.
    pub cancelled: Arc<AtomicU64>,
}

fn definitions() -> Vec<BackendTool> {
    let mut style = ToolParameter::new("style", "string", "How to greet");
    style.r#enum = Some(vec!["plain".into(), "shout".into()]);
    let greet = ToolDefinition::new("greet", "Greets someone")
        .param(ToolParameter::new("name", "string", "Who").required())
        .param(style)
        .idempotent();

    let mut address = ToolParameter::new("address", "object", "Where to");
    address.properties = Some(BTreeMap::from([
        (
            "city".to_owned(),
            ToolParameter::new("city", "string", "City").required(),
        ),
        (
            "zip".to_owned(),
            ToolParameter::new("zip", "string", "Postcode"),
        ),
    ]));
    let mut order = ToolParameter::new("order", "object", "An order").required();
    order.properties = Some(BTreeMap::from([
        (
            "id".to_owned(),
            ToolParameter::new("id", "integer", "Order number").required(),
        ),
        ("address".to_owned(), address.required()),
    ]));
    let nested = ToolDefinition::new("nested", "Echoes a nested order").param(order);

    let slow = ToolDefinition::new("slow", "Counts steps, reporting progress")
        .param(ToolParameter::new("steps", "integer", "How many steps").required());
    let wait = ToolDefinition::new(
        "wait_for_cancel",
        "Reports progress 0, then runs until cancelled",
    );
    let count = ToolDefinition::new("cancelled_count", "How many calls saw their cancellation");
    let fail = ToolDefinition::new("fail", "Always fails");
    vec![
        greet.into(),
        nested.into(),
        slow.into(),
        wait.into(),
        count.into(),
        fail.into(),
    ]
}

impl ToolBackend for DemoBackend {
    async fn list_tools(&self) -> Vec<BackendTool> {
        definitions()
    }

    async fn call_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        progress: ProgressSink,
        cancel: CancellationToken,
        _meta: Map<String, Value>,
    ) -> ToolResult {
        match name.as_str() {
            "greet" => {
                let who = arguments.get("name").and_then(Value::as_str).unwrap_or("");
                let text = format!("Hello, {who}!");
                let text = match arguments.get("style").and_then(Value::as_str) {
                    Some("shout") => text.to_uppercase(),
                    _ => text,
                };
                ToolResult::ok(&name, json!(text))
            }
            "nested" => ToolResult::ok(&name, json!({"received": arguments})),
            "slow" => {
                let steps = arguments
                    .get("steps")
                    .and_then(Value::as_i64)
                    .unwrap_or(1)
                    .clamp(1, 100);
                for step in 1..=steps {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    let mut data = Map::new();
                    data.insert("pct".into(), json!(step * 100 / steps));
                    data.insert("message".into(), json!(format!("step {step}")));
                    progress.emit(&EventKind::PROGRESS, &data);
                }
                ToolResult::ok(&name, json!({"steps": steps}))
            }
            "wait_for_cancel" => {
                progress.progress(0, "waiting");
                cancel.cancelled().await;
                self.cancelled.fetch_add(1, Ordering::SeqCst);
                ToolResult::failed(&name, ErrorCode::TOOL_ERROR, "cancelled")
            }
            "cancelled_count" => ToolResult::ok(
                &name,
                json!({"count": self.cancelled.load(Ordering::SeqCst)}),
            ),
            "fail" => ToolResult::failed(&name, ErrorCode::TOOL_ERROR, "deliberate failure"),
            other => {
                ToolResult::failed(other, ErrorCode::UNKNOWN_TOOL, format!("no tool `{other}`"))
            }
        }
    }
}
