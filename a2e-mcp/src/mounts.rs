//! All mounted servers of a host, under one name table.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use a2e_proto::{ErrorCode, ToolDefinition, ToolResult};
use serde_json::{Map, Value};

use crate::call::McpCallOptions;
use crate::config::McpServerConfig;
use crate::error::McpError;
use crate::names::NameTable;
use crate::tool::ToolCatalog;
use crate::toolkit::McpToolkit;

/// The MCP servers a host mounts, with their tools named by the collision
/// rule of [`crate::names`] against the host's own tool names.
///
/// Tools are known once a server has been listed: `eager` servers are
/// listed when mounted; [`list_unlisted`](Self::list_unlisted) starts and
/// lists the others on first use (the non-deferred ones, or all), after which
/// [`definitions`](Self::definitions), [`input_schema`](Self::input_schema)
/// and [`resolve`](Self::resolve) answer from the cached lists without
/// waiting. [`call`](Self::call) also accepts `server.tool` for a server not
/// listed yet, starting it. A name, once exposed, stays while the mounts
/// live ([`NameTable::keeping`]).
#[derive(Debug)]
pub struct McpMounts {
    kits: Vec<McpToolkit>,
    reserved: HashSet<String>,
    names: Mutex<Names>,
}

/// The name table and the catalogs it was computed from.
#[derive(Debug, Default)]
struct Names {
    from: Vec<Option<Arc<ToolCatalog>>>,
    table: Arc<NameTable>,
}

impl Names {
    /// Whether `catalogs` are the ones the table was computed from.
    fn computed_from(&self, catalogs: &[Option<Arc<ToolCatalog>>]) -> bool {
        self.from.len() == catalogs.len()
            && self.from.iter().zip(catalogs).all(|pair| match pair {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            })
    }
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
        Ok(Self {
            kits,
            reserved,
            names: Mutex::default(),
        })
    }

    /// Sets what answers the sampling requests of the servers whose config
    /// has `sampling`.
    pub fn set_sampler(&self, sampler: std::sync::Arc<dyn crate::toolkit::Sampler>) {
        for kit in &self.kits {
            kit.set_sampler(sampler.clone());
        }
    }

    /// The toolkits, in config order.
    pub fn toolkits(&self) -> &[McpToolkit] {
        &self.kits
    }

    /// The toolkit of `server`.
    pub fn toolkit(&self, server: &str) -> Option<&McpToolkit> {
        self.kits.iter().find(|k| k.name() == server)
    }

    /// Starts and lists the servers not listed yet (deferred ones too when
    /// `include_deferred`), concurrently: what a host does on first use of
    /// servers that are not `eager`. Returns how many were listed now; a
    /// server that fails is logged and tried again on a later use (after its
    /// restart backoff).
    pub async fn list_unlisted(&self, include_deferred: bool) -> usize {
        let wanted = self.kits.iter().filter(|k| {
            (include_deferred || !k.config().defer_loading) && k.cached_tools().is_none()
        });
        list(
            wanted,
            "an MCP server could not be listed; its tools are missing",
        )
        .await
    }

    /// Lists again the listed servers that announced a change of their
    /// tools (`notifications/tools/list_changed`), concurrently. Returns how
    /// many were listed again; a server that fails keeps its last list and
    /// is logged (tried again at the next use).
    pub async fn relist_changed(&self) -> usize {
        let changed = self
            .kits
            .iter()
            .filter(|k| k.cached_tools().is_some() && k.tools_changed());
        list(
            changed,
            "an MCP server's changed tools could not be listed; its last list stays",
        )
        .await
    }

    /// The name table over the tools listed so far (computed again only when
    /// a server's list changed; names exposed before are kept).
    pub fn names(&self) -> Arc<NameTable> {
        let catalogs: Vec<Option<Arc<ToolCatalog>>> =
            self.kits.iter().map(McpToolkit::cached_tools).collect();
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        if !names.computed_from(&catalogs) {
            let lists: Vec<(&str, Vec<String>)> = self
                .kits
                .iter()
                .zip(&catalogs)
                .filter_map(|(k, c)| Some((k.name(), c.as_ref()?.names())))
                .collect();
            let table = NameTable::build(
                lists.iter().map(|(s, t)| (*s, t.as_slice())),
                &self.reserved,
            )
            // Server names were checked at mount time, so this cannot fail.
            .unwrap_or_default()
            .keeping(&names.table);
            *names = Names {
                from: catalogs,
                table: Arc::new(table),
            };
        }
        names.table.clone()
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
        options: McpCallOptions,
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
        options: McpCallOptions,
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

/// Lists `kits` (starting them if needed) concurrently; how many were
/// listed. A failure is logged with `failed`.
async fn list<'a>(kits: impl Iterator<Item = &'a McpToolkit>, failed: &str) -> usize {
    let listed = kits.map(|k| async move { (k.name(), k.start().await) });
    let mut count = 0;
    for (server, result) in futures::future::join_all(listed).await {
        match result {
            Ok(()) => count += 1,
            Err(error) => tracing::warn!(server, error = %error, "{failed}"),
        }
    }
    count
}
