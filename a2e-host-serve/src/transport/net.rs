//! What the network transports share: options, the server state (sessions,
//! shutdown), the bearer check, the bind rule, per-connection rate limits,
//! and [`serve`], which runs WebSocket and HTTP+SSE on one listener.
//!
//! Routes (each protocol only when enabled):
//!
//! | route | protocol |
//! |---|---|
//! | `GET /` or `GET /ws` (upgrade) | WebSocket, one message per text frame |
//! | `POST /session` | HTTP: opens a session; its id in `X-Session-Id` |
//! | `POST /send` | HTTP: agent → host, one JSON message or NDJSON lines |
//! | `GET /stream` | HTTP: host → agent as Server-Sent Events (`data:` lines) |
//! | `DELETE /session` | HTTP: ends a session at once |
//! | `GET /metrics` | both: the host's metrics as Prometheus text (404 with telemetry off) |
//! | `GET /ui`, `/ui/…` | both: the live view (feature `ui`; see `crate::ui`) |

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::HeaderMap;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::limits::RateLimit;
use crate::session::token_matches;
use a2e_host_core::host::Host;

/// Limits and timings of the network transports.
#[derive(Debug, Clone)]
pub struct NetOptions {
    /// Most sessions open at once over all connections; more are refused (503).
    pub max_sessions: usize,
    /// Messages per second a connection may send, sustained.
    pub rate_per_sec: f64,
    /// Messages a connection may send in a burst above the sustained rate.
    pub burst: f64,
    /// An HTTP `POST /send` that would wait longer than this for the rate
    /// limit is refused (429) instead. WebSocket input is slowed down.
    pub max_rate_wait: Duration,
    /// A writer (WebSocket frame, SSE event) that cannot hand over a message
    /// for this long is a slow reader: its connection is dropped.
    pub write_stall: Duration,
    /// An HTTP session with no `GET /stream` attached for this long is closed.
    pub stream_grace: Duration,
    /// On shutdown, how long calls in flight may still finish and answer.
    pub drain: Duration,
    /// WebSocket pings and SSE keep-alive comments, this often.
    pub keep_alive: Duration,
}

impl NetOptions {
    /// A fresh token bucket at this server's rate.
    pub(crate) fn rate_limit(&self) -> RateLimit {
        RateLimit::new(self.rate_per_sec, self.burst)
    }
}

impl Default for NetOptions {
    fn default() -> Self {
        Self {
            max_sessions: 1024,
            rate_per_sec: 2000.0,
            burst: 4000.0,
            max_rate_wait: Duration::from_secs(2),
            write_stall: Duration::from_secs(10),
            stream_grace: Duration::from_secs(10),
            drain: Duration::from_secs(10),
            keep_alive: Duration::from_secs(15),
        }
    }
}

/// Why the network server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// A non-loopback address without a configured token.
    #[error(
        "refusing to bind {0}: it is not a loopback address and no auth_token is configured \
         (set auth_token in the host configuration)"
    )]
    NeedsToken(SocketAddr),
    /// The address could not be bound or resolved.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Which protocols a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocols {
    /// WebSocket on `/` and `/ws`.
    pub ws: bool,
    /// HTTP+SSE on `/session`, `/send`, `/stream`.
    pub http: bool,
}

/// State shared by every connection of a server.
pub struct NetState {
    pub(crate) host: Arc<Host>,
    pub(crate) options: NetOptions,
    /// Fires on graceful shutdown.
    pub(crate) shutdown: CancellationToken,
    /// Every session's task.
    pub(crate) tasks: TaskTracker,
    active: AtomicUsize,
    pub(crate) http: super::http_sessions::Registry,
    /// Every open session (WebSocket, HTTP, and a stdio session served
    /// beside the listeners), for the live view.
    pub(crate) open: super::open_sessions::OpenSessions,
    /// The live view's key of this process, which binds each page's CSRF
    /// token to its page session.
    #[cfg(feature = "ui")]
    pub(crate) ui_key: ring::hmac::Key,
}

impl NetState {
    /// State for serving `host`.
    pub fn new(host: Arc<Host>, options: NetOptions) -> Arc<Self> {
        Arc::new(Self {
            host,
            options,
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
            active: AtomicUsize::new(0),
            http: super::http_sessions::Registry::default(),
            open: super::open_sessions::OpenSessions::default(),
            #[cfg(feature = "ui")]
            ui_key: crate::ui::fresh_key(),
        })
    }

