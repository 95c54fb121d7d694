//! Host configuration: a TOML file, with safe defaults when absent.
//!
//! ```toml
//! root = "."                     # workspace the built-in tools are confined to
//! auth_token = ""                # when set, handshakes must carry it
//! max_parallel = 4               # concurrent requests per session
//! builtins = ["read_file", "write_file", "list_dir", "glob", "grep"]  # on by default
//! skill_dirs = ["skills"]        # chain, LLM and program skills (Markdown + YAML front matter)
//!
//! [commands]                     # run_command and proc: nothing runs unless allowed
//! allow = ["echo", "ls"]
//! timeout_secs = 30
//! output_max_bytes = 1048576
//! proc_limit = 8
//!
//! [http]                         # http_request: no host unless allowed
//! allow_hosts = ["127.0.0.1"]
//! timeout_secs = 30
//! body_max_bytes = 1048576
//!
//! [files]
//! read_max_bytes = 1048576
//!
//! [audit]
//! path = ""                      # empty: audit lines go to the log (stderr)
//! include_arguments = false
//!
//! [journal]                      # durable chain runs (`a2e serve`; docs/durability.md)
//! enabled = true
//! path = ""                      # empty: runs.db in the data directory
//! sync = "normal"                # "full": every commit synced (survives a power cut)
//! keep_days = 7                  # finished runs are pruned after this long …
//! keep_runs = 1000               # … or past this many
//!
//! [cluster]                      # hosts sharing runs on NATS JetStream (docs/durability.md)
//! nats_url = ""                  # e.g. "nats://127.0.0.1:4222"; empty: no cluster
//! serve = ["*"]                  # toolkits whose nodes this host runs; [] coordinates only
//! lease_ttl_secs = 10            # a dead coordinator's runs are taken over after this
//! ack_wait_secs = 30             # a dead worker's node is delivered again after this
//! max_deliver = 5                # then the node fails with `worker_lost`
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod a2a;
mod approvals;
mod cluster;
mod entries;
mod mcp;
mod plugins;

pub use a2a::{A2aConfig, DEFAULT_AGENT_TIMEOUT_SECS, RemoteAgentEntry, RemoteAgentError};
pub use approvals::{
    ApprovalRule, ApprovalRuleError, DEFAULT_APPROVAL_TIMEOUT_SECS, Decider,
    MAX_APPROVAL_TIMEOUT_SECS, OnTimeout,
};
pub use cluster::ClusterConfig;
pub use entries::{McpServerEntry, ProviderEntry};
pub use mcp::{McpConfig, REQUEST_STATE_KEY_MIN, RequestStateKeyError};
pub use plugins::PluginProcessConfig;

/// Every built-in tool name.
pub const ALL_BUILTINS: &[&str] = &[
    "read_file",
    "write_file",
    "list_dir",
    "glob",
    "grep",
    "run_command",
    "http_request",
    "split_text",
    "text_stats",
    "transform",
];

/// Built-ins that are on when the configuration does not say (all of them:
/// `run_command` and `http_request` still refuse everything until the
/// configuration allows commands or hosts).
pub const DEFAULT_BUILTINS: &[&str] = ALL_BUILTINS;

/// Default of [`HostConfig::max_queued_event_bytes`]: 64 MiB.
pub const DEFAULT_MAX_QUEUED_EVENT_BYTES: usize = 64 << 20;

