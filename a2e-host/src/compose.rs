//! The composition root: the host a configuration describes, exactly as
//! `a2e serve` runs it, and the routes of its listeners.
//!
//! Everything below this module is a part; this is the one place that
//! knows them all and puts them together, so that the command line only
//! parses arguments and an embedder gets the same host in a few lines:
//!
//! ```no_run
//! use a2e_host::{Compose, HostBuilder, HostConfig};
//!
//! # async fn start() -> Result<(), Box<dyn std::error::Error>> {
//! let config = HostConfig::load(std::path::Path::new("a2e.toml"))?;
//! // Built-in tools, memory, skills, plugin processes, MCP mounts, the
//! // run journal, and the unfinished runs resumed.
//! let telemetry = a2e_telemetry::Telemetry::disabled();
//! let host = HostBuilder::from_config(config, telemetry).start().await?;
//! a2e_host::transport::stdio::serve_stdio(host).await;
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use axum::Router;

use crate::config::HostConfig;
use crate::transport::net::{NetState, Protocols};
use crate::{BuildError, Host, HostBuilder};

/// The composition root as [`HostBuilder`]'s methods: bring it into scope
/// (`use a2e_host::Compose`) and `HostBuilder::from_config(…).start()`
/// builds the host `a2e serve` runs.
pub trait Compose: Sized {
    /// The builder of the host `config` describes: the built-in tools (and
    /// memory, unless `[memory] enabled = false`), the skills of its skill
    /// directories, and its `[[plugins]]` processes. [`Compose::start`]
    /// adds what needs the runtime (MCP mounts, the run journal) and builds.
    /// Spans and metrics go to `telemetry`, given first so that every part
    /// (the memory store's size, the mounted servers' calls) reports to it.
    fn from_config(config: HostConfig, telemetry: a2e_telemetry::Telemetry) -> Self;

    /// Mounts the `[[mcp.servers]]` of the configuration as one tool plugin
    /// (the `eager` servers started and listed, the others start on first
    /// use); for a host that runs no journal ([`Compose::start`] mounts
    /// them itself). Without the `mcp` feature there is nothing to mount
    /// (the host refuses the section when it is built).
    fn mount(self) -> impl Future<Output = Result<Self, BuildError>> + Send;

    /// Mounts the `[[mcp.servers]]` (the `eager` ones started and listed),
    /// builds the host, opens its run journal (or joins its `[cluster]`) and
    /// resumes the runs the journal holds unfinished. The resumed runs live
    /// as long as the host.
    fn start(self) -> impl Future<Output = Result<Arc<Host>, BuildError>> + Send;
}

impl Compose for HostBuilder {
    fn from_config(config: HostConfig, telemetry: a2e_telemetry::Telemetry) -> Self {
        let builder = with_approvals(
            Host::builder(config)
                .with_telemetry(telemetry)
                .with_builtins(),
        );
        crate::plugins::with_plugin_processes(crate::skills::builder_with_skills(builder))
    }

    async fn mount(self) -> Result<Self, BuildError> {
        mount_agents(mount(self).await?).await
    }

    async fn start(self) -> Result<Arc<Host>, BuildError> {
        let builder = mount_agents(mount(self).await?).await?;
        let live_view = builder.serves_live_view();
        let host = builder.build()?;
        start_runs(&host, live_view).await?;
        Ok(host)
    }
}

/// The approval layer of `[[approvals]]` (and of chain nodes that ask for a
/// decision) in the call pipeline: it keeps its waits in the run journal.
#[cfg(feature = "journal")]
fn with_approvals(builder: HostBuilder) -> HostBuilder {
    match crate::approvals::ApprovalLayer::from_config(builder.config()) {
        Ok(layer) => builder.with_layer(layer),
        Err(e) => builder.with_error(BuildError::Config(crate::ConfigError::Approvals(e))),
    }
}

#[cfg(not(feature = "journal"))]
fn with_approvals(builder: HostBuilder) -> HostBuilder {
    builder
}