    /// Sessions open now (WebSocket and HTTP).
    pub fn active_sessions(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Whether HTTP session `id` has an event stream attached, as far as the
    /// host knows (a stream whose connection died counts until the server
    /// notices). `false` for an unknown session.
    pub fn stream_attached(&self, id: &str) -> bool {
        self.http.get(id).is_some_and(|h| h.stream_attached())
    }

    /// Every open session (WebSocket and HTTP), oldest first.
    pub fn open_sessions(&self) -> Vec<super::open_sessions::SessionView> {
        self.open.snapshot()
    }

    /// Fires to shut down gracefully: stop accepting, drain, close sessions.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Counts a session until the returned guard drops; `None` when full or shutting down.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<SessionSlot> {
        if self.shutdown.is_cancelled() {
            return None;
        }
        let before = self.active.fetch_add(1, Ordering::SeqCst);
        if before >= self.options.max_sessions {
            self.active.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(SessionSlot(self.clone()))
    }

    /// Whether the request carries the configured token as a bearer header
    /// (always true when no token is configured).
    pub(crate) fn authorized(&self, headers: &HeaderMap) -> bool {
        let expected = &self.host.config().auth_token;
        if expected.is_empty() {
            return true;
        }
        headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|presented| token_matches(expected, presented.trim()))
    }
}

/// `GET /metrics`: the Prometheus text of the host's metrics, behind the
/// same bearer token as every route; 404 when telemetry is off.
pub(crate) async fn metrics(
    axum::extract::State(state): axum::extract::State<Arc<NetState>>,
    headers: HeaderMap,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    if !state.authorized(&headers) {
        return (StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n").into_response();
    }
    match state.host.telemetry().prometheus_text() {
        Some(text) => (
            [(
                axum::http::header::CONTENT_TYPE,
                a2e_telemetry::PROMETHEUS_CONTENT_TYPE,
            )],
            text,
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "telemetry is off ([telemetry] enabled = true turns it on)\n",
        )
            .into_response(),
    }
}

/// One open session, counted in [`NetState::active_sessions`].
pub(crate) struct SessionSlot(Arc<NetState>);

impl Drop for SessionSlot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Refuses a non-loopback address unless a token is configured.
pub fn check_bind(addr: &SocketAddr, host: &Host) -> Result<(), NetError> {
    if addr.ip().is_loopback() || !host.config().auth_token.is_empty() {
        Ok(())
    } else {
        Err(NetError::NeedsToken(*addr))
    }
}

/// Binds `addr` (`host:port`) after [`check_bind`].
pub async fn bind(addr: &str, host: &Host) -> Result<TcpListener, NetError> {
    let bind_err = |source| NetError::Bind {
        addr: addr.to_owned(),
        source,
    };
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(bind_err)?
        .collect();
    let Some(first) = resolved.first() else {
        return Err(bind_err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the address resolves to nothing",
        )));
    };
    for a in &resolved {
        check_bind(a, host)?;
    }
    TcpListener::bind(first).await.map_err(bind_err)
}

/// Serves `router` on `listener` until `state`'s shutdown token fires; then
/// stops accepting, lets calls in flight finish for up to `drain`, closes
/// every session (cancelling what is left, killing their processes) and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    state: Arc<NetState>,
) -> std::io::Result<()> {
    let shutdown = state.shutdown.clone();
    // Small messages go out at once: no Nagle delay against the peer's delayed ACKs.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp: &mut tokio::net::TcpStream| {
        let _ = tcp.set_nodelay(true);
    });
    let server = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move { shutdown.cancelled().await });
    let result = server.await;
    // Sessions notice the token themselves; wait for them to drain and close.
    state.tasks.close();
    let limit = state.options.drain + Duration::from_secs(5);
    if tokio::time::timeout(limit, state.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!("sessions still closing after {limit:?}; leaving them");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_a_burst_then_paces() {
        let options = NetOptions {
            rate_per_sec: 10.0,
            burst: 5.0,
            ..NetOptions::default()
        };
        let mut bucket = options.rate_limit();
        for _ in 0..5 {
            assert_eq!(bucket.take(1.0), Duration::ZERO);
        }
        let wait = bucket.take(1.0);
        assert!(
            wait > Duration::from_millis(50) && wait <= Duration::from_millis(100),
            "{wait:?}"
        );
        assert!(bucket.wait_for(10.0) > Duration::from_millis(900));
    }
}
