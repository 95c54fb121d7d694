//! Provider configuration, the registry with its allow-list, and the mapping of an
//! [`LLMConfig`] onto a resolved model.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use a2e_proto::LLMConfig;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::anthropic::AnthropicProvider;
use crate::client::ModelClient;
use crate::error::{ConfigError, LlmError};
use crate::http::{RetryPolicy, Transport, build_client};
use crate::openai::OpenAiProvider;
use crate::secret::{REDACTED, Secret};
use crate::types::{ChatRequest, Message, ToolSpec};

/// Which wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions.
    #[serde(alias = "openai-compatible", alias = "openai_compatible")]
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// The per-request timeout when a configuration names none.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 120;

fn yes() -> bool {
    true
}

/// One configured model provider, as the host's configuration file names it
/// (TOML/JSON/YAML through serde). Credentials are [`Secret`]s: `Debug` redacts them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The name skills and agents pick it by (`LLMConfig.provider_name`).
    pub name: String,
    /// The wire API.
    pub kind: ProviderKind,
    /// API root, e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`,
    /// `https://api.anthropic.com/v1`.
    #[serde(default)]
    pub base_url: String,
    /// The name of an environment variable holding the API root (read at start; when it
    /// is set and not empty it takes the place of `base_url`).
    #[serde(default)]
    pub base_url_env: Option<String>,
    /// The default model.
    #[serde(default)]
    pub model: String,
    /// The name of an environment variable holding the default model (read at start; when
    /// it is set and not empty it takes the place of `model`).
    #[serde(default)]
    pub model_env: Option<String>,
    /// More models agents may pick in `llm_override` (`"*"`: any).
    #[serde(default)]
    pub models: Vec<String>,
    /// The API key itself.
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// The name of an environment variable holding the API key (read at start).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// More request headers (values are treated as secrets).
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
    /// Per-request timeout in seconds (0: none). Default 120.
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
    /// Retries on 429/5xx/transport errors.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// `anthropic-version` header (Anthropic only).
    #[serde(default)]
    pub anthropic_version: Option<String>,
    /// Whether agents may pick this provider in `llm_override` (the allow-list).
    #[serde(default)]
    pub agent_selectable: bool,
    /// Whether an `llm_override` may bring its own `provider_credentials.api_key`.
    #[serde(default)]
    pub accept_agent_credentials: bool,
    /// Ask OpenAI-compatible servers for usage in streams (`stream_options`).
    #[serde(default = "yes")]
    pub stream_usage: bool,
    /// Default sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Default most tokens per answer.
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

impl ProviderConfig {
    /// A configuration with defaults: no key, not agent-selectable, default retries.
    pub fn new(name: &str, kind: ProviderKind, base_url: &str, model: &str) -> Self {
        Self {
            name: name.into(),
            kind,
            base_url: base_url.into(),
            base_url_env: None,
            model: model.into(),
            model_env: None,
            models: Vec::new(),
            api_key: None,
            api_key_env: None,
            headers: BTreeMap::new(),
            timeout_seconds: None,
            retry: RetryPolicy::default(),
            anthropic_version: None,
            agent_selectable: false,
            accept_agent_credentials: false,
            stream_usage: true,
            temperature: None,
            max_tokens: None,
        }
    }

    /// The per-request timeout.
    pub fn timeout(&self) -> Option<Duration> {
        match self.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS) {
            0 => None,
            s => Some(Duration::from_secs(s)),
        }
    }

    /// `base_url` and `model` with their `*_env` variables applied (via `env`); either
    /// still empty afterwards is an error naming the field.
    fn apply_env(mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let field = |f: &str| format!("providers.{}.{f}", self.name);
        for (var, value, name) in [
            (&self.base_url_env, &mut self.base_url, "base_url"),
            (&self.model_env, &mut self.model, "model"),
        ] {
            if let Some(var) = var {
                match env(var) {
                    Some(v) if !v.trim().is_empty() => *value = v.trim().to_owned(),
                    _ if value.is_empty() => {
                        return Err(ConfigError::invalid(
                            field(name),
                            format!("is not set and the variable {var} is unset or empty"),
                        ));
                    }
                    _ => {}
                }
            }
            if value.is_empty() {
                return Err(ConfigError::invalid(field(name), "is empty"));
            }
        }
        Ok(self)
    }

    /// The API key: `api_key`, else the variable `api_key_env` names (via `env`).
    fn key(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<Secret> {
        if let Some(key) = self.api_key.as_ref().filter(|k| !k.is_empty()) {
            return Some(key.clone());
        }
        let var = self.api_key_env.as_deref()?;
        match env(var) {
            Some(v) if !v.is_empty() => Some(Secret::new(v)),
            _ => {
                tracing::warn!(provider = %self.name, var, "api_key_env names an unset variable");
                None
            }
        }
    }

    /// Builds the client with `key` (and the shared HTTP client).
    fn build(
        &self,
        http: &reqwest::Client,
        key: Option<Secret>,
    ) -> Result<ModelClient, ConfigError> {
        let field = |f: &str| format!("providers.{}.{f}", self.name);
        let mut headers = HeaderMap::new();
        let mut secrets: Vec<Secret> = key.iter().cloned().collect();
        for (name, value) in &self.headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ConfigError::invalid(field("headers"), format!("bad name {name}")))?;
            let mut v = HeaderValue::from_str(value.expose()).map_err(|_| {
                ConfigError::invalid(field("headers"), format!("bad value for {name}"))
            })?;
            v.set_sensitive(true);
            headers.insert(header, v);
            secrets.push(value.clone());
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(ConfigError::invalid(
                field("base_url"),
                "must start with http:// or https://",
            ));
        }
        let transport = Transport {
            client: http.clone(),
            provider: Arc::from(self.name.as_str()),
            timeout: self.timeout(),
            retry: self.retry,
            secrets,
        };
        let bad = |e: LlmError| ConfigError::invalid(field("api_key"), e.to_string());
        Ok(match self.kind {
            ProviderKind::OpenAi => ModelClient::OpenAi(
                OpenAiProvider::new(
                    transport,
                    &self.base_url,
                    key.as_ref(),
                    headers,
                    self.stream_usage,
                )
                .map_err(bad)?,
            ),
            ProviderKind::Anthropic => ModelClient::Anthropic(
                AnthropicProvider::new(
                    transport,
                    &self.base_url,
                    key.as_ref(),
                    self.anthropic_version.as_deref(),
                    headers,
                )
                .map_err(bad)?,
            ),
        })
    }

    fn allows_model(&self, model: &str) -> bool {
        model == self.model || self.models.iter().any(|m| m == "*" || m == model)
    }
}

