//! Serving a backend over Streamable HTTP (`/mcp`), with an optional bearer
//! token.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::backend::ToolBackend;
use super::handler::Handler;
use crate::error::ServeError;

/// The Streamable HTTP endpoint as an axum router (`/mcp`), for a host that
/// mounts it into a server of its own. Each MCP session gets its own
/// backend ([`ToolBackend::for_connection`]). With `bearer_token`, every request
/// needs `Authorization: Bearer <token>` (and any `Host` is accepted);
/// without one, only loopback `Host`s are.
pub fn http_router<B: ToolBackend>(
    backend: Arc<B>,
    name: &str,
    bearer_token: Option<String>,
    shutdown: CancellationToken,
) -> Router {
    let name: Arc<str> = name.into();
    let seal = Arc::new(super::rounds::StateSeal::with_key(
        backend.request_state_key(),
    ));
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown);
    if bearer_token.is_some() {
        config = config.disable_allowed_hosts();
    }
    let service: StreamableHttpService<Handler<B>, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(Handler::new(backend.for_connection(), &name, seal.clone())),
            Arc::default(),
            config,
        );
    let router = Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(
            super::removed::refuse_removed_methods,
        ));
    match bearer_token {
        Some(token) => {
            let expected: Arc<str> = format!("Bearer {token}").into();
            router.layer(axum::middleware::from_fn(
                move |req: Request, next: Next| {
                    let expected = expected.clone();
                    async move { check_bearer(&expected, req, next).await }
                },
            ))
        }
        None => router,
    }
}

async fn check_bearer(expected: &str, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if constant_time_eq(given.as_bytes(), expected.as_bytes()) {
        next.run(req).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token",
        )
            .into_response()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves `backend` over Streamable HTTP at `http://<listener>/mcp` until
/// `shutdown` fires (`a2e serve --mcp-http ADDR`). A listener that is not on
/// a loopback address needs a bearer token.
pub async fn serve_http<B: ToolBackend>(
    backend: Arc<B>,
    name: &str,
    listener: TcpListener,
    bearer_token: Option<String>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let addr = listener.local_addr()?;
    if bearer_token.is_none() && !addr.ip().is_loopback() {
        return Err(ServeError::NotLoopback(addr));
    }
    let router = http_router(backend, name, bearer_token, shutdown.child_token());
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_comparison() {
        assert!(constant_time_eq(b"Bearer x", b"Bearer x"));
        assert!(!constant_time_eq(b"Bearer y", b"Bearer x"));
        assert!(!constant_time_eq(b"Bearer", b"Bearer x"));
    }
}
