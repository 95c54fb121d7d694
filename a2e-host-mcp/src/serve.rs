//! Serving the host over MCP: what `a2e serve --mcp-stdio` and
//! `--mcp-http ADDR` run, for a program that builds a host of its own too.

use std::sync::Arc;

use a2e_mcp::ServeError;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::backend::{HostBackend, McpExtras};
use crate::host::Host;

/// The server name MCP clients see.
pub const SERVER_NAME: &str = "a2e";

/// Serves `host` (its tools, skills and `extras`) to one MCP client on
/// stdin/stdout until it goes away or `shutdown` fires.
pub async fn serve_stdio(
    host: Arc<Host>,
    extras: McpExtras,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let backend = Arc::new(HostBackend::with_extras(host, "mcp", extras));
    a2e_mcp::serve_stdio(backend, SERVER_NAME, shutdown).await
}

/// Serves `host` over Streamable HTTP at `http://<listener>/mcp` until
/// `shutdown` fires; each MCP session is an A2E session of its own. The
/// configuration's `auth_token`, when set, is the bearer token every request
/// needs (and a listener that is not on loopback needs one).
pub async fn serve_http(
    host: Arc<Host>,
    extras: McpExtras,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let token = Some(host.config().auth_token.clone()).filter(|t| !t.is_empty());
    let backend = Arc::new(HostBackend::with_extras(host, "mcp", extras));
    a2e_mcp::serve_http(backend, SERVER_NAME, listener, token, shutdown).await
}

/// [`serve_stdio`] with a backend built by the caller (ACMP beside MCP, say).
pub async fn serve_backend_stdio(
    backend: HostBackend,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    a2e_mcp::serve_stdio(Arc::new(backend), SERVER_NAME, shutdown).await
}

/// [`serve_http`] with a backend built by the caller; `token` is the bearer
/// token every request needs.
pub async fn serve_backend_http(
    backend: HostBackend,
    token: Option<String>,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    a2e_mcp::serve_http(Arc::new(backend), SERVER_NAME, listener, token, shutdown).await
}
