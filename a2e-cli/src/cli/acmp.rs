//! `a2e serve --acmp-ws ADDR`: the host's `[acmp.provider]` capabilities as
//! JSON-RPC over WebSocket.

use std::sync::Arc;

use a2e_host::Host;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running ACMP server.
pub(super) struct AcmpServer {
    pub(super) handle: JoinHandle<std::io::Result<()>>,
    pub(super) shutdown: CancellationToken,
}

/// Binds `addr` and serves the provider service of `[acmp.provider]` on it.
pub(super) async fn start_acmp_ws(host: &Arc<Host>, addr: &str) -> Result<AcmpServer, String> {
    let config = host
        .config()
        .acmp
        .provider
        .clone()
        .ok_or("--acmp-ws needs [acmp.provider] in the configuration")?;
    let token = a2e_host::acmp::provider_token(&config).map_err(|e| e.to_string())?;
    let service = Arc::new(a2e_host::acmp::service(host, &config).map_err(|e| e.to_string())?);
    let listener = a2e_host::transport::net::bind(addr, host)
        .await
        .map_err(|e| e.to_string())?;
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| addr.to_owned());
    eprintln!(
        "a2e: serving ACMP ({} capabilities, JSON-RPC over WebSocket) on ws://{local}/",
        config.capabilities.len()
    );
    let shutdown = CancellationToken::new();
    let handle = tokio::spawn(a2e_host::acmp::ws::serve_ws(
        service,
        token,
        listener,
        shutdown.clone(),
    ));
    Ok(AcmpServer { handle, shutdown })
}

/// The environment variable a buyer that starts `a2e serve --mcp-stdio` sets
/// to the provider's bearer token.
pub(super) const STDIO_BEARER_ENV: &str = "A2E_ACMP_BEARER";

/// The MCP backend of `a2e serve --mcp-stdio | --mcp-http`, serving ACMP too
/// when `[acmp.provider]` is configured. Over stdio the bearer token comes in
/// [`STDIO_BEARER_ENV`]; over HTTP it is the host's `auth_token` (the MCP
/// transport's bearer token).
pub(super) fn mcp_backend(
    host: &Arc<Host>,
    extras: a2e_host::mcp::McpExtras,
    stdio: bool,
) -> Result<a2e_host::mcp::HostBackend, String> {
    let backend = a2e_host::mcp::HostBackend::with_extras(host.clone(), "mcp", extras);
    let Some(config) = host.config().acmp.provider.clone() else {
        return Ok(backend);
    };
    let token = a2e_host::acmp::provider_token(&config).map_err(|e| e.to_string())?;
    if stdio {
        let given = std::env::var(STDIO_BEARER_ENV).unwrap_or_default();
        if given != token {
            return Err(format!(
                "ACMP over MCP stdio needs the provider's bearer token in {STDIO_BEARER_ENV}"
            ));
        }
    } else if host.config().auth_token.is_empty() {
        return Err(
            "ACMP over MCP HTTP needs auth_token (the bearer token) in the configuration".into(),
        );
    }
    let service = a2e_host::acmp::service(host, &config).map_err(|e| e.to_string())?;
    Ok(backend.with_acmp(Arc::new(service)))
}