#[derive(Debug)]
struct Entry {
    config: ProviderConfig,
    client: ModelClient,
}

/// The host's model providers, built once, with the allow-list agents are held to.
#[derive(Debug)]
pub struct Providers {
    entries: Vec<Entry>,
    http: reqwest::Client,
}

/// Where an [`LLMConfig`] came from, which decides how far it is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// A skill definition's `llm_config` (the host's own files): any configured provider
    /// and any model of it.
    Skill,
    /// An agent's `llm_override`: only `agent_selectable` providers and their listed models.
    Override,
}

impl ConfigSource {
    fn field(self) -> &'static str {
        match self {
            ConfigSource::Skill => "llm_config",
            ConfigSource::Override => "llm_override",
        }
    }
}

/// A model picked and configured for one skill call: the client and the request settings.
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    /// The client (carrying the credentials; they never leave it).
    pub client: ModelClient,
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Most tokens per answer.
    pub max_tokens: Option<u32>,
    /// More body parameters (`top_p`, `stop`, `seed`, …).
    pub extra: Map<String, Value>,
}

impl ResolvedModel {
    /// A request for this model with `messages` and `tools`.
    pub fn request(&self, messages: Vec<Message>, tools: Vec<ToolSpec>) -> ChatRequest {
        ChatRequest {
            model: self.model.clone(),
            messages,
            tools,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            extra: self.extra.clone(),
            ..ChatRequest::default()
        }
    }
}

/// `provider_config` keys passed on to the request body as they are.
const PASS_THROUGH: &[&str] = &[
    "top_p",
    "top_k",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
];

impl Providers {
    /// Builds every provider, reading `api_key_env` variables from the process environment.
    pub fn new(configs: Vec<ProviderConfig>) -> Result<Self, ConfigError> {
        Self::with_env(configs, &|var| std::env::var(var).ok())
    }

    /// Builds every provider, reading `api_key_env` variables through `env`.
    pub fn with_env(
        configs: Vec<ProviderConfig>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let http = build_client().map_err(|e| ConfigError::invalid("providers", e.to_string()))?;
        let mut entries: Vec<Entry> = Vec::new();
        for config in configs {
            if config.name.is_empty() {
                return Err(ConfigError::invalid("providers.name", "is empty"));
            }
            if entries.iter().any(|e| e.config.name == config.name) {
                return Err(ConfigError::invalid(
                    format!("providers.{}", config.name),
                    "is configured twice",
                ));
            }
            let config = config.apply_env(env)?;
            let client = config.build(&http, config.key(env))?;
            entries.push(Entry { config, client });
        }
        Ok(Self { entries, http })
    }

