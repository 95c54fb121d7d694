//! The entries of the sections a feature serves: `[[llm.providers]]`
//! (`llm`) and `[[mcp.servers]]` (`mcp`).
//!
//! Each entry is one type whatever the host's features, so that enabling a
//! feature adds to the public API and changes nothing of it. A host built
//! with the feature reads an entry into the feature's own configuration
//! type when the file is read (a typo is refused then, naming its line), and
//! [`ProviderEntry::config`] / [`McpServerEntry::config`] give it. A host
//! built without it keeps only the entry's `name`: the rest is not read, and
//! the host refuses the section, by name, when it is built.

use serde::{Deserialize, Deserializer};

/// An entry whose feature this host is built without: its `name`; the other
/// keys are not read.
#[derive(Debug, Clone, PartialEq)]
#[cfg(any(not(feature = "llm"), not(feature = "mcp")))]
struct Unread {
    name: String,
}

#[cfg(any(not(feature = "llm"), not(feature = "mcp")))]
impl<'de> Deserialize<'de> for Unread {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(deserializer)?;
        let name = table.get("name").and_then(toml::Value::as_str);
        Ok(Self {
            name: name.unwrap_or_default().to_owned(),
        })
    }
}

/// What a [`ProviderEntry`] holds.
#[cfg(feature = "llm")]
type Provider = a2e_llm::ProviderConfig;
#[cfg(not(feature = "llm"))]
type Provider = Unread;

/// One `[[llm.providers]]` entry: a model provider of LLM skills, Ontheia
/// `llm` steps and MCP sampling. Its `Debug` form leaves out credentials.
#[derive(Clone)]
pub struct ProviderEntry {
    inner: Provider,
}

impl ProviderEntry {
    /// The provider's name (`LLMConfig.provider_name`).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The provider's configuration.
    #[cfg(feature = "llm")]
    pub fn config(&self) -> &a2e_llm::ProviderConfig {
        &self.inner
    }

    /// The provider's configuration, to change.
    #[cfg(feature = "llm")]
    pub fn config_mut(&mut self) -> &mut a2e_llm::ProviderConfig {
        &mut self.inner
    }
}

#[cfg(feature = "llm")]
impl From<a2e_llm::ProviderConfig> for ProviderEntry {
    fn from(inner: a2e_llm::ProviderConfig) -> Self {
        Self { inner }
    }
}

impl<'de> Deserialize<'de> for ProviderEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Provider::deserialize(deserializer).map(|inner| Self { inner })
    }
}

/// The provider's configuration redacts its credentials.
impl std::fmt::Debug for ProviderEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

/// What an [`McpServerEntry`] holds.
#[cfg(feature = "mcp")]
type McpServer = a2e_mcp::McpServerConfig;
#[cfg(not(feature = "mcp"))]
type McpServer = Unread;

/// One `[[mcp.servers]]` entry: an MCP server mounted as a toolkit.
#[derive(Clone, PartialEq)]
pub struct McpServerEntry {
    inner: McpServer,
}

impl McpServerEntry {
    /// The server's name: the toolkit name of its tools.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The server's configuration.
    #[cfg(feature = "mcp")]
    pub fn config(&self) -> &a2e_mcp::McpServerConfig {
        &self.inner
    }

    /// The server's configuration, to change.
    #[cfg(feature = "mcp")]
    pub fn config_mut(&mut self) -> &mut a2e_mcp::McpServerConfig {
        &mut self.inner
    }
}

#[cfg(feature = "mcp")]
impl From<a2e_mcp::McpServerConfig> for McpServerEntry {
    fn from(inner: a2e_mcp::McpServerConfig) -> Self {
        Self { inner }
    }
}

impl<'de> Deserialize<'de> for McpServerEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        McpServer::deserialize(deserializer).map(|inner| Self { inner })
    }
}

impl std::fmt::Debug for McpServerEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::HostConfig;

    const SECTIONS: &str = r#"
[[llm.providers]]
name = "local"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"
api_key = "sk-secret"

[[mcp.servers]]
name = "clock"
command = "mcp-server-time"
"#;

    #[test]
    fn entries_are_read_and_named_whatever_the_features() {
        let config = HostConfig::from_toml(SECTIONS).unwrap();
        assert_eq!(config.llm.providers[0].name(), "local");
        assert_eq!(config.mcp.servers[0].name(), "clock");
        // A provider's key is not in its Debug form, with `llm` or without.
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("local"), "{shown}");
    }

    #[cfg(feature = "llm")]
    #[test]
    fn with_llm_a_provider_is_typed_and_a_typo_is_refused_at_load() {
        let config = HostConfig::from_toml(SECTIONS).unwrap();
        let provider = config.llm.providers[0].config();
        assert_eq!(
            (provider.base_url.as_str(), provider.kind),
            ("http://127.0.0.1:9/v1", a2e_llm::ProviderKind::OpenAi)
        );
        let typo = SECTIONS.replace("base_url", "base_ulr");
        let err = HostConfig::from_toml(&typo).unwrap_err();
        assert!(err.to_string().contains("base_ulr"), "{err}");
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn with_mcp_a_server_is_typed_and_a_typo_is_refused_at_load() {
        let mut config = HostConfig::from_toml(SECTIONS).unwrap();
        let server = config.mcp.servers[0].config();
        assert_eq!(
            server.command,
            Some(a2e_mcp::config::CommandLine::Program(
                "mcp-server-time".into()
            ))
        );
        config.mcp.servers[0].config_mut().eager = true;
        assert!(config.mcp.server_configs()[0].eager);
        let typo = SECTIONS.replace("command", "comand");
        let err = HostConfig::from_toml(&typo).unwrap_err();
        assert!(err.to_string().contains("comand"), "{err}");
    }

    #[cfg(not(feature = "mcp"))]
    #[test]
    fn without_mcp_a_server_is_kept_unread_for_the_build_to_refuse() {
        let typo = SECTIONS.replace("command", "comand");
        let config = HostConfig::from_toml(&typo).unwrap();
        assert_eq!(config.mcp.servers[0].name(), "clock");
    }
}
