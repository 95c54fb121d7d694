//! `[mcp]`: the MCP servers to mount, and the key that seals the state of
//! MCP 2026-07-28 multi-round requests.

use serde::Deserialize;

use super::McpServerEntry;

/// MCP servers (see `a2e-mcp`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Each server becomes a toolkit named after it ([`McpServerEntry`]:
    /// read only by a host built with `mcp`).
    pub servers: Vec<McpServerEntry>,
    /// The environment variable holding the key that seals the `requestState`
    /// of MCP 2026-07-28 multi-round requests (at least 32 bytes). Hosts that
    /// share it (a cluster behind one address) accept each other's retries;
    /// without it each host process seals with a key of its own.
    pub request_state_key_env: Option<String>,
}

/// The least length of the `requestState` key, in bytes.
pub const REQUEST_STATE_KEY_MIN: usize = 32;

/// Why the `requestState` key of [`McpConfig::request_state_key_env`] cannot
/// be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestStateKeyError {
    /// The variable is not set.
    #[error("mcp.request_state_key_env: `{0}` is not set")]
    Unset(String),
    /// The key is shorter than [`REQUEST_STATE_KEY_MIN`] bytes.
    #[error(
        "mcp.request_state_key_env: `{var}` holds {len} bytes; the key needs at least {REQUEST_STATE_KEY_MIN}"
    )]
    TooShort {
        /// The variable.
        var: String,
        /// The key's length in bytes.
        len: usize,
    },
}

impl McpConfig {
    /// The `requestState` key from [`request_state_key_env`](Self::request_state_key_env):
    /// `None` without one; an error naming the variable when it is unset or
    /// shorter than [`REQUEST_STATE_KEY_MIN`] bytes.
    pub fn request_state_key(&self) -> Result<Option<Vec<u8>>, RequestStateKeyError> {
        let Some(var) = &self.request_state_key_env else {
            return Ok(None);
        };
        let key = std::env::var(var).map_err(|_| RequestStateKeyError::Unset(var.clone()))?;
        if key.len() < REQUEST_STATE_KEY_MIN {
            return Err(RequestStateKeyError::TooShort {
                var: var.clone(),
                len: key.len(),
            });
        }
        Ok(Some(key.into_bytes()))
    }

    /// The servers' configurations, in the order written.
    #[cfg(feature = "mcp")]
    pub fn server_configs(&self) -> Vec<a2e_mcp::McpServerConfig> {
        self.servers.iter().map(|s| s.config().clone()).collect()
    }
}
