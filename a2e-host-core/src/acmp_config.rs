//! `[acmp]` in the host's configuration: the host as an ACMP provider
//! (`[acmp.provider]`, `[[acmp.provider.capabilities]]`) and the remote
//! providers it buys from (`[[acmp.providers]]`).
//!
//! ```toml
//! [acmp]
//! budget_cu = 1.0            # a DAG's budget (none: only each task's max_price_cu)
//! local_fallback = false     # the host's own tools and skills as the last resort
//!
//! [acmp.provider]            # `a2e serve --acmp-ws ADDR`, `--mcp-stdio`, `--mcp-http`
//! provider_id = "agent:a2e:local"
//! token_env = "A2E_ACMP_TOKEN" # the bearer token buyers present (or `token`)
//! heartbeat_interval_ms = 5000
//! output_streaming = true
//! input_streaming = true
//!
//! [[acmp.provider.capabilities]]
//! capability = "text-split"
//! tool = "split_text"        # or skill = "…", chain = "file.json", ontheia = "file.json"
//! input_types = ["text"]
//! output_type = "json"
//! price_cu = 0.001
//! pricing = "per_call"       # or "per_input_token"
//! tier = "B"
//! latency_ms = 200
//!
//! [[acmp.providers]]         # a remote provider
//! name = "left"
//! url = "ws://127.0.0.1:7701/" # JSON-RPC over WebSocket
//! token_env = "LEFT_TOKEN"
//! # or: url = "http://127.0.0.1:7702/mcp" (MCP Streamable HTTP, `a2e serve --mcp-http`)
//! # or: command = ["a2e", "--config", "p.toml", "serve", "--mcp-stdio"]
//! [[acmp.providers.capabilities]] # until its advertisement says otherwise
//! capability = "text_stats"
//! price_cu = 0.001
//! ```

use std::path::PathBuf;

use serde::Deserialize;

/// `[acmp]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AcmpConfig {
    /// The host as a provider; `None`: it serves no ACMP.
    pub provider: Option<AcmpProviderConfig>,
    /// Remote providers a DAG's tasks go to.
    pub providers: Vec<RemoteProviderConfig>,
    /// A DAG's budget in CU; `None`: no budget beyond each task's `max_price_cu`.
    pub budget_cu: Option<f64>,
    /// Whether the host's own tools and skills take the tasks no remote provider takes.
    /// Without remote providers the host is the provider anyway.
    pub local_fallback: bool,
}

/// `[acmp.provider]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AcmpProviderConfig {
    /// `provider_id` of results, `agent:<name>:<region>`.
    pub provider_id: Option<String>,
    /// The bearer token buyers present (prefer `token_env`).
    pub token: Option<String>,
    /// The environment variable holding the bearer token.
    pub token_env: Option<String>,
    /// Interval of heartbeats while a task runs; 0 for none.
    pub heartbeat_interval_ms: u64,
    /// Whether outputs can be streamed.
    pub output_streaming: bool,
    /// Whether inputs can be streamed.
    pub input_streaming: bool,
    /// Largest input or input chunk, in bytes of JSON.
    pub max_payload_bytes: usize,
    /// The capabilities offered.
    pub capabilities: Vec<CapabilityConfig>,
}

impl Default for AcmpProviderConfig {
    fn default() -> Self {
        Self {
            provider_id: None,
            token: None,
            token_env: None,
            heartbeat_interval_ms: 5000,
            output_streaming: true,
            input_streaming: true,
            max_payload_bytes: 4 << 20,
            capabilities: Vec::new(),
        }
    }
}

/// `[[acmp.provider.capabilities]]`: a capability tag and what serves it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CapabilityConfig {
    /// The capability tag.
    pub capability: String,
    /// A tool of the host.
    pub tool: Option<String>,
    /// A skill of the host.
    pub skill: Option<String>,
    /// A chain file (relative to the root); the input is its `initial_input`.
    pub chain: Option<PathBuf>,
    /// An Ontheia document (relative to the root); the input is its user input.
    pub ontheia: Option<PathBuf>,
    /// Input types accepted.
    pub input_types: Vec<String>,
    /// Output type produced.
    pub output_type: Option<String>,
    /// Price in CU.
    pub price_cu: f64,
    /// `per_call` (default) or `per_input_token`.
    pub pricing: Option<String>,
    /// `S`, `A` or `B`.
    pub tier: Option<String>,
    /// Latency aimed for, in milliseconds.
    pub latency_ms: Option<u64>,
}