    /// The configured provider names, in configuration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.config.name.as_str())
    }

    /// A provider's client by name.
    pub fn get(&self, name: &str) -> Option<&ModelClient> {
        self.entries
            .iter()
            .find(|e| e.config.name == name)
            .map(|e| &e.client)
    }

    /// A provider's configuration by name.
    pub fn config(&self, name: &str) -> Option<&ProviderConfig> {
        self.entries
            .iter()
            .find(|e| e.config.name == name)
            .map(|e| &e.config)
    }

    /// Picks the model for one skill call: the agent's `llm_override` when given (held to
    /// the allow-list), else the skill's `llm_config`, else the first configured provider.
    pub fn resolve(
        &self,
        skill: Option<&LLMConfig>,
        llm_override: Option<&LLMConfig>,
    ) -> Result<ResolvedModel, ConfigError> {
        if let Some(o) = llm_override {
            return self.resolve_one(o, ConfigSource::Override);
        }
        if let Some(s) = skill {
            return self.resolve_one(s, ConfigSource::Skill);
        }
        let entry = self
            .entries
            .first()
            .ok_or_else(|| ConfigError::invalid("llm_config", "no model provider is configured"))?;
        Ok(ResolvedModel {
            client: entry.client.clone(),
            provider: entry.config.name.clone(),
            model: entry.config.model.clone(),
            temperature: entry.config.temperature,
            max_tokens: entry.config.max_tokens,
            extra: Map::new(),
        })
    }

    /// Maps one [`LLMConfig`] from `source` onto a resolved model.
    pub fn resolve_one(
        &self,
        config: &LLMConfig,
        source: ConfigSource,
    ) -> Result<ResolvedModel, ConfigError> {
        let root = source.field();
        let provider_field = format!("{root}.provider_name");
        let entry = self
            .entries
            .iter()
            .find(|e| e.config.name == config.provider_name);
        let entry = match (entry, source) {
            (Some(e), ConfigSource::Override) if !e.config.agent_selectable => {
                return Err(ConfigError::unauthorized(
                    provider_field,
                    format!("provider {:?} is not open to agents", config.provider_name),
                ));
            }
            (Some(e), _) => e,
            (None, ConfigSource::Override) => {
                return Err(ConfigError::unauthorized(
                    provider_field,
                    format!(
                        "provider {:?} is not on the allow-list",
                        config.provider_name
                    ),
                ));
            }
            (None, ConfigSource::Skill) => {
                return Err(ConfigError::invalid(
                    provider_field,
                    format!("no provider named {:?} is configured", config.provider_name),
                ));
            }
        };
        let pc = &entry.config;
        let mut resolved = ResolvedModel {
            client: entry.client.clone(),
            provider: pc.name.clone(),
            model: pc.model.clone(),
            temperature: pc.temperature,
            max_tokens: pc.max_tokens,
            extra: Map::new(),
        };
        for (key, value) in config.provider_config.iter().flatten() {
            let field = format!("{root}.provider_config.{key}");
            match key.as_str() {
                "model" => {
                    let model = value.as_str().filter(|m| !m.is_empty()).ok_or_else(|| {
                        ConfigError::invalid(&field, "must be a non-empty string")
                    })?;
                    if source == ConfigSource::Override && !pc.allows_model(model) {
                        return Err(ConfigError::unauthorized(
                            field,
                            format!("model {model:?} is not on the allow-list of {}", pc.name),
                        ));
                    }
                    resolved.model = model.to_owned();
                }
                "temperature" => {
                    let t = value
                        .as_f64()
                        .filter(|t| (0.0..=2.0).contains(t))
                        .ok_or_else(|| ConfigError::invalid(&field, "must be a number in 0..=2"))?;
                    resolved.temperature = Some(t);
                }
                "max_tokens" => {
                    let m = value
                        .as_u64()
                        .filter(|m| (1..=10_000_000).contains(m))
                        .and_then(|m| u32::try_from(m).ok())
                        .ok_or_else(|| {
                            ConfigError::invalid(&field, "must be an integer in 1..=10000000")
                        })?;
                    resolved.max_tokens = Some(m);
                }
                k if PASS_THROUGH.contains(&k) => {
                    resolved.extra.insert(key.clone(), value.clone());
                }
                _ => {
                    return Err(ConfigError::invalid(
                        field,
                        format!(
                            "is not a known setting (known: model, temperature, max_tokens, {})",
                            PASS_THROUGH.join(", ")
                        ),
                    ));
                }
            }
        }
        if let Some(key) = credentials_key(config, root)? {
            if source == ConfigSource::Override && !pc.accept_agent_credentials {
                return Err(ConfigError::unauthorized(
                    format!("{root}.provider_credentials"),
                    format!("provider {} does not accept agent credentials", pc.name),
                ));
            }
            resolved.client = pc.build(&self.http, Some(key))?;
        }
        Ok(resolved)
    }
}

/// The `api_key` of `provider_credentials`, ignoring empty and redacted values.
fn credentials_key(config: &LLMConfig, root: &str) -> Result<Option<Secret>, ConfigError> {
    let mut key = None;
    for (name, value) in &config.provider_credentials {
        let field = format!("{root}.provider_credentials.{name}");
        let text = match value {
            Value::String(s) => s.as_str(),
            Value::Null => continue,
            _ => return Err(ConfigError::invalid(field, "must be a string")),
        };
        if text.is_empty() || text == REDACTED {
            continue;
        }
        match name.as_str() {
            "api_key" => key = Some(Secret::new(text)),
            _ => {
                return Err(ConfigError::invalid(
                    field,
                    "is not a known credential (known: api_key)",
                ));
            }
        }
    }
    Ok(key)
}
