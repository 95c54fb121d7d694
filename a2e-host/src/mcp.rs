//! MCP both ways on the host.
//!
//! - **Mounted servers** ([`McpPlugin`]): every server of `[[mcp.servers]]`
//!   becomes a toolkit named after it. Its tools join the host's tools under the
//!   names of `a2e-mcp`'s collision rule (a tool's own name, or `server.tool`
//!   when two servers — or a server and the host — offer the same name), with
//!   `toolkit` set; a server with `defer_loading` keeps its tools out of plain
//!   `tool/list` (found by search with `include_deferred`). Each tool's full
//!   JSON Schema validates its calls. A call becomes an MCP `tools/call`; its
//!   progress notifications become `tool/event` progress; a cancelled or
//!   timed-out call sends `notifications/cancelled`.
//! - **The host as an MCP server** ([`HostBackend`]): `a2e serve --mcp-stdio` and
//!   `--mcp-http ADDR` offer the host's tools (built-ins, plugins, mounted MCP
//!   tools) and its Published skills (as tools named `skill.NAME`) to MCP
//!   clients, with progress from events and cancellation, through the same
//!   [`Host::call_tool`] / [`Host::call_skill`] as A2E sessions: the same
//!   confinement, allow-lists and audit.
//!
//! **When servers start.** An `eager` server starts, and is listed, when the
//! host starts. Any other server starts on first use: the first `tool/list`
//! (a deferred server: the first search with `include_deferred`), the first
//! call that names one of its tools (`server.tool` always works, a plain name
//! once a list or a call of an unknown name has loaded the servers), or an
//! Ontheia `tool` step naming it. Its tools then join the host's registry
//! ([`ToolPlugin::load_tools`]); names exposed before never change (see
//! `a2e_mcp::names`). A server that announces a change of its tools
//! (`notifications/tools/list_changed`) is listed again at the next
//! `tool/list` (or call of an unknown name): new tools join, changed ones
//! are replaced, and tools it dropped leave the list (a call of one is
//! `unknown_tool`). A server that fails to start is logged and tried again
//! at the next use, after its restart backoff. `a2e mcp list` and `a2e mcp
//! tools SERVER` help setting one up.

use std::collections::HashSet;
use std::sync::Arc;

use a2e_mcp::{BackendTool, CallOptions, McpMounts, McpProgress, ProgressSink, ToolBackend};
use a2e_proto::{
    EventKind, SkillCallRequest, ToolCallRequest, ToolDefinition, ToolListRequest, ToolResult,
};
use futures::FutureExt;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{HostError, HostResult};
use crate::host::Host;
use crate::outbound::Outbound;
use crate::plugin::{CallContext, ToolOutput, ToolPlugin};

/// Mounts the servers of `config`, starting and listing the `eager` ones
/// (the others start on first use); `reserved` are the names the host's
/// other tools use (a mounted tool of the same name is exposed as
/// `server.tool`).
pub async fn mount(
    servers: Vec<a2e_mcp::McpServerConfig>,
    reserved: HashSet<String>,
) -> Result<McpMounts, String> {
    McpMounts::mount(servers, reserved)
        .await
        .map_err(|e| format!("[mcp] {e}"))
}

/// The mounted MCP servers as one tool plugin.
pub struct McpPlugin {
    mounts: Arc<McpMounts>,
}

impl McpPlugin {
    /// A plugin over mounted (and listed) servers.
    pub fn new(mounts: Arc<McpMounts>) -> Self {
        Self { mounts }
    }
}

impl ToolPlugin for McpPlugin {
    fn name(&self) -> &str {
        "mcp"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.mounts.definitions()
    }

    async fn load_tools(&self, include_deferred: bool) -> bool {
        // Servers started now, and servers whose tools changed since.
        let listed = self.mounts.list_unlisted(include_deferred).await;
        listed + self.mounts.relist_changed().await > 0
    }