/// `[[acmp.providers]]`: a remote provider.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteProviderConfig {
    /// Its name, in logs and errors.
    pub name: String,
    /// `ws://…` or `wss://…`: JSON-RPC over WebSocket; `http://…` or
    /// `https://…`: an MCP Streamable HTTP endpoint (`a2e serve --mcp-http`'s `/mcp`).
    pub url: Option<String>,
    /// A provider process speaking MCP on stdin/stdout (program and
    /// arguments, e.g. `["a2e", "serve", "--mcp-stdio"]`); the token goes to it
    /// in `A2E_ACMP_BEARER`.
    pub command: Vec<String>,
    /// The bearer token (prefer `token_env`).
    pub token: Option<String>,
    /// The environment variable holding the bearer token.
    pub token_env: Option<String>,
    /// Its offers, until its advertisement says otherwise.
    pub capabilities: Vec<CapabilityConfig>,
    /// Its heartbeat interval, until its advertisement says otherwise.
    pub heartbeat_interval_ms: Option<u64>,
}

impl AcmpConfig {
    /// Fails on the first `token_env` that names a variable the
    /// environment does not set (or sets empty) where no `token` is given:
    /// said at start, naming the entry and the variable, instead of a
    /// provider that later refuses every call.
    pub fn check_token_env(&self) -> Result<(), AcmpConfigError> {
        let unset = |token: &Option<String>, token_env: &Option<String>| {
            let var = token_env.as_deref().filter(|v| !v.is_empty())?;
            (resolve_token(token.as_deref(), Some(var)).is_none()).then(|| var.to_owned())
        };
        if let Some(provider) = &self.provider
            && let Some(var) = unset(&provider.token, &provider.token_env)
        {
            return Err(AcmpConfigError(format!(
                "acmp.provider: token_env `{var}` is not set in the environment"
            )));
        }
        for remote in &self.providers {
            if let Some(var) = unset(&remote.token, &remote.token_env) {
                let name = if remote.name.is_empty() {
                    remote.url.clone().unwrap_or_default()
                } else {
                    remote.name.clone()
                };
                return Err(AcmpConfigError(format!(
                    "acmp.providers \"{name}\": token_env `{var}` is not set in the environment"
                )));
            }
        }
        Ok(())
    }
}

/// A token from `token` or the variable `token_env`.
pub fn resolve_token(token: Option<&str>, token_env: Option<&str>) -> Option<String> {
    token
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .or_else(|| token_env.and_then(|v| std::env::var(v).ok()))
        .filter(|t| !t.is_empty())
}

/// An `[acmp]` section the host cannot act on: which entry and what is wrong
/// with it (a capability without a target, a provider without a bearer token,
/// a remote provider without an address, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AcmpConfigError(pub String);

#[cfg(test)]
mod token_env_tests {
    use super::*;

    #[test]
    fn an_unset_token_env_is_named_with_its_entry() {
        let var = "A2E_TEST_TOKEN_ENV_NEVER_SET";
        let config = AcmpConfig {
            providers: vec![RemoteProviderConfig {
                name: "left".into(),
                token_env: Some(var.into()),
                ..RemoteProviderConfig::default()
            }],
            ..AcmpConfig::default()
        };
        let err = config.check_token_env().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("acmp.providers \"left\": token_env `{var}` is not set in the environment")
        );
        // A token given beside it wins; no token_env at all is not this error.
        let mut given = config.clone();
        given.providers[0].token = Some("secret".into());
        assert!(given.check_token_env().is_ok());
        assert!(AcmpConfig::default().check_token_env().is_ok());
    }
}
