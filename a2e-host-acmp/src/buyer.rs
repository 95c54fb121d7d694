//! The host as an ACMP buyer: `[[acmp.providers]]` become remote providers, and a
//! DAG's tasks are routed over them (the host's own tools and skills last, when
//! `local_fallback` says so).

use std::sync::Arc;

use acmp_dag::ProviderFeatures;
use acmp_dag::remote::{Budget, PoolRouter, RemoteProvider};

use super::HostRouter;
use super::http::HttpConnector;
use super::offered::offer;
use super::stdio::StdioConnector;
use super::ws::WsConnector;
use crate::acmp_config::{AcmpConfig, AcmpConfigError, RemoteProviderConfig, resolve_token};
use crate::host::Host;

/// One remote provider from its configuration.
pub fn remote_provider(config: &RemoteProviderConfig) -> Result<RemoteProvider, AcmpConfigError> {
    build_remote(config).map_err(AcmpConfigError)
}

fn build_remote(config: &RemoteProviderConfig) -> Result<RemoteProvider, String> {
    let name = if config.name.is_empty() {
        config.url.clone().unwrap_or_default()
    } else {
        config.name.clone()
    };
    let offers = config
        .capabilities
        .iter()
        .map(offer)
        .collect::<Result<Vec<_>, _>>()?;
    let features = ProviderFeatures {
        output_streaming: false,
        input_streaming: false,
        heartbeat_interval_ms: config.heartbeat_interval_ms,
    };
    let token = resolve_token(config.token.as_deref(), config.token_env.as_deref());
    if !config.command.is_empty() {
        if config.url.is_some() {
            return Err(format!(
                "acmp.providers \"{name}\": name url or command, not both"
            ));
        }
        return Ok(RemoteProvider::new(
            name,
            StdioConnector::new(config.command.clone(), token),
            offers,
            features,
        ));
    }
    match config.url.as_deref() {
        Some(url) if url.starts_with("ws://") || url.starts_with("wss://") => Ok(
            RemoteProvider::new(name, WsConnector::new(url, token), offers, features),
        ),
        Some(url) if url.starts_with("http://") || url.starts_with("https://") => Ok(
            RemoteProvider::new(name, HttpConnector::new(url, token), offers, features),
        ),
        Some(url) => Err(format!(
            "acmp.providers \"{name}\": url: \"{url}\" is not a ws://, wss://, http:// or https:// address"
        )),
        None => Err(format!(
            "acmp.providers \"{name}\": url or command: required"
        )),
    }
}

/// The router of a DAG run per `[acmp]`: `None` when no remote provider is
/// configured (the host is the provider).
pub(crate) fn pool_router(
    host: &Arc<Host>,
    config: &AcmpConfig,
) -> Result<Option<PoolRouter>, String> {
    if config.providers.is_empty() {
        return Ok(None);
    }
    let remotes = config
        .providers
        .iter()
        .map(|p| build_remote(p).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()?;
    let mut router = PoolRouter::new(remotes);
    if config.local_fallback {
        router = router.with_local(HostRouter::new(host.clone(), ""));
    }
    if let Some(limit) = config.budget_cu {
        router = router.with_budget(Arc::new(Budget::new(limit)));
    }
    Ok(Some(router))
}
