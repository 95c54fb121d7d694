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
//!   timed-out call sends `notifications/cancelled`. The call's W3C trace
//!   context goes along in `params._meta` (`traceparent`, `tracestate`).
//! - **The host as an MCP server** ([`HostBackend`]): `a2e serve --mcp-stdio` and
//!   `--mcp-http ADDR` offer the host's tools (built-ins, plugins, mounted MCP
//!   tools) and its Published skills (as tools named `skill__NAME`, and as
//!   prompts: [`prompts`]) to MCP clients, every name matching the tool
//!   APIs' `^[a-zA-Z0-9_-]{1,64}$` ([`names`]), with titles, annotations and
//!   output schemas where the host knows them, and without the tools that
//!   cannot run under the configuration, with progress and log events as
//!   notifications and cancellation, through the same [`Host::call_tool`](a2e_host_core::Host::call_tool) /
//!   [`Host::call_skill`](a2e_host_core::Host::call_skill) as A2E sessions: the same confinement, allow-lists
//!   and audit. The workspace's files are resources ([`resources`]); more
//!   resource and prompt providers come with [`McpExtras`]. Each MCP
//!   connection is an A2E session of its own, and a tool or skill reaches the
//!   client it was called from with [`client_of`] (sampling, elicitation).
//!   Each `tools/call` served is a `tools/call {tool}` span under the
//!   client's trace when its `_meta` (or, over HTTP, its `traceparent`
//!   header) carries one.
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
//!
//! The host's tools as an MCP server sees them, with their MCP names:
//!
//! ```
//! use a2e_host_core::{Host, HostConfig};
//! use a2e_host_mcp::HostBackend;
//! use a2e_mcp::ToolBackend;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let host = Host::builder(HostConfig::default()).with_builtins().build()?;
//!     let backend = HostBackend::new(host, "agent");
//!     let tools = backend.list_tools().await;
//!     assert!(tools.iter().any(|t| t.definition.name == "read_file"));
//!     Ok(())
//! })
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod backend;
#[cfg(feature = "llm")]
pub mod client_model;
mod clients;
pub mod elicit;
pub mod prompts;
pub mod resources;
#[cfg(feature = "llm")]
pub mod sampling;
mod serve;
#[cfg(feature = "tasks")]
mod task_questions;
#[cfg(feature = "tasks")]
pub mod tasks;

use std::collections::HashSet;
use std::sync::Arc;

use a2e_mcp::{McpCallOptions, McpMounts, McpProgress};
use a2e_proto::{ErrorCode, EventKind, ToolDefinition};
use futures::FutureExt;
use serde_json::{Map, Value};

#[cfg(feature = "acmp")]
use a2e_host_acmp as acmp;
#[cfg(feature = "llm")]
use a2e_host_core::llm;
#[cfg(feature = "memory")]
use a2e_host_core::memory;
use a2e_host_core::{builtins, error, host, outbound, plugin};

use crate::error::{HostError, HostResult};
use crate::plugin::{CallContext, ToolOutput, ToolPlugin};

pub use backend::{HostBackend, McpExtras, SKILL_PREFIX, names};
#[cfg(feature = "llm")]
pub use client_model::{CLIENT_PROVIDER, ClientModel};
pub use clients::client_of;
pub use prompts::{PromptProvider, SkillPrompts};
pub use resources::{ResourceProvider, WorkspaceResources};
#[cfg(feature = "llm")]
pub use sampling::HostSampler;
pub use serve::{serve_backend_http, serve_backend_stdio, serve_http, serve_stdio};

/// Mounts the servers of `config`, starting and listing the `eager` ones
/// (the others start on first use); `reserved` are the names the host's
/// other tools use (a mounted tool of the same name is exposed as
/// `server.tool`).
pub async fn mount(
    servers: Vec<a2e_mcp::McpServerConfig>,
    reserved: HashSet<String>,
) -> Result<McpMounts, crate::error::ConfigError> {
    McpMounts::mount(servers, reserved)
        .await
        .map_err(crate::error::ConfigError::Mcp)
}

/// The mounted MCP servers as one tool plugin.
pub struct McpPlugin {
    mounts: Arc<McpMounts>,
    metrics: a2e_telemetry::Metrics,
}

impl McpPlugin {
    /// A plugin over mounted (and listed) servers.
    pub fn new(mounts: Arc<McpMounts>) -> Self {
        Self {
            mounts,
            metrics: a2e_telemetry::Metrics::default(),
        }
    }

    /// Reports whether each server is up in `metrics` (`a2e.mcp.server.up`),
    /// after every listing and call.
    pub fn with_metrics(mut self, metrics: a2e_telemetry::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// `a2e.mcp.server.up` of every mounted server, now.
    async fn report_up(&self) {
        if !self.metrics.is_enabled() {
            return;
        }
        for toolkit in self.mounts.toolkits() {
            let up = toolkit.is_running().await;
            self.metrics.mcp_server_up(toolkit.name(), up);
        }
    }
}

impl ToolPlugin<HostError> for McpPlugin {
    fn name(&self) -> &str {
        "mcp"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.mounts.definitions()
    }

    async fn load_tools(&self, include_deferred: bool) -> bool {
        // Servers started now, and servers whose tools changed since.
        let listed = self.mounts.list_unlisted(include_deferred).await;
        let changed = listed + self.mounts.relist_changed().await > 0;
        self.report_up().await;
        changed
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
        // The call's trace context goes on in `params._meta` (where the MCP
        // semantic conventions put it): the server's spans join the trace.
        let mut meta = Map::new();
        if let Some(trace) = a2e_telemetry::TraceContext::current() {
            trace.to_meta(&mut meta);
        }
        let options = McpCallOptions {
            timeout: ctx.remaining(),
            cancel: Some(ctx.cancel.clone()),
            progress: Some(progress),
            meta,
        };
        let result = self.mounts.call(tool, args, options).await;
        self.report_up().await;
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
            let code = result.error_code;
            Err(
                if code == Some(ErrorCode::TIMEOUT) && ctx.cancel.is_cancelled() {
                    HostError::Cancelled
                } else if code == Some(ErrorCode::UNKNOWN_TOOL) {
                    HostError::UnknownTool(tool.to_owned())
                } else {
                    HostError::failed(message)
                },
            )
        }
    }
}
