//! `[a2a]`: the host as an A2A agent (the skill a message naming none is
//! for) and the remote A2A agents whose skills the host offers as its own
//! (`[[a2a.agents]]`, docs/a2a.md).

use serde::Deserialize;

/// How long a call of a remote agent's skill may take, by default.
pub const DEFAULT_AGENT_TIMEOUT_SECS: u64 = 300;

/// Remote A2A agents.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct A2aConfig {
    /// The skill a message is for when it names none in `metadata.skill`
    /// (`a2e serve --a2a`; without it, only an agent with one skill takes
    /// such a message).
    pub default_skill: Option<String>,
    /// Each agent's skills become skills of the host, `NAME__SKILL`.
    pub agents: Vec<RemoteAgentEntry>,
}

/// One remote agent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteAgentEntry {
    /// The agent's name on this host: the first part of its skills' names
    /// (letters, digits, `_` and `-`; no `__`).
    pub name: String,
    /// The agent's base URL (its card at `/.well-known/agent-card.json`
    /// under it), or its card's URL (ending in `.json`).
    pub url: String,
    /// The environment variable holding the bearer token the agent wants.
    #[serde(default)]
    pub token_env: Option<String>,
    /// How long a call of one of its skills may take (seconds).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_timeout() -> u64 {
    DEFAULT_AGENT_TIMEOUT_SECS
}

impl RemoteAgentEntry {
    /// The URL of the agent's card.
    pub fn card_url(&self) -> String {
        if self.url.ends_with(".json") {
            self.url.clone()
        } else {
            format!(
                "{}/.well-known/agent-card.json",
                self.url.trim_end_matches('/')
            )
        }
    }

    /// What is wrong with the entry, named.
    pub fn check(&self) -> Result<(), RemoteAgentError> {
        let name = &self.name;
        if name.is_empty()
            || name.contains("__")
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(RemoteAgentError::Name(name.clone()));
        }
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(RemoteAgentError::Url {
                agent: name.clone(),
                url: self.url.clone(),
            });
        }
        if self.timeout_secs == 0 {
            return Err(RemoteAgentError::Timeout(name.clone()));
        }
        Ok(())
    }
}

/// What is wrong with a `[[a2a.agents]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteAgentError {
    /// The name is not one a skill's name can start with.
    #[error("name `{0}`: letters, digits, `_` and `-` only, not empty, no `__`")]
    Name(String),
    /// The URL is no http(s) URL.
    #[error("{agent}: url `{url}` is no http(s) URL")]
    Url {
        /// The agent.
        agent: String,
        /// Its URL.
        url: String,
    },
    /// A timeout of zero.
    #[error("{0}: timeout_secs must be at least 1")]
    Timeout(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, url: &str) -> RemoteAgentEntry {
        RemoteAgentEntry {
            name: name.into(),
            url: url.into(),
            token_env: None,
            timeout_secs: DEFAULT_AGENT_TIMEOUT_SECS,
        }
    }

    #[test]
    fn names_and_urls_are_checked_and_the_card_is_found() {
        assert!(entry("py-agent_1", "http://127.0.0.1:9").check().is_ok());
        assert!(
            entry("a__b", "http://x")
                .check()
                .unwrap_err()
                .to_string()
                .contains("a__b")
        );
        assert!(entry("a.b", "http://x").check().is_err());
        assert!(
            entry("a", "ftp://x")
                .check()
                .unwrap_err()
                .to_string()
                .contains("ftp://x")
        );
        assert_eq!(
            entry("a", "http://x/").card_url(),
            "http://x/.well-known/agent-card.json"
        );
        assert_eq!(
            entry("a", "http://x/card.json").card_url(),
            "http://x/card.json"
        );
    }
}
