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
    let token = a2e_host::acmp::provider_token(&config)?;
    let service = Arc::new(a2e_host::acmp::service(host, &config)?);
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