/// The host's configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostConfig {
    /// Workspace root the built-in tools are confined to.
    pub root: PathBuf,
    /// Shared secret handshakes must carry (empty: none required).
    pub auth_token: String,
    /// Concurrent requests per session.
    pub max_parallel: u32,
    /// Largest message accepted, in bytes.
    pub max_message_bytes: usize,
    /// Bytes of a streaming chain's events that may wait for an agent that
    /// does not read them; past this the chain is cancelled (its response
    /// says why). Default 64 MiB.
    pub max_queued_event_bytes: usize,
    /// Built-in tools that are on.
    pub builtins: Vec<String>,
    /// Directories scanned for chain skills (relative to `root`).
    pub skill_dirs: Vec<PathBuf>,
    /// Commands (run_command, proc).
    pub commands: CommandConfig,
    /// Outbound HTTP (http_request).
    pub http: HttpConfig,
    /// File tools.
    pub files: FileConfig,
    /// Audit log.
    pub audit: AuditConfig,
    /// Default timeouts.
    pub timeouts: TimeoutConfig,
    /// Where the host keeps its data (the memory database); relative paths are
    /// under the root. Default `.a2e`.
    pub data_dir: PathBuf,
    /// Model providers for LLM skills (`[[llm.providers]]`).
    pub llm: LlmConfig,
    /// Long-term memory (`[memory]`).
    pub memory: MemoryConfig,
    /// MCP servers mounted as toolkits (`[[mcp.servers]]`).
    pub mcp: McpConfig,
    /// Ontheia documents: the agents `agent` steps delegate to (`[[ontheia.agents]]`).
    pub ontheia: OntheiaConfig,
    /// Plugin processes mounted as toolkits (`[[plugins]]`, see `a2e_host::plugins`).
    pub plugins: Vec<PluginProcessConfig>,
    /// OpenTelemetry traces and metrics (`[telemetry]`, off by default; the
    /// `OTEL_*` variables apply over it; docs/observability.md).
    pub telemetry: a2e_telemetry::TelemetryConfig,
    /// The run journal of durable chain runs (`[journal]`, on by default for
    /// `a2e serve`; docs/durability.md).
    pub journal: JournalConfig,
    /// Hosts that share runs over NATS JetStream (`[cluster]`, off by
    /// default; docs/durability.md).
    pub cluster: ClusterConfig,
    /// ACMP: the host as a provider, and the remote providers it buys from
    /// (`[acmp]`, see [`crate::acmp_config`]).
    pub acmp: crate::acmp_config::AcmpConfig,
    /// Calls that wait for a person's decision before they run
    /// (`[[approvals]]`, docs/approvals.md).
    pub approvals: Vec<ApprovalRule>,
    /// Remote A2A agents whose skills the host offers (`[[a2a.agents]]`,
    /// docs/a2a.md).
    pub a2a: A2aConfig,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            root: PathBuf::from("."),
            auth_token: String::new(),
            max_parallel: 4,
            max_message_bytes: a2e_proto::decode::DEFAULT_MAX_BYTES,
            max_queued_event_bytes: DEFAULT_MAX_QUEUED_EVENT_BYTES,
            builtins: DEFAULT_BUILTINS.iter().map(|s| (*s).to_owned()).collect(),
            skill_dirs: vec![PathBuf::from("skills")],
            commands: CommandConfig::default(),
            http: HttpConfig::default(),
            files: FileConfig::default(),
            audit: AuditConfig::default(),
            timeouts: TimeoutConfig::default(),
            data_dir: PathBuf::from(".a2e"),
            llm: LlmConfig::default(),
            memory: MemoryConfig::default(),
            mcp: McpConfig::default(),
            ontheia: OntheiaConfig::default(),
            plugins: Vec::new(),
            telemetry: a2e_telemetry::TelemetryConfig::default(),
            journal: JournalConfig::default(),
            cluster: ClusterConfig::default(),
            acmp: crate::acmp_config::AcmpConfig::default(),
            approvals: Vec::new(),
            a2a: A2aConfig::default(),
        }
    }
}

impl HostConfig {
    /// The run journal's file: `[journal] path` (relative to the root), or
    /// `runs.db` in the data directory (`.a2e/runs.db` under the root).
    pub fn journal_path(&self) -> PathBuf {
        if self.journal.path.as_os_str().is_empty() {
            self.data_path().join("runs.db")
        } else if self.journal.path.is_absolute() {
            self.journal.path.clone()
        } else {
            self.root.join(&self.journal.path)
        }
    }

    /// The data directory, resolved against the root.
    pub fn data_path(&self) -> PathBuf {
        if self.data_dir.is_absolute() {
            self.data_dir.clone()
        } else {
            self.root.join(&self.data_dir)
        }
    }
}

/// Model providers (see `docs/llm-skills.md`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// The providers skills may use, and which of them agents may pick
    /// ([`ProviderEntry`]: read only by a host built with `llm`).
    pub providers: Vec<ProviderEntry>,
}

impl LlmConfig {
    /// The providers' configurations, in the order written.
    #[cfg(feature = "llm")]
    pub fn provider_configs(&self) -> Vec<a2e_llm::ProviderConfig> {
        self.providers.iter().map(|p| p.config().clone()).collect()
    }
}

