//! [`Host`]: the registry, configuration, process table and audit log, and the
//! operations every transport and session shares (list, call, discover, run).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant as StdInstant;

use a2e_proto::{
    SkillDefinition, SkillDiscoverRequest, SkillStatus, ToolDefinition, ToolListRequest,
};

use crate::audit::Audit;
use crate::config::HostConfig;
use crate::error::{ConfigError, HostResult, PluginError, SkillError};
#[cfg(feature = "memory")]
use crate::memory::Memory;
use crate::plugin::Identity;
use crate::plugin::{SkillPlugin, ToolPlugin};
use crate::proc::ProcManager;
use crate::registry::{Registry, RegistryError};

mod calls;
mod handle;
#[cfg(feature = "ui")]
pub mod live;
mod options;
pub use calls::panic_message;
pub(crate) use calls::{CallKind, Caller, Finished, NodeTrace, SkillCallKind, ToolCallKind};

pub use calls::{
    ApprovalRequired, CANCEL_GRACE, CallHead, CallLayer, CallTarget, MAX_COLLECTED_EVENTS,
    MAX_TIMEOUT_SECS, WaitWatch, WatchWaits, effective_timeout,
};
pub use options::CallOptions;

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
    /// The call pipeline's added layers, in order (see [`CallLayer`]).
    layers: Vec<Arc<dyn CallLayer>>,
    #[cfg(feature = "memory")]
    memory: Option<Arc<Memory>>,
    #[cfg(feature = "llm")]
    providers: Option<Arc<a2e_llm::Providers>>,
    telemetry: a2e_telemetry::Telemetry,
    /// The run journal, once durable runs are on (`runs::enable`).
    #[cfg(feature = "journal")]
    journal: std::sync::OnceLock<Arc<dyn a2e_journal::Journal>>,
    /// This host's membership of the cluster it shares runs with
    /// (`[cluster]`; what runs on it is in `runs::cluster`).
    #[cfg(feature = "journal")]
    cluster: std::sync::OnceLock<Arc<a2e_journal::nats::Cluster>>,
    /// What the journal is asked to write, for the live view.
    #[cfg(feature = "ui")]
    live: Arc<live::LiveFeed>,
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
    #[error(transparent)]
    Skill(#[from] SkillError),
    /// A section of the configuration is invalid (memory, MCP servers, providers).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The run journal could not be opened, or the cluster joined.
    #[error("{0}")]
    Runs(String),
}

/// Builds a [`Host`].
pub struct HostBuilder {
    config: HostConfig,
    registry: Registry,
    errors: Vec<BuildError>,
    #[cfg(feature = "memory")]
    memory: Option<Arc<Memory>>,
    #[cfg(feature = "llm")]
    providers: Option<Arc<a2e_llm::Providers>>,
    telemetry: a2e_telemetry::Telemetry,
    /// Whether the host's listeners serve the live view.
    live_view: bool,
    launcher: crate::proc::Launcher,
    layers: Vec<Arc<dyn CallLayer>>,
}