    fn input_schema(&self, tool: &ToolDefinition) -> Value {
        self.mounts
            .input_schema(&tool.name)
            .unwrap_or_else(|| tool.input_schema())
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> HostResult<ToolOutput> {
        let sink = ctx.clone();
        let progress: a2e_mcp::ProgressFn = Arc::new(move |p: McpProgress| {
            let sink = sink.clone();
            async move { sink.emit(EventKind::PROGRESS, p.event_data()).await }.boxed()
        });
        let options = CallOptions {
            timeout: ctx.remaining(),
            cancel: Some(ctx.cancel.clone()),
            progress: Some(progress),
        };
        let result = self.mounts.call(tool, args, options).await;
        if result.success {
            Ok(ToolOutput {
                data: result.data,
                summary: result.summary,
                truncated: result.truncated,
                exit_code: result.exit_code,
            })
        } else {
            let message = result
                .error
                .unwrap_or_else(|| format!("the MCP tool `{tool}` failed"));
            Err(match result.error_code.as_ref().map(|c| c.as_str()) {
                Some("timeout") if ctx.cancel.is_cancelled() => HostError::Cancelled,
                Some("unknown_tool") => HostError::UnknownTool(tool.to_owned()),
                _ => HostError::failed(message),
            })
        }
    }
}

/// Skills are offered to MCP clients as tools named `skill.NAME`.
pub const SKILL_PREFIX: &str = "skill.";

/// The host served to MCP clients: one A2E session for the MCP connection.
pub struct HostBackend {
    host: Arc<Host>,
    session_id: String,
}

impl HostBackend {
    /// A backend for `host`; its calls run in their own session, acting for
    /// agent `agent_id` (memory namespaces and the audit log see it).
    pub fn new(host: Arc<Host>, agent_id: &str) -> Self {
        let session_id = format!("mcp-{}", uuid::Uuid::new_v4().simple());
        host.register_session(&session_id, agent_id);
        Self { host, session_id }
    }

    fn forward_events(
        progress: ProgressSink,
    ) -> (mpsc::Sender<Outbound>, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = mpsc::channel::<Outbound>(64);
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
}

impl Drop for HostBackend {
    fn drop(&mut self) {
        self.host.end_session(&self.session_id);
    }
}

impl ToolBackend for HostBackend {
    async fn list_tools(&self) -> Vec<BackendTool> {
        self.host.registry().load_tools(false).await;
        let all = ToolListRequest {
            query: String::new(),
            ..ToolListRequest::default()
        };
        let mut out: Vec<BackendTool> = self
            .host
            .list_tools(&all)
            .into_iter()
            .map(|def| {
                let schema = self
                    .host
                    .registry()
                    .tool(&def.name)
                    .map(|entry| entry.plugin.input_schema(&entry.def));
                BackendTool {
                    definition: def,
                    input_schema: schema.and_then(|s| s.as_object().cloned()),
                }
            })
            .collect();
        for skill in self
            .host
            .discover_skills(&a2e_proto::SkillDiscoverRequest::default())
        {
            if skill.status != a2e_proto::SkillStatus::PUBLISHED {
                continue;
            }
            let mut def = ToolDefinition::new(
                &format!("{SKILL_PREFIX}{}", skill.name),
                &format!("Skill: {}", skill.description),
            );
            def.tags = skill.tags.clone().unwrap_or_default();
            let schema = if skill.input_schema.is_empty() {
                None
            } else {
                Some(skill.input_schema.clone())
            };
            out.push(BackendTool {
                definition: def,
                input_schema: schema,
            });
        }
        out
    }

    async fn call_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        progress: ProgressSink,
        cancel: CancellationToken,
    ) -> ToolResult {
        let streaming = progress.is_active();
        let (tx, forward) = Self::forward_events(progress);
        let result = if let Some(skill) = name.strip_prefix(SKILL_PREFIX) {
            let req = SkillCallRequest {
                name: skill.to_owned(),
                arguments,
                streaming,
                timeout: 0,
                ..SkillCallRequest::default()
            };
            match self
                .host
                .call_skill(&self.session_id, &req, Some(tx), &cancel)
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
        } else {
            let req = ToolCallRequest {
                tool_name: name.clone(),
                arguments,
                streaming,
                ..ToolCallRequest::default()
            };
            match self
                .host
                .call_tool(&self.session_id, &req, Some(tx), &cancel)
                .await
            {
                Ok(r) => r,
                Err(e) => ToolResult::failed(&name, e.code(), e.to_string()),
            }
        };
        let _ = forward.await;
        result
    }
}
