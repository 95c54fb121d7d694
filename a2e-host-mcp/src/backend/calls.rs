//! One MCP `tools/call` served: its span, the call through the host (a
//! skill or a tool), the events forwarded as progress, and an image read
//! made rich content.

use a2e_mcp::ProgressSink;
use a2e_proto::{SkillCallRequest, ToolCallRequest, ToolResult};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::HostBackend;
use super::names::Target;
use crate::outbound::EventStream;

/// The length of `value` as compact JSON, without building the text.
pub(super) fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// `read_file` of an image, asked without an encoding: read as base64, and
/// the result made an image content block for the MCP client.
fn image_read(name: &str, arguments: &mut Map<String, Value>) -> Option<&'static str> {
    if name != "read_file" || arguments.contains_key("encoding") {
        return None;
    }
    let path = arguments.get("path")?.as_str()?;
    let mime = crate::resources::mime_of(std::path::Path::new(path));
    if !mime.starts_with("image/") {
        return None;
    }
    arguments.insert("encoding".into(), Value::from("base64"));
    Some(mime)
}

/// The result of an image's `read_file` as rich content (the read's fields
/// but `content` as `structured`).
fn as_image(mut result: ToolResult, mime: &str) -> ToolResult {
    let Some(Value::String(data)) = result
        .data
        .as_object_mut()
        .and_then(|d| d.remove("content"))
    else {
        return result;
    };
    let path = result
        .data
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let structured = std::mem::take(&mut result.data);
    result.data = serde_json::json!({
        "output": format!("{path} ({mime})"),
        "content": [{"type": "image", "data": data, "mimeType": mime}],
        "structured": structured,
    });
    result
}

impl HostBackend {
    fn forward_events(progress: ProgressSink) -> (EventStream, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = EventStream::channel(64);
        let forward = tokio::spawn(async move {
            while let Some(out) = rx.recv().await {
                for msg in out.into_messages() {
                    match msg {
                        a2e_proto::Message::ToolEvent(e) => progress.emit(&e.kind, &e.data),
                        a2e_proto::Message::SkillEvent(e) => progress.emit(&e.kind, &e.data),
                        _ => {}
                    }
                }
            }
        });
        (tx, forward)
    }
    /// The span of one MCP `tools/call` served: `tools/call {tool}`, kind
    /// server, in this connection's session.
    pub(super) fn request_span(
        &self,
        tool: &str,
        meta: &Map<String, Value>,
    ) -> a2e_telemetry::OpSpan {
        let telemetry = self.host.telemetry();
        if !telemetry.traces_enabled() {
            return a2e_telemetry::OpSpan::default();
        }
        let remote = a2e_telemetry::TraceContext::from_meta(meta).and_then(|r| {
            r.map_err(|e| {
                tracing::debug!(session = %self.session_id, tool, "traceparent ignored: {e}");
            })
            .ok()
        });
        let mut builder = telemetry
            .request(a2e_telemetry::Protocol::Mcp, "tools/call")
            .target(tool)
            .session(&self.session_id)
            .agent_id(&self.agent_id);
        if let Some(remote) = &remote {
            builder = builder.parent(a2e_telemetry::Parent::Remote(remote));
        }
        builder.start()
    }

    /// Runs one `tools/call`: a skill or a tool, as its MCP name means
    /// ([`HostBackend::resolve`]), through the host as an A2E call would. The
    /// result carries the name the client called.
    pub(super) async fn run_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        progress: ProgressSink,
        cancel: CancellationToken,
        extra: crate::plugin::Extensions,
    ) -> ToolResult {
        // Events flow whenever the client can receive them (log messages
        // need no progress token).
        let streaming = progress.is_connected();
        if let Some(client) = progress.client() {
            self.set_client(client.clone());
        }
        let client = progress.client().cloned();
        // The call carries the client it came from (sampling, elicitation):
        // this request's link (a 2026-07-28 request's rounds are its own).
        let mut extensions = extra;
        if let Some(link) = client.clone().or_else(|| self.client()) {
            extensions.insert(link);
        }
        let (tx, forward) = Self::forward_events(progress);
        let result = match self.resolve(&name) {
            Target::Skill(skill) => {
                let arguments = match self.host.registry().skill(&skill) {
                    Some(entry) => {
                        match crate::elicit::fill_missing(&entry.def, arguments, client.as_ref())
                            .await
                        {
                            Ok(arguments) => arguments,
                            Err((code, message)) => {
                                drop(tx);
                                let _ = forward.await;
                                return ToolResult::failed(&name, code, message);
                            }
                        }
                    }
                    None => arguments,
                };
                let req = SkillCallRequest {
                    name: skill,
                    arguments,
                    streaming,
                    timeout: 0,
                    ..SkillCallRequest::default()
                };
                match self
                    .host
                    .call_skill(
                        req,
                        crate::host::CallOptions::new()
                            .session(&self.session_id)
                            .events(tx)
                            .cancel(&cancel)
                            .extensions(extensions),
                    )
                    .await
                {
                    Ok(r) => ToolResult {
                        success: r.success,
                        tool_name: name.clone(),
                        data: r.data,
                        summary: r.summary,
                        truncated: r.truncated,
                        exit_code: None,
                        error: r.error,
                        error_code: r.error_code,
                        duration_ms: r.duration_ms,
                        events: Vec::new(),
                    },
                    Err(e) => ToolResult::failed(&name, e.code(), e.to_string()),
                }
            }
            Target::Tool(tool) => {
                let mut arguments = arguments;
                let image = image_read(&tool, &mut arguments);
                let req = ToolCallRequest {
                    tool_name: tool,
                    arguments,
                    streaming,
                    ..ToolCallRequest::default()
                };
                match self
                    .host
                    .call_tool(
                        req,
                        crate::host::CallOptions::new()
                            .session(&self.session_id)
                            .events(tx)
                            .cancel(&cancel)
                            .extensions(extensions),
                    )
                    .await
                {
                    Ok(r) if r.success && image.is_some() => as_image(r, image.unwrap_or_default()),
                    Ok(r) => ToolResult {
                        tool_name: name.clone(),
                        ..r
                    },
                    Err(e) => ToolResult::failed(&name, e.code(), e.to_string()),
                }
            }
        };
        let _ = forward.await;
        result
    }
}
