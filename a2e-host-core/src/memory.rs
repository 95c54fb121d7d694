//! Long-term memory as a host capability: the `memory_write`, `memory_search`
//! and `memory_delete` tools over the embedded store of `a2e-memory` (one SQLite
//! file in the data directory; BM25, or hybrid search when an embeddings
//! endpoint is configured).
//!
//! A session may touch only the namespaces that `[memory] namespaces` allows
//! for it: patterns with `${agent_id}` and `${user_id}`, filled from the
//! session's [`Identity`](crate::plugin::Identity); anything else is `unauthorized`.
//! The store opens on first use, so a host that never touches memory never
//! creates the file. The tools are typed ([`TypedTool`]): their schemas come
//! from `a2e-memory`'s argument types, the Ontheia step parameters. With
//! metrics on ([`Memory::with_metrics`]), the store's size is reported when
//! it opens and after every write and delete (`a2e.memory.entries`,
//! `a2e.memory.size`).

use std::path::PathBuf;
use std::sync::Arc;

use a2e_memory::{
    EmbedderConfig, Limits, MemoryDeleteArgs, MemorySearchArgs, MemoryStore, MemoryTools,
    MemoryWriteArgs, NamespacePolicy, OpenAiEmbedder, Principal, SqliteStore, StoreOptions,
    ToolError,
};
use a2e_proto::ToolDefinition;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::builtins::ToolHints;
use crate::config::{HostConfig, MemoryConfig};
use crate::error::{ConfigError, HostError, HostResult};
use crate::plugin::{CallContext, ToolOutput, Toolbox, TypedTool};

/// The memory tools' shared state: the policy, and the store once opened.
pub struct Memory {
    path: PathBuf,
    options: StoreOptions,
    policy: NamespacePolicy,
    tools: OnceCell<MemoryTools<SqliteStore>>,
    metrics: a2e_telemetry::Metrics,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("path", &self.path)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// The memory of `config`: the policy is checked now, the store opens on first use.
    pub fn new(config: &HostConfig) -> Result<Self, ConfigError> {
        Self::with_policy(config, Self::policy_of(&config.memory)?)
    }

    /// The memory of `config` under another policy (the command line uses
    /// [`NamespacePolicy::allow_all`]).
    pub fn with_policy(config: &HostConfig, policy: NamespacePolicy) -> Result<Self, ConfigError> {
        let memory = &config.memory;
        let path = memory
            .path
            .clone()
            .map(|p| {
                if p.is_absolute() {
                    p
                } else {
                    config.root.join(p)
                }
            })
            .unwrap_or_else(|| config.data_path().join("memory.db"));
        let mut options = StoreOptions {
            limits: Limits {
                max_content_bytes: memory.max_content_bytes,
                ..Limits::default()
            },
            ..StoreOptions::default()
        };
        if let Some(e) = &memory.embeddings {
            let mut embedder = EmbedderConfig::new(&e.base_url, &e.model);
            let key = e
                .api_key
                .clone()
                .or_else(|| e.api_key_env.as_ref().and_then(|v| std::env::var(v).ok()));
            if let Some(key) = key {
                embedder = embedder.api_key(key);
            }
            let embedder = OpenAiEmbedder::new(embedder)?;
            options = options.embedder(embedder);
        }
        Ok(Self {
            path,
            options,
            policy,
            tools: OnceCell::new(),
            metrics: a2e_telemetry::Metrics::default(),
        })
    }

    /// Reports the store's size in `metrics`.
    pub fn with_metrics(mut self, metrics: a2e_telemetry::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// `a2e.memory.entries` (memories in every namespace) and
    /// `a2e.memory.size` (the SQLite file and its write-ahead log, in bytes).
    async fn report_size(&self, tools: &MemoryTools<SqliteStore>) {
        if !self.metrics.is_enabled() {
            return;
        }
        let Ok(namespaces) = tools.store().namespaces().await else {
            return;
        };
        let entries = namespaces.iter().map(|n| n.count).sum();
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let bytes = [self.path.clone(), PathBuf::from(wal)]
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        self.metrics.memory_store(entries, bytes);
    }

    fn policy_of(memory: &MemoryConfig) -> Result<NamespacePolicy, ConfigError> {
        Ok(NamespacePolicy::new(&memory.namespaces)?)
    }

    /// The SQLite file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The tools over the opened store (opened on the first call).
    pub async fn tools(&self) -> HostResult<&MemoryTools<SqliteStore>> {
        self.tools
            .get_or_try_init(|| async {
                if let Some(dir) = self.path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        HostError::io(format!("cannot create `{}`", dir.display()), e)
                    })?;
                }
                let store = SqliteStore::open(&self.path, self.options.clone())
                    .await
                    .map_err(|e| {
                        HostError::failed(format!(
                            "cannot open the memory store `{}`: {e}",
                            self.path.display()
                        ))
                    })?;
                let tools = MemoryTools::new(store, self.policy.clone());
                self.report_size(&tools).await;
                Ok(tools)
            })
            .await
    }

    /// Runs memory tool `name` for `who` with `args`.
    pub async fn call(&self, who: &Principal, name: &str, args: Value) -> HostResult<Value> {
        let tools = self.tools().await?;
        let out = tools.call(who, name, args).await.map_err(to_host_error)?;
        if name != a2e_memory::MEMORY_SEARCH {
            self.report_size(tools).await;
        }
        Ok(out)
    }

    /// The three tools as a plugin.
    pub fn plugin(self: &Arc<Self>) -> Toolbox<HostError> {
        Toolbox::returning("memory")
            .with(WriteTool(self.clone()))
            .with(SearchTool(self.clone()))
            .with(DeleteTool(self.clone()))
    }
}

