//! [`Host`]: the registry, configuration, process table and audit log, and the
//! operations every transport and session shares (list, call, discover, run).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant as StdInstant;

use a2e_proto::{
    SkillCallRequest, SkillDefinition, SkillDiscoverRequest, SkillResult, SkillStatus,
    ToolCallRequest, ToolDefinition, ToolListRequest, ToolResult,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::audit::Audit;
use crate::config::HostConfig;
use crate::error::HostResult;
use crate::memory::Memory;
use crate::outbound::Outbound;
pub use crate::plugin::Identity;
use crate::plugin::{SkillPlugin, ToolPlugin};
use crate::proc::ProcManager;
use crate::registry::{Registry, RegistryError};

mod calls;
mod handle;
pub(crate) use calls::{Caller, SkillCallKind, ToolCallKind, panic_message};

pub use calls::{CANCEL_GRACE, MAX_COLLECTED_EVENTS, MAX_TIMEOUT_SECS, effective_timeout};

/// The host runtime shared by every session.
pub struct Host {
    /// The host itself, for calls made through its [`HostHandle`](crate::plugin::HostHandle).
    me: Weak<Host>,
    config: Arc<HostConfig>,
    registry: Registry,
    started: StdInstant,
    procs: ProcManager,
    audit: Audit,
    identities: Mutex<HashMap<String, Identity>>,
    memory: Option<Arc<Memory>>,
    providers: Option<Arc<a2e_llm::Providers>>,
}

/// Why a host could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A plugin clashed with another.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The audit log could not be opened.
    #[error("cannot open audit log: {0}")]
    Audit(#[from] std::io::Error),
    /// A skill file could not be loaded.
    #[error("{0}")]
    Skill(String),
    /// A section of the configuration is invalid (memory, MCP servers, providers).
    #[error("{0}")]
    Config(String),
}

/// Builds a [`Host`].
pub struct HostBuilder {
    config: HostConfig,
    registry: Registry,
    errors: Vec<BuildError>,
    memory: Option<Arc<Memory>>,
    providers: Option<Arc<a2e_llm::Providers>>,
}

impl HostBuilder {
    /// Adds the built-in tools the configuration enables, and the memory tools
    /// unless `[memory] enabled = false`.
    pub fn with_builtins(self) -> Self {
        let config = Arc::new(self.config.clone());
        let builder = self.with_tool_plugin(crate::builtins::BuiltinTools::new(config));
        if builder.config.memory.enabled {
            builder.with_memory()
        } else {
            builder
        }
    }

    /// Adds the memory tools (`memory_write`, `memory_search`, `memory_delete`).
    pub fn with_memory(mut self) -> Self {
        match Memory::new(&self.config) {
            Ok(memory) => {
                let memory = Arc::new(memory);
                self.memory = Some(memory.clone());
                self.with_tool_plugin(memory.plugin())
            }
            Err(e) => self.with_error(BuildError::Config(e)),
        }
    }

    /// Adds a tool plugin.
    pub fn with_tool_plugin(mut self, plugin: impl ToolPlugin) -> Self {
        if let Err(e) = self.registry.add_tool_plugin(Arc::new(plugin)) {
            self.errors.push(e.into());
        }
        self
    }

    /// Adds a skill plugin.
    pub fn with_skill_plugin(mut self, plugin: impl SkillPlugin) -> Self {
        if let Err(e) = self.registry.add_skill_plugin(Arc::new(plugin)) {
            self.errors.push(e.into());
        }
        self
    }

    /// Records a failure to report from [`HostBuilder::build`].
    pub fn with_error(mut self, error: BuildError) -> Self {
        self.errors.push(error);
        self
    }

    /// The model providers of the configuration (and of `A2E_LLM_*`, see
    /// [`crate::llm::providers`]), built once and shared by LLM skills,
    /// Ontheia `llm` steps and the host.
    pub fn providers(&mut self) -> Result<Option<Arc<a2e_llm::Providers>>, String> {
        if self.providers.is_none() {
            self.providers = Some(Arc::new(crate::llm::providers(&self.config)?));
        }
        Ok(self.providers.clone())
    }

    /// The configuration being built with.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// The host, or the first registration error.
    pub fn build(mut self) -> Result<Arc<Host>, BuildError> {
        if !self.errors.is_empty() {
            return Err(self.errors.remove(0));
        }
        let audit = Audit::new(&self.config.audit)?;
        let providers = self
            .providers()
            .map_err(BuildError::Config)?
            .filter(|p| p.names().next().is_some());
        let config = Arc::new(self.config);
        let registry = self.registry;
        let memory = self.memory;
        Ok(Arc::new_cyclic(|me| Host {
            me: me.clone(),
            procs: ProcManager::new(config.clone()),
            config,
            registry,
            started: StdInstant::now(),
            audit,
            identities: Mutex::new(HashMap::new()),
            memory,
            providers,
        }))
    }
}

impl Host {
    /// A builder over `config`.
    pub fn builder(config: HostConfig) -> HostBuilder {
        HostBuilder {
            config,
            registry: Registry::new(),
            errors: Vec::new(),
            memory: None,
            providers: None,
        }
    }

    /// The shared host this is (it lives in an `Arc` from its build on).
    fn arc(&self) -> HostResult<Arc<Host>> {
        self.me
            .upgrade()
            .ok_or_else(|| crate::HostError::Runtime("the host is shutting down".into()))
    }

    /// The configuration.
    pub fn config(&self) -> &Arc<HostConfig> {
        &self.config
    }

    /// The plugin registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The process table.
    pub fn procs(&self) -> &ProcManager {
        &self.procs
    }

    /// The model providers of `[[llm.providers]]`, when any are configured.
    pub fn providers(&self) -> Option<&Arc<a2e_llm::Providers>> {
        self.providers.as_ref()
    }

    /// Long-term memory, when the host offers it.
    pub fn memory(&self) -> Option<&Arc<Memory>> {
        self.memory.as_ref()
    }

    /// The audit log.
    pub fn audit(&self) -> &Audit {
        &self.audit
    }

    /// Seconds since the host started.
    pub fn uptime_seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// `tool/list`: list mode hides deferred tools; `filter_tags` is AND and
    /// case-insensitive; a `query` ranks by BM25 and includes deferred tools
    /// when `include_deferred` is set.
    pub fn list_tools(&self, req: &ToolListRequest) -> Vec<ToolDefinition> {
        let wanted_tags: Vec<String> = req.filter_tags.iter().map(|t| t.to_lowercase()).collect();
        let kind = req.filter_kind.to_lowercase();
        let searching = !req.query.trim().is_empty();
        let candidates: Vec<ToolDefinition> = self
            .registry
            .tools()
            .into_iter()
            .map(|e| e.def)
            .filter(|t| !t.defer_loading || (searching && req.include_deferred))
            .filter(|t| {
                let tags: Vec<String> = t.tags.iter().map(|x| x.to_lowercase()).collect();
                wanted_tags.iter().all(|w| tags.contains(w))
            })
            .filter(|t| {
                kind.is_empty()
                    || t.toolkit.as_deref().map(str::to_lowercase).as_deref() == Some(kind.as_str())
                    || t.tags.iter().any(|x| x.to_lowercase() == kind)
            })
            .map(Arc::unwrap_or_clone)
            .collect();
        if !searching {
            return candidates;
        }
        crate::search::rank(&req.query, &candidates)
            .into_iter()
            .filter_map(|(_, i)| candidates.get(i).cloned())
            .collect()
    }

    /// A skill's definition as agents see it: `Blocked` when a declared tool is
    /// missing, credentials redacted.
    pub fn effective_skill(&self, def: &SkillDefinition) -> SkillDefinition {
        let mut out = def.redacted();
        if out.status == SkillStatus::PUBLISHED && !self.missing_tools(def).is_empty() {
            out.status = SkillStatus::BLOCKED;
        }
        out
    }

    /// Loads the tools that load on first use when a skill declares one the
    /// registry does not know yet (so that it is not shown as `Blocked`
    /// only because its mounted MCP server has not started). Returns how many
    /// tools were added.
    pub async fn load_tools_for_skills(&self) -> usize {
        let missing = self
            .registry
            .skills()
            .iter()
            .any(|e| !self.missing_tools(&e.def).is_empty());
        if missing {
            self.registry.load_tools(true).await
        } else {
            0
        }
    }

    fn missing_tools(&self, def: &SkillDefinition) -> Vec<String> {
        def.tool_names()
            .into_iter()
            .filter(|t| self.registry.tool(t).is_none())
            .collect()
    }

    /// `skill/discover`: `filter_tags` is OR, `filter_categories` matches the category;
    /// both case-insensitive.
    pub fn discover_skills(&self, req: &SkillDiscoverRequest) -> Vec<SkillDefinition> {
        let tags: Vec<String> = req.filter_tags.iter().map(|t| t.to_lowercase()).collect();
        let cats: Vec<String> = req
            .filter_categories
            .iter()
            .map(|t| t.to_lowercase())
            .collect();
        self.registry
            .skills()
            .into_iter()
            .map(|e| e.def)
            .filter(|s| {
                tags.is_empty()
                    || s.tags
                        .iter()
                        .flatten()
                        .any(|t| tags.contains(&t.to_lowercase()))
            })
            .filter(|s| {
                cats.is_empty()
                    || s.category
                        .as_ref()
                        .is_some_and(|c| cats.contains(&c.to_lowercase()))
            })
            .map(|s| self.effective_skill(&s))
            .collect()
    }

    /// `tool/call`: validates, runs under the timeout, and returns the result.
    /// `Err` is a refusal (unknown tool, invalid arguments, denied) to answer
    /// with an `error` message; a call that ran and failed is `Ok` with
    /// `success: false`.
    pub async fn call_tool(
        self: &Arc<Self>,
        session_id: &str,
        req: &ToolCallRequest,
        stream: Option<mpsc::Sender<Outbound>>,
        cancel: &CancellationToken,
    ) -> HostResult<ToolResult> {
        let args = req.arguments.clone();
        let caller = calls::Caller::session(session_id, stream, cancel);
        self.call::<calls::ToolCallKind>(caller, req, args).await
    }

    /// [`Host::call_tool`] for a caller that owns the request: its arguments
    /// go to the plugin without a copy.
    pub async fn call_tool_owned(
        self: &Arc<Self>,
        session_id: &str,
        mut req: ToolCallRequest,
        stream: Option<mpsc::Sender<Outbound>>,
        cancel: &CancellationToken,
    ) -> HostResult<ToolResult> {
        let args = std::mem::take(&mut req.arguments);
        let caller = calls::Caller::session(session_id, stream, cancel);
        self.call::<calls::ToolCallKind>(caller, &req, args).await
    }

    /// `skill/call`: checks status and arguments, runs under the timeout.
    /// `Err` is a refusal; a skill that ran and failed is `Ok` with `success: false`.
    pub async fn call_skill(
        self: &Arc<Self>,
        session_id: &str,
        req: &SkillCallRequest,
        stream: Option<mpsc::Sender<Outbound>>,
        cancel: &CancellationToken,
    ) -> HostResult<SkillResult> {
        let args = req.arguments.clone();
        let caller = calls::Caller::session(session_id, stream, cancel);
        self.call::<calls::SkillCallKind>(caller, req, args).await
    }

    /// [`Host::call_skill`] for a caller that owns the request: its arguments
    /// go to the plugin without a copy.
    pub async fn call_skill_owned(
        self: &Arc<Self>,
        session_id: &str,
        mut req: SkillCallRequest,
        stream: Option<mpsc::Sender<Outbound>>,
        cancel: &CancellationToken,
    ) -> HostResult<SkillResult> {
        let args = std::mem::take(&mut req.arguments);
        let caller = calls::Caller::session(session_id, stream, cancel);
        self.call::<calls::SkillCallKind>(caller, &req, args).await
    }

    /// Records who session `session_id` acts for (at its handshake): calls of
    /// the session carry it in their [`CallContext`](crate::plugin::CallContext).
    pub fn register_session(&self, session_id: &str, agent_id: &str) {
        let agent: Arc<str> = agent_id.into();
        let identity = Identity {
            session_id: session_id.into(),
            agent_id: agent.clone(),
            user_id: agent,
        };
        self.identities
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(session_id.to_owned(), identity);
    }

    /// Who session `session_id` acts for (empty for the host's own calls).
    pub fn identity(&self, session_id: &str) -> Identity {
        self.identities
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(session_id)
            .cloned()
            .unwrap_or_else(|| Identity {
                session_id: crate::plugin::shared_str(session_id),
                ..Identity::default()
            })
    }

    /// Ends a session's processes (every process group it started) and forgets
    /// who it acted for.
    pub fn end_session(&self, session_id: &str) {
        self.procs.end_session(session_id);
        self.identities
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(session_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_default_respect_a_skill_ceiling_and_the_host_maximum() {
        assert_eq!(effective_timeout(0, 30, None), 30);
        assert_eq!(effective_timeout(5, 30, None), 5);
        assert_eq!(effective_timeout(0, 30, Some(120)), 120);
        assert_eq!(effective_timeout(600, 30, Some(120)), 120);
        assert_eq!(effective_timeout(u64::MAX, 30, None), MAX_TIMEOUT_SECS);
        assert_eq!(effective_timeout(0, 0, None), 1);
    }
}