/// Long-term memory (see `a2e-memory`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Offer the `memory_*` tools.
    pub enabled: bool,
    /// The SQLite file (default `memory.db` in the data directory).
    pub path: Option<PathBuf>,
    /// Namespaces a session may touch: patterns with `${agent_id}` and
    /// `${user_id}`, `*` for one segment, `**` for the rest.
    pub namespaces: Vec<String>,
    /// Largest memory, in bytes.
    pub max_content_bytes: usize,
    /// An OpenAI-compatible embeddings endpoint for hybrid search.
    pub embeddings: Option<EmbeddingsConfig>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            path: None,
            namespaces: vec![
                "agent.${agent_id}.**".into(),
                "vector.user.${user_id}.**".into(),
            ],
            max_content_bytes: 16 * 1024,
            embeddings: None,
        }
    }
}

/// An OpenAI-compatible `/embeddings` endpoint.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsConfig {
    /// Base URL, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// The embedding model.
    pub model: String,
    /// The API key (prefer `api_key_env`).
    #[serde(default)]
    pub api_key: Option<String>,
    /// The environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
}

impl std::fmt::Debug for EmbeddingsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingsConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("api_key_env", &self.api_key_env)
            .finish()
    }
}

/// Ontheia documents (see `docs/ontheia.md`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OntheiaConfig {
    /// The agents `agent` steps may delegate to.
    pub agents: Vec<OntheiaAgent>,
    /// Global variables of runs started by the host itself (`a2e run`):
    /// `user_id`, `user_name`, `user_email`, `agent_id`, `task_id`, `chat_id`,
    /// and any other name (`${name}` in templates). Flags override them.
    pub globals: std::collections::BTreeMap<String, String>,
}

/// An agent an Ontheia `agent` step delegates to: its task chains, its named
/// chains, its default chain, else a plain model call with its persona.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OntheiaAgent {
    /// The agent's id (`agent_id` of the step).
    pub id: String,
    /// Its default chain (an Ontheia document file, relative to the root).
    pub chain: Option<PathBuf>,
    /// Chains by `chain_id`.
    pub chains: std::collections::BTreeMap<String, PathBuf>,
    /// Chains by `task_id`.
    pub tasks: std::collections::BTreeMap<String, PathBuf>,
    /// The persona for a plain model call.
    pub system_prompt: Option<String>,
    /// The model for a plain model call.
    pub model: Option<String>,
}

/// Commands: what may run and within which limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommandConfig {
    /// Allowed `argv[0]` values (exact names or paths). Empty: no command may run.
    pub allow: Vec<String>,
    /// Default run_command timeout in seconds.
    pub timeout_secs: u64,
    /// Output cap per stream in bytes.
    pub output_max_bytes: usize,
    /// Most live processes per session (proc capability).
    pub proc_limit: usize,
    /// The host's environment variables a command inherits (default: PATH,
    /// HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TZ, TMPDIR, TERM); nothing
    /// else of the host's environment reaches a command.
    pub inherit_env: Vec<String>,
}

impl Default for CommandConfig {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            timeout_secs: 30,
            output_max_bytes: 1024 * 1024,
            proc_limit: 8,
            inherit_env: crate::proc::DEFAULT_INHERITED_ENV
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        }
    }
}

/// Outbound HTTP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Allowed host names or IP addresses. Empty: no request may be made.
    pub allow_hosts: Vec<String>,
    /// Request timeout in seconds.
    pub timeout_secs: u64,
    /// Response body cap in bytes.
    pub body_max_bytes: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            allow_hosts: Vec::new(),
            timeout_secs: 30,
            body_max_bytes: 1024 * 1024,
        }
    }
}

/// File tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FileConfig {
    /// Most bytes read_file returns at once.
    pub read_max_bytes: usize,
    /// Most bytes write_file accepts.
    pub write_max_bytes: usize,
    /// Most entries list_dir / glob / grep return.
    pub max_results: usize,
}

impl Default for FileConfig {
    fn default() -> Self {
        Self {
            read_max_bytes: 1024 * 1024,
            write_max_bytes: 16 * 1024 * 1024,
            max_results: 1000,
        }
    }
}