#[cfg(feature = "mcp")]
// `builder` changes only with `llm` (the sampler), `reserved` only with `memory`.
#[cfg_attr(not(all(feature = "llm", feature = "memory")), allow(unused_mut))]
async fn mount(mut builder: HostBuilder) -> Result<HostBuilder, BuildError> {
    let servers = builder.config().mcp.server_configs();
    if servers.is_empty() {
        return Ok(builder);
    }
    let mut reserved: std::collections::HashSet<String> = crate::builtins::definitions()
        .into_iter()
        .map(|d| d.name)
        .collect();
    #[cfg(feature = "memory")]
    reserved.extend(a2e_memory::TOOL_NAMES.iter().map(|n| (*n).to_owned()));
    let mounts = crate::mcp::mount(servers, reserved).await?;
    // A mounted server's sampling requests go to the host's providers
    // (when its config allows it).
    #[cfg(feature = "llm")]
    if let Some(providers) = builder.providers()? {
        mounts.set_sampler(Arc::new(crate::mcp::HostSampler::new(providers)));
    }
    let metrics = builder.telemetry().metrics().clone();
    Ok(
        builder
            .with_tool_plugin(crate::mcp::McpPlugin::new(Arc::new(mounts)).with_metrics(metrics)),
    )
}

#[cfg(not(feature = "mcp"))]
async fn mount(builder: HostBuilder) -> Result<HostBuilder, BuildError> {
    Ok(builder)
}

/// The skills of the remote A2A agents of `[[a2a.agents]]`.
#[cfg(feature = "a2a")]
async fn mount_agents(builder: HostBuilder) -> Result<HostBuilder, BuildError> {
    a2e_host_a2a::client::mount(builder).await
}

/// Without the `a2a` feature, `[[a2a.agents]]` cannot be served.
#[cfg(not(feature = "a2a"))]
async fn mount_agents(builder: HostBuilder) -> Result<HostBuilder, BuildError> {
    if builder.config().a2a.agents.is_empty() {
        return Ok(builder);
    }
    Err(BuildError::Config(crate::ConfigError::MissingFeature {
        section: "[[a2a.agents]]",
        feature: "a2a",
    }))
}

/// Opens the run journal `host`'s configuration asks for and resumes its
/// unfinished runs; with the journal off, keeps runs in memory for the live
/// view when `live_view`.
#[cfg(feature = "journal")]
async fn start_runs(host: &Arc<Host>, live_view: bool) -> Result<(), BuildError> {
    let config = host.config();
    if !config.journal.enabled && !config.cluster.enabled() {
        if live_view && crate::runs::keep_in_memory(host) {
            tracing::debug!("run journal off: runs kept in memory for the live view");
        }
        return Ok(());
    }
    crate::runs::enable(host)
        .await
        .map_err(|e| BuildError::Runs(e.to_string()))?;
    let resumed =
        crate::runs::resume_unfinished(host, &tokio_util::sync::CancellationToken::new()).await;
    if resumed > 0 {
        tracing::info!(runs = resumed, "resuming unfinished runs from the journal");
    }
    Ok(())
}

/// Without the `journal` feature runs are not journaled; a `[cluster]`
/// section is refused by name.
#[cfg(not(feature = "journal"))]
async fn start_runs(host: &Arc<Host>, _live_view: bool) -> Result<(), BuildError> {
    if host.config().cluster.enabled() {
        return Err(crate::ConfigError::MissingFeature {
            section: "[cluster]",
            feature: "journal",
        }
        .into());
    }
    Ok(())
}

/// The routes of a listener: the protocols it serves and, with the `ui`
/// feature, the live view beside them.
pub fn router(state: Arc<NetState>, protocols: Protocols) -> Router {
    let routes = crate::transport::routes(&state, protocols);
    #[cfg(feature = "ui")]
    let routes = if protocols.ws || protocols.http {
        routes.merge(crate::ui::routes())
    } else {
        routes
    };
    routes.with_state(state)
}