impl HostBuilder {
    /// Spans and metrics go to `telemetry` (set up by the binary with
    /// [`a2e_telemetry::Telemetry::init`]); without it the host records none.
    pub fn with_telemetry(mut self, telemetry: a2e_telemetry::Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Where spans and metrics go.
    pub fn telemetry(&self) -> &a2e_telemetry::Telemetry {
        &self.telemetry
    }

    /// The host's listeners serve the live view: with the run journal off,
    /// runs are still kept in memory for a while so that the view shows them.
    pub fn serving_live_view(mut self, serving: bool) -> Self {
        self.live_view = serving;
        self
    }

    /// Whether the host's listeners serve the live view.
    pub fn serves_live_view(&self) -> bool {
        self.live_view
    }

    /// Adds the built-in tools the configuration enables, and the memory tools
    /// unless `[memory] enabled = false` (or the host is built without its
    /// `memory` feature).
    pub fn with_builtins(self) -> Self {
        let config = Arc::new(self.config.clone());
        let launcher = self.launcher.clone();
        let builder = self.with_tool_plugin(crate::builtins::tools_with_launcher(config, launcher));
        #[cfg(feature = "memory")]
        if builder.config.memory.enabled {
            return builder.with_memory();
        }
        builder
    }

    /// Adds the memory tools (`memory_write`, `memory_search`, `memory_delete`).
    #[cfg(feature = "memory")]
    pub fn with_memory(mut self) -> Self {
        match Memory::new(&self.config) {
            Ok(memory) => {
                // The store's size goes to the metrics of the telemetry given so far.
                let memory = Arc::new(memory.with_metrics(self.telemetry.metrics().clone()));
                self.memory = Some(memory.clone());
                self.with_tool_plugin(memory.plugin())
            }
            Err(e) => self.with_error(BuildError::Config(e)),
        }
    }

    /// Adds a tool plugin: one written against the plugin SDK, or one of the
    /// host's own (whose errors are [`HostError`](crate::HostError)s).
    pub fn with_tool_plugin<E: PluginError>(mut self, plugin: impl ToolPlugin<E>) -> Self {
        if let Err(e) = self.registry.add_tool_plugin(E::tools(plugin)) {
            self.errors.push(e.into());
        }
        self
    }

    /// Adds a skill plugin: one written against the plugin SDK, or one of the
    /// host's own (whose errors are [`HostError`](crate::HostError)s).
    pub fn with_skill_plugin<E: PluginError>(mut self, plugin: impl SkillPlugin<E>) -> Self {
        if let Err(e) = self.registry.add_skill_plugin(E::skills(plugin)) {
            self.errors.push(e.into());
        }
        self
    }

    /// Starts the host's commands (`run_command`, processes, program
    /// skills) through `sandbox` (see [`Launcher::set_sandbox`](crate::proc::Launcher::set_sandbox)).
    #[cfg(feature = "sandbox")]
    pub fn with_sandbox(self, sandbox: Arc<a2e_sandbox::Sandbox>) -> Self {
        self.launcher.set_sandbox(sandbox);
        self
    }

    /// How the host starts commands: shared by its built-in tools, its
    /// process table and its program skills.
    pub fn launcher(&self) -> &crate::proc::Launcher {
        &self.launcher
    }

    /// Adds `layer` to the call pipeline: every call passes it before its
    /// plugin runs, after the layers added before it.
    pub fn with_layer(mut self, layer: impl CallLayer) -> Self {
        self.layers.push(Arc::new(layer));
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
    #[cfg(feature = "llm")]
    pub fn providers(&mut self) -> Result<Option<Arc<a2e_llm::Providers>>, ConfigError> {
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
        #[cfg(feature = "llm")]
        let providers = self
            .providers()
            .map_err(BuildError::Config)?
            .filter(|p| p.names().next().is_some());
        refuse_missing_features(&self.config)?;
        self.config
            .acmp
            .check_token_env()
            .map_err(ConfigError::Acmp)?;
        let config = Arc::new(self.config);
        let registry = self.registry;
        let launcher = self.launcher;
        let layers = self.layers;
        Ok(Arc::new_cyclic(|me| Host {
            me: me.clone(),
            procs: ProcManager::new(config.clone()).with_launcher(launcher),
            config,
            registry,
            started: StdInstant::now(),
            audit,
            identities: Mutex::new(HashMap::new()),
            layers,
            #[cfg(feature = "journal")]
            journal: std::sync::OnceLock::new(),
            #[cfg(feature = "journal")]
            cluster: std::sync::OnceLock::new(),
            #[cfg(feature = "ui")]
            live: Arc::default(),
            #[cfg(feature = "memory")]
            memory: self.memory,
            #[cfg(feature = "llm")]
            telemetry: match &providers {
                Some(p) => self.telemetry.with_secrets(provider_secrets(p)),
                None => self.telemetry,
            },
            #[cfg(not(feature = "llm"))]
            telemetry: self.telemetry,
            #[cfg(feature = "llm")]
            providers,
        }))
    }
}

/// Refuses sections that need a feature this host was built without
/// (`[[llm.providers]]`: `llm`; `[[mcp.servers]]`: `mcp`;
/// `[[ontheia.agents]]`: `ontheia`).
fn refuse_missing_features(config: &HostConfig) -> Result<(), BuildError> {
    let sections = [
        (
            "[[llm.providers]]",
            "llm",
            config.llm.providers.is_empty() || cfg!(feature = "llm"),
        ),
        (
            "[[mcp.servers]]",
            "mcp",
            config.mcp.servers.is_empty() || cfg!(feature = "mcp"),
        ),
        (
            "[[ontheia.agents]]",
            "ontheia",
            config.ontheia.agents.is_empty() || cfg!(feature = "ontheia"),
        ),
    ];
    match sections.iter().find(|(_, _, fine)| !fine) {
        Some(&(section, feature, _)) => {
            Err(ConfigError::MissingFeature { section, feature }.into())
        }
        None => Ok(()),
    }
}

/// The provider keys and header values, cut out of anything telemetry records.
#[cfg(feature = "llm")]
fn provider_secrets(providers: &a2e_llm::Providers) -> Vec<String> {
    providers
        .names()
        .filter_map(|name| providers.config(name))
        .flat_map(|c| c.api_key.iter().chain(c.headers.values()))
        .map(|secret| secret.expose().to_owned())
        .collect()
}

impl Host {
    /// A builder over `config`.
    pub fn builder(config: HostConfig) -> HostBuilder {
        HostBuilder {
            config,
            registry: Registry::new(),
            errors: Vec::new(),
            #[cfg(feature = "memory")]
            memory: None,
            #[cfg(feature = "llm")]
            providers: None,
            telemetry: a2e_telemetry::Telemetry::disabled(),
            live_view: false,
            launcher: crate::proc::Launcher::default(),
            layers: Vec::new(),
        }
    }

    /// Where spans and metrics go (disabled unless the builder was given telemetry).
    pub fn telemetry(&self) -> &a2e_telemetry::Telemetry {
        &self.telemetry
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
    #[cfg(feature = "llm")]
    pub fn providers(&self) -> Option<&Arc<a2e_llm::Providers>> {
        self.providers.as_ref()
    }

    /// Long-term memory, when the host offers it.
    #[cfg(feature = "memory")]
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

    /// The run journal chains are journaled in, when durable runs are on.
    #[cfg(feature = "journal")]
    pub fn journal(&self) -> Option<&Arc<dyn a2e_journal::Journal>> {
        self.journal.get()
    }

    /// Installs the run journal; `false` when one is installed already.
    #[cfg(feature = "journal")]
    pub fn set_journal(&self, journal: Arc<dyn a2e_journal::Journal>) -> bool {
        // Its writes also go to the live feed.
        #[cfg(feature = "ui")]
        let journal: Arc<dyn a2e_journal::Journal> = Arc::new(live::Tapped {
            inner: journal,
            feed: self.live.clone(),
        });
        self.journal.set(journal).is_ok()
    }

    /// The cluster this host shares runs with, when `[cluster]` is on.
    #[cfg(feature = "journal")]
    pub fn cluster(&self) -> Option<Arc<a2e_journal::nats::Cluster>> {
        self.cluster.get().cloned()
    }

    /// Joins `cluster`; `false` when the host is in one already.
    #[cfg(feature = "journal")]
    pub fn set_cluster(&self, cluster: Arc<a2e_journal::nats::Cluster>) -> bool {
        self.cluster.set(cluster).is_ok()
    }

    /// The live feed of the durable runs: what the run journal is asked to
    /// write, as it happens (see [`live`]).
    #[cfg(feature = "ui")]
    pub fn live(&self) -> &live::LiveFeed {
        &self.live
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
