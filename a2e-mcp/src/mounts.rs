//! All mounted servers of a host, under one name table.

use std::collections::HashSet;

use a2e_proto::{ErrorCode, ToolDefinition, ToolResult};
use serde_json::{Map, Value};

use crate::call::CallOptions;
use crate::config::McpServerConfig;
use crate::error::McpError;
use crate::names::NameTable;
use crate::toolkit::McpToolkit;

/// The MCP servers a host mounts, with their tools named by the collision
/// rule of [`crate::names`] against the host's own tool names.
///
/// Tools are known once a server has been listed: [`refresh`](Self::refresh)
/// starts and lists servers (the non-deferred ones, or all), after which
/// [`definitions`](Self::definitions), [`input_schema`](Self::input_schema)
/// and [`resolve`](Self::resolve) answer from the cached lists without
/// waiting. [`call`](Self::call) also accepts `server.tool` for a server not
/// listed yet, starting it.
#[derive(Debug)]
pub struct McpMounts {
    kits: Vec<McpToolkit>,
    reserved: HashSet<String>,
}

impl McpMounts {
    /// Mounts `configs` (eager servers start now; a failed start is logged
    /// and retried on use). `reserved` are the host's own tool names.
    pub async fn mount(
        configs: Vec<McpServerConfig>,
        reserved: HashSet<String>,
    ) -> Result<Self, McpError> {
        let mut names = HashSet::new();
        for config in &configs {
            config.transport()?;
            if !names.insert(config.name.clone()) {
                return Err(McpError::Config {
                    server: config.name.clone(),
                    reason: "two mounted servers have this name".into(),
                });
            }
        }
        let mut kits = Vec::with_capacity(configs.len());
        for config in configs {
            kits.push(McpToolkit::mount(config).await?);
        }
        Ok(Self { kits, reserved })
    }

    /// The toolkits, in config order.
    pub fn toolkits(&self) -> &[McpToolkit] {
        &self.kits
    }

    /// The toolkit of `server`.
    pub fn toolkit(&self, server: &str) -> Option<&McpToolkit> {
        self.kits.iter().find(|k| k.name() == server)
    }

    /// Starts and lists the servers (deferred ones too when
    /// `include_deferred`), concurrently. Returns the failures; the other
    /// servers' tools are listed regardless.
    pub async fn refresh(&self, include_deferred: bool) -> Vec<McpError> {
        let wanted = self
            .kits
            .iter()
            .filter(|k| include_deferred || !k.config().defer_loading);
        let results = futures::future::join_all(wanted.map(McpToolkit::start)).await;
        results.into_iter().filter_map(Result::err).collect()
    }

    /// The name table over the tools listed so far.
    pub fn names(&self) -> NameTable {
        let lists: Vec<(String, Vec<String>)> = self
            .kits
            .iter()
            .filter_map(|k| Some((k.name().to_owned(), k.cached_tools()?.names())))
            .collect();
        let table = NameTable::build(
            lists.iter().map(|(s, t)| (s.as_str(), t.as_slice())),
            &self.reserved,
        );
        // Server names were checked at mount time, so this cannot fail.
        table.unwrap_or_default()
    }

    /// The definitions of all listed tools under their exposed names
    /// (deferred servers' tools carry `defer_loading: true`).
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let names = self.names();
        let mut out = Vec::new();
        for kit in &self.kits {
            let Some(catalog) = kit.cached_tools() else {
                continue;
            };
            for tool in catalog.iter() {
                let mut def = tool.definition.clone();
                if let Some(exposed) = names.exposed_name(kit.name(), tool.name()) {
                    def.name = exposed.to_owned();
                }
                out.push(def);
            }
        }
        out
    }

    /// The full input schema of the tool `exposed` names.
    pub fn input_schema(&self, exposed: &str) -> Option<Value> {
        let (kit, tool) = self.resolve(exposed)?;
        Some(kit.cached_tools()?.get(&tool)?.input_schema_value())
    }

    /// The toolkit and MCP tool name an exposed name (or `server.tool`)
    /// means, among the listed tools.
    pub fn resolve(&self, exposed: &str) -> Option<(&McpToolkit, String)> {
        let names = self.names();
        let (server, tool) = names.resolve(exposed)?;
        Some((self.toolkit(server)?, tool.to_owned()))
    }

    /// Calls the tool `exposed` names (also `server.tool` of a server not
    /// listed yet), as an A2E result; an unknown name is `unknown_tool`.
    pub async fn call(
        &self,
        exposed: &str,
        args: Map<String, Value>,
        options: CallOptions,
    ) -> ToolResult {
        let target = match self.resolve(exposed) {
            Some((kit, tool)) => Some((kit, tool)),
            None => exposed.split_once('.').and_then(|(server, tool)| {
                let kit = self.toolkit(server)?;
                kit.cached_tools().is_none().then(|| (kit, tool.to_owned()))
            }),
        };
        match target {
            Some((kit, tool)) => {
                let mut result = kit.call_result(&tool, args, options).await;
                result.tool_name = exposed.to_owned();
                result
            }
            None => ToolResult::failed(
                exposed,
                ErrorCode::UNKNOWN_TOOL,
                format!("no mounted MCP tool `{exposed}`"),
            ),
        }
    }

    /// Calls `tool` of `server` directly (the Ontheia `tool` step's
    /// `server` + `tool`).
    pub async fn call_on(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        options: CallOptions,
    ) -> ToolResult {
        match self.toolkit(server) {
            Some(kit) => kit.call_result(tool, args, options).await,
            None => ToolResult::failed(
                tool,
                ErrorCode::SERVER_NOT_FOUND,
                format!("no mounted MCP server `{server}`"),
            ),
        }
    }

    /// Stops every server.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.kits.iter().map(McpToolkit::shutdown)).await;
    }
}