/// A memory tool's error as the host answers it: refusals keep their code.
fn to_host_error(e: ToolError) -> HostError {
    match e {
        ToolError::Invalid(what) => HostError::schema(vec![what]),
        ToolError::UnknownTool(name) => HostError::UnknownTool(name),
        e @ ToolError::Unauthorized { .. } => HostError::unauthorized(e.to_string()),
        e => HostError::failed(e.to_string()),
    }
}

fn principal(ctx: &CallContext) -> Principal {
    Principal::new(ctx.agent_id.as_ref(), ctx.user_id.as_ref())
}

/// The title, hints and output schema of the memory tool `tool`, if it is
/// one: a write adds a memory and replaces none, a search changes nothing, a
/// delete deletes.
pub fn memory_hints(tool: &str) -> Option<ToolHints> {
    let string = serde_json::json!({"type": "string"});
    let hints = match tool {
        a2e_memory::MEMORY_WRITE => ToolHints::new("Remember").output(serde_json::json!({
            "id": string, "namespace": string, "created_at": string,
            "embedded": {"type": "boolean"},
        })),
        a2e_memory::MEMORY_SEARCH => {
            ToolHints::new("Search memory")
                .read_only()
                .output(serde_json::json!({
                    "hits": {"type": "array", "items": {"type": "object"}},
                    "count": {"type": "integer"}, "top_k": {"type": "integer"},
                    "top_k_requested": {"type": "integer"},
                }))
        }
        a2e_memory::MEMORY_DELETE => {
            ToolHints::new("Forget")
                .destructive()
                .output(serde_json::json!({
                    "id": string, "namespace": string, "deleted": {"type": "boolean"},
                }))
        }
        _ => return None,
    };
    Some(hints)
}

struct WriteTool(Arc<Memory>);
struct SearchTool(Arc<Memory>);
struct DeleteTool(Arc<Memory>);

impl TypedTool<HostError> for WriteTool {
    type Args = MemoryWriteArgs;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            a2e_memory::MEMORY_WRITE,
            "Store a text in long-term memory under a namespace; returns its id",
        )
        .tags(&["memory"])
    }

    async fn call(&self, args: MemoryWriteArgs, ctx: CallContext) -> HostResult<ToolOutput> {
        let tools = self.0.tools().await?;
        let out = tools
            .write(&principal(&ctx), args)
            .await
            .map_err(to_host_error)?;
        self.0.report_size(tools).await;
        Ok(out.into())
    }
}

impl TypedTool<HostError> for SearchTool {
    type Args = MemorySearchArgs;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            a2e_memory::MEMORY_SEARCH,
            "Search long-term memory in one or more namespaces (top_k default 5, at most 20); hits best first",
        )
        .tags(&["memory", "search"])
        .idempotent()
    }

    async fn call(&self, args: MemorySearchArgs, ctx: CallContext) -> HostResult<ToolOutput> {
        let tools = self.0.tools().await?;
        let out = tools
            .search(&principal(&ctx), args)
            .await
            .map_err(to_host_error)?;
        Ok(out.into())
    }
}

impl TypedTool<HostError> for DeleteTool {
    type Args = MemoryDeleteArgs;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(a2e_memory::MEMORY_DELETE, "Delete one memory by id")
            .tags(&["memory"])
            .idempotent()
    }

    async fn call(&self, args: MemoryDeleteArgs, ctx: CallContext) -> HostResult<ToolOutput> {
        let tools = self.0.tools().await?;
        let out = tools
            .delete(&principal(&ctx), args)
            .await
            .map_err(to_host_error)?;
        self.0.report_size(tools).await;
        Ok(out.into())
    }
}