/// Audit log.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// File audit lines are appended to (empty: the log on stderr).
    pub path: PathBuf,
    /// Record argument values (off: only their names).
    pub include_arguments: bool,
}

/// `[journal]`: durable chain runs (docs/durability.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JournalConfig {
    /// Whether `a2e serve` journals chain runs and resumes the unfinished
    /// ones when it starts (default true).
    pub enabled: bool,
    /// The journal file (empty: `runs.db` in the data directory); relative
    /// paths are under the root.
    pub path: PathBuf,
    /// `normal` (an acknowledged write survives the host being killed) or
    /// `full` (it also survives a power cut; every commit is synced).
    pub sync: String,
    /// Finished runs older than this many days are pruned (0: no age limit).
    pub keep_days: u64,
    /// At most this many finished runs are kept (0: no count limit).
    pub keep_runs: usize,
}

impl Default for JournalConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            path: PathBuf::new(),
            sync: "normal".into(),
            keep_days: 7,
            keep_runs: 1000,
        }
    }
}

/// Default per-call timeouts (seconds) when a request does not set one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimeoutConfig {
    /// Tool calls.
    pub tool_secs: u64,
    /// Skill calls.
    pub skill_secs: u64,
    /// Chains.
    pub chain_secs: u64,
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        Self {
            tool_secs: 30,
            skill_secs: 60,
            chain_secs: 300,
        }
    }
}

/// A configuration file that could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Could not read it.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not valid TOML or wrong keys.
    #[error("invalid config {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A value out of range.
    #[error("invalid config: {0}")]
    Invalid(String),
}

impl HostConfig {
    /// Reads a TOML file; relative `root` and `skill_dirs` are taken from the file's folder.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut config = Self::from_toml(&text).map_err(|e| match e {
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                path: path.to_owned(),
                message,
            },
            other => other,
        })?;
        if config.root.is_relative()
            && let Some(dir) = path.parent()
        {
            config.root = dir.join(&config.root);
        }
        Ok(config)
    }

    /// Parses TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: PathBuf::new(),
            message: e.to_string(),
        })?;
        config.check()?;
        Ok(config)
    }

    /// Checks values that types alone cannot.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.max_parallel == 0 {
            return Err(ConfigError::Invalid(
                "max_parallel must be at least 1".into(),
            ));
        }
        if let Some(bad) = self
            .builtins
            .iter()
            .find(|b| !ALL_BUILTINS.contains(&b.as_str()))
        {
            return Err(ConfigError::Invalid(format!(
                "unknown built-in tool `{bad}` (known: {})",
                ALL_BUILTINS.join(", ")
            )));
        }
        if !matches!(self.journal.sync.as_str(), "normal" | "full") {
            return Err(ConfigError::Invalid(format!(
                "[journal] sync: `{}` is neither `normal` nor `full`",
                self.journal.sync
            )));
        }
        self.cluster.check().map_err(ConfigError::Invalid)?;
        for (i, rule) in self.approvals.iter().enumerate() {
            rule.check()
                .map_err(|e| ConfigError::Invalid(format!("[[approvals]] #{}: {e}", i + 1)))?;
        }
        for agent in &self.a2a.agents {
            agent
                .check()
                .map_err(|e| ConfigError::Invalid(format!("[[a2a.agents]] {e}")))?;
        }
        Ok(())
    }

    /// Whether a built-in is on.
    pub fn builtin_enabled(&self, name: &str) -> bool {
        self.builtins.iter().any(|b| b == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_allow_no_commands_and_no_network() {
        let c = HostConfig::default();
        assert!(c.commands.allow.is_empty());
        assert!(c.http.allow_hosts.is_empty());
    }

    #[test]
    fn toml_overrides_and_rejects_typos() {
        let c =
            HostConfig::from_toml("max_parallel = 2\n[commands]\nallow = [\"echo\"]\n").unwrap();
        assert_eq!(c.max_parallel, 2);
        assert_eq!(c.commands.allow, vec!["echo"]);
        let err = HostConfig::from_toml("max_paralel = 2").unwrap_err();
        assert!(err.to_string().contains("max_paralel"), "{err}");
        let err = HostConfig::from_toml("builtins = [\"rm_rf\"]").unwrap_err();
        assert!(err.to_string().contains("rm_rf"), "{err}");
    }
}
