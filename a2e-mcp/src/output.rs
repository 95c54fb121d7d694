//! MCP tool results ⇄ A2E tool results.

use a2e_proto::{ErrorCode, ToolResult};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

/// What a mounted tool returned, in A2E terms.
///
/// `data` is an object: `output` holds the text parts of the MCP content
/// joined with newlines; `structured` the tool's `structuredContent` when it
/// sent one; `content` the non-text parts (images, audio, resources) as MCP
/// JSON when there were any.
#[derive(Debug, Clone, PartialEq)]
pub struct McpOutput {
    /// `{output, structured?, content?}`.
    pub data: Value,
    /// The joined text, shortened to one line for a person (`null` when none).
    pub summary: Value,
    /// The server flagged the result as an error (`isError`).
    pub is_error: bool,
}

const SUMMARY_CHARS: usize = 200;

impl McpOutput {
    /// Converts an MCP `CallToolResult`.
    pub fn from_mcp(result: &CallToolResult) -> Self {
        let mut texts = Vec::new();
        let mut others = Vec::new();
        for block in &result.content {
            match block {
                ContentBlock::Text(t) => texts.push(t.text.as_str()),
                other => {
                    if let Ok(v) = serde_json::to_value(other) {
                        others.push(v);
                    }
                }
            }
        }
        let output = texts.join("\n");
        let mut data = Map::new();
        data.insert("output".into(), Value::from(output.clone()));
        if let Some(structured) = &result.structured_content {
            data.insert("structured".into(), structured.clone());
        }
        if !others.is_empty() {
            data.insert("content".into(), Value::Array(others));
        }
        let summary = match output.lines().find(|l| !l.trim().is_empty()) {
            Some(line) => {
                let short: String = line.chars().take(SUMMARY_CHARS).collect();
                Value::from(short)
            }
            None => Value::Null,
        };
        Self {
            data: Value::Object(data),
            summary,
            is_error: result.is_error.unwrap_or(false),
        }
    }

