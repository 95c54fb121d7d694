//! The model providers of the host: the configured `[[llm.providers]]`, or one
//! named `env` from environment variables when the configuration names none.

use a2e_llm::{ProviderConfig, ProviderKind, Providers};

use crate::config::HostConfig;
use crate::error::ConfigError;

/// The provider name that makes an LLM skill run on the connected MCP
/// client's model through its `sampling/createMessage` (`llm_config:
/// mcp-client`).
pub const CLIENT_PROVIDER: &str = "mcp-client";

/// Environment variables that configure a provider named `env` when the configuration
/// names none: the API root (OpenAI-compatible) and the model, and optionally its key.
pub const ENV_BASE_URL: &str = "A2E_LLM_BASE_URL";
/// See [`ENV_BASE_URL`]: the model.
pub const ENV_MODEL: &str = "A2E_LLM_MODEL";
/// See [`ENV_BASE_URL`]: the API key (optional).
pub const ENV_API_KEY: &str = "A2E_LLM_API_KEY";

/// The configured providers, plus a provider named `env` from [`ENV_BASE_URL`] /
/// [`ENV_MODEL`] / [`ENV_API_KEY`] when the configuration names none and both are set.
pub fn providers(config: &HostConfig) -> Result<Providers, ConfigError> {
    providers_with_env(config, &|var| std::env::var(var).ok())
}

fn providers_with_env(
    config: &HostConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Providers, ConfigError> {
    let mut configs = config.llm.provider_configs();
    let set = |var: &str| env(var).filter(|v| !v.trim().is_empty());
    if configs.is_empty()
        && let (Some(_), Some(_)) = (set(ENV_BASE_URL), set(ENV_MODEL))
    {
        let mut c = ProviderConfig::new("env", ProviderKind::OpenAi, "", "");
        c.base_url_env = Some(ENV_BASE_URL.into());
        c.model_env = Some(ENV_MODEL.into());
        c.api_key_env = set(ENV_API_KEY).map(|_| ENV_API_KEY.to_owned());
        configs.push(c);
    }
    Ok(Providers::with_env(configs, env)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_env_provider_only_when_none_is_configured() {
        let config = HostConfig::default();
        let env = |var: &str| match var {
            ENV_BASE_URL => Some("http://127.0.0.1:9/v1".to_owned()),
            ENV_MODEL => Some("m".to_owned()),
            _ => None,
        };
        let p = providers_with_env(&config, &env).unwrap();
        assert_eq!(p.names().collect::<Vec<_>>(), vec!["env"]);
        assert_eq!(p.config("env").unwrap().base_url, "http://127.0.0.1:9/v1");
        let p = providers_with_env(&config, &|_| None).unwrap();
        assert_eq!(p.names().count(), 0);
    }
}