    /// The joined text output.
    pub fn text(&self) -> &str {
        self.data
            .get("output")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The A2E result: `success: false` with `tool_error` when `isError`.
    pub fn into_tool_result(self, tool_name: &str) -> ToolResult {
        if self.is_error {
            let message = match self.text() {
                "" => "the tool reported an error".to_owned(),
                text => text.to_owned(),
            };
            let mut failed = ToolResult::failed(tool_name, ErrorCode::TOOL_ERROR, message);
            failed.data = self.data;
            failed
        } else {
            let mut ok = ToolResult::ok(tool_name, self.data);
            ok.summary = self.summary;
            ok
        }
    }
}

/// An A2E result as an MCP `CallToolResult` (the server side).
///
/// Success: a rich result (`data` = `{"output": TEXT, "content"?: [MCP
/// content blocks], "structured"?: …}`, the form [`McpOutput`] gives a
/// mounted tool's result) becomes its text block (when not empty) and its
/// blocks, in order, with `structured` as `structuredContent`. Any other
/// result is one text block with the data (a string as it is, anything else
/// as compact JSON) and, when the data is an object, the same object as
/// `structuredContent`. Failure: `isError` with the error code and message.
pub fn to_mcp_result(result: &ToolResult) -> CallToolResult {
    if result.success {
        if let Some(rich) = rich_result(&result.data) {
            return rich;
        }
        let text = match &result.data {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        let mut out = CallToolResult::success(vec![ContentBlock::text(text)]);
        if result.data.is_object() {
            out.structured_content = Some(result.data.clone());
        }
        out
    } else {
        let code = result
            .error_code
            .as_ref()
            .map(|c| c.as_str().to_owned())
            .unwrap_or_else(|| "tool_error".into());
        let message = result.error.as_deref().unwrap_or("the tool failed");
        CallToolResult::error(vec![ContentBlock::text(format!("{code}: {message}"))])
    }
}

/// `{"output", "content"?: [blocks], "structured"?}` with every block a valid
/// MCP content block, as an MCP result.
fn rich_result(data: &Value) -> Option<CallToolResult> {
    let obj = data.as_object()?;
    let empty = Vec::new();
    let parts = match obj.get("content") {
        Some(c) => c.as_array()?,
        None if obj.get("output").is_some_and(Value::is_string) => &empty,
        None => return None,
    };
    if obj
        .keys()
        .any(|k| !matches!(k.as_str(), "output" | "content" | "structured"))
    {
        return None;
    }
    let mut blocks = Vec::with_capacity(parts.len() + 1);
    match obj.get("output") {
        Some(Value::String(text)) if !text.is_empty() => blocks.push(ContentBlock::text(text)),
        Some(Value::String(_)) | None => {}
        Some(_) => return None,
    }
    for part in parts {
        blocks.push(serde_json::from_value::<ContentBlock>(part.clone()).ok()?);
    }
    let mut out = CallToolResult::success(blocks);
    out.structured_content = obj.get("structured").cloned();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_parts_join_and_structured_content_is_kept() {
        let mut r = CallToolResult::success(vec![
            ContentBlock::text("line one"),
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::text("line two"),
        ]);
        r.structured_content = Some(json!({"t": 1}));
        let out = McpOutput::from_mcp(&r);
        assert_eq!(out.text(), "line one\nline two");
        assert_eq!(out.data["structured"], json!({"t": 1}));
        assert_eq!(out.data["content"][0]["type"], "image");
        let tr = out.into_tool_result("x");
        assert!(tr.success);
        assert_eq!(tr.summary, json!("line one"));
    }

    #[test]
    fn is_error_becomes_tool_error() {
        let r = CallToolResult::error(vec![ContentBlock::text("boom")]);
        let tr = McpOutput::from_mcp(&r).into_tool_result("x");
        assert!(!tr.success);
        assert_eq!(tr.error.as_deref(), Some("boom"));
        assert_eq!(tr.error_code, Some(ErrorCode::TOOL_ERROR));
    }

    #[test]
    fn a2e_results_become_mcp_results() {
        let ok = to_mcp_result(&ToolResult::ok("t", json!({"a": 1})));
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.content[0].as_text().unwrap().text, r#"{"a":1}"#);
        assert_eq!(ok.structured_content, Some(json!({"a": 1})));
        let s = to_mcp_result(&ToolResult::ok("t", json!("plain")));
        assert_eq!(s.content[0].as_text().unwrap().text, "plain");
        assert_eq!(s.structured_content, None);
        let rich = json!({"output": "Look:", "content": [
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "hi"}}
        ]});
        let out = to_mcp_result(&ToolResult::ok("t", rich.clone()));
        let kinds: Vec<Value> = out
            .content
            .iter()
            .map(|b| serde_json::to_value(b).unwrap()["type"].clone())
            .collect();
        assert_eq!(
            kinds,
            [
                json!("text"),
                json!("image"),
                json!("audio"),
                json!("resource")
            ]
        );
        assert_eq!(out.structured_content, None);
        // And back: a mounted tool's result has the same form.
        let back = McpOutput::from_mcp(&out);
        assert_eq!(back.data, rich);
        let not_rich = to_mcp_result(&ToolResult::ok(
            "t",
            json!({"content": [{"type": "video"}]}),
        ));
        assert_eq!(not_rich.content.len(), 1);
        assert_eq!(
            not_rich.structured_content,
            Some(json!({"content": [{"type": "video"}]}))
        );
        let text_only = to_mcp_result(&ToolResult::ok("t", json!({"output": "just text"})));
        assert_eq!(text_only.content[0].as_text().unwrap().text, "just text");
        assert_eq!(text_only.structured_content, None);
        let failed = to_mcp_result(&ToolResult::failed("t", ErrorCode::TOOL_DENIED, "no"));
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(failed.content[0].as_text().unwrap().text, "tool_denied: no");
    }
}
