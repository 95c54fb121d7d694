//! HTTP + Server-Sent Events, the reference implementation's protocol.
//!
//! - `POST /session` opens a session; its id comes back in the `X-Session-Id`
//!   header (and as `{"session_id": …}`).
//! - `POST /send` (header `X-Session-Id`) carries agent → host messages: one
//!   JSON message, or NDJSON lines. 202 once every message has been taken in.
//! - `GET /stream` (header `X-Session-Id` or `?session=`) is the SSE stream of
//!   host → agent messages, one `data:` line per message. A newer stream of
//!   the same session replaces an older one; messages wait in the session's
//!   bounded queue while none is attached. A stream whose connection died
//!   counts as attached until the server notices (keep-alive writes make
//!   that prompt); what was written to it meanwhile is lost with it (no
//!   `Last-Event-ID` replay). `NetState::stream_attached` tells which.
//! - `DELETE /session` ends a session at once.
//!
//! Every route needs the bearer token when one is configured (401). A session
//! with no stream attached for the grace period is closed (calls cancelled,
//! processes killed); so is one whose stream cannot take an event within the
//! stall bound (a slow reader).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use a2e_proto::Message;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::SendTimeoutError;

use super::http_sessions::HttpSession;
use super::net::{NetState, SessionSlot};
use crate::session::{OUTBOUND_CAPACITY, Session};

/// The header naming the session.
pub const SESSION_HEADER: &str = "x-session-id";

/// Events buffered between the session and one SSE response.
const STREAM_BUFFER: usize = 16;

pub(crate) fn routes(state: &NetState) -> Router<Arc<NetState>> {
    let body_limit = state.host.config().max_message_bytes.saturating_add(1024);
    Router::new()
        .route("/session", post(open).delete(end))
        .route("/send", post(send).layer(DefaultBodyLimit::max(body_limit)))
        .route("/stream", get(stream))
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, format!("{message}\n")).into_response()
}

fn session_of(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query.map(str::to_owned))
        .filter(|s| !s.is_empty())
}

/// `POST /session`.
async fn open(State(state): State<Arc<NetState>>, headers: HeaderMap) -> Response {
    if !state.authorized(&headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    let Some(slot) = state.admit() else {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, "too many sessions");
    };
    let (tx, rx) = mpsc::channel::<Message>(OUTBOUND_CAPACITY);
    let session = Session::new(state.host.clone(), tx);
    let (attach, attach_rx) = mpsc::channel(1);
    let id = session.id().to_owned();
    let http = Arc::new(HttpSession {
        session,
        attach,
        limit: tokio::sync::Mutex::new(state.options.rate_limit()),
        attached: std::sync::atomic::AtomicBool::new(false),
    });
    state.http.insert(http.clone());
    state
        .tasks
        .spawn(pump(state.clone(), http, rx, attach_rx, slot));
    tracing::debug!(session = %id, "HTTP session opened");
    let mut resp = (
        StatusCode::CREATED,
        axum::Json(serde_json::json!({ "session_id": id })),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(SESSION_HEADER, value);
    }
    resp
}

/// `DELETE /session`.
async fn end(State(state): State<Arc<NetState>>, headers: HeaderMap) -> Response {
    if !state.authorized(&headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    let Some(id) = session_of(&headers, None) else {
        return refuse(StatusCode::BAD_REQUEST, "no X-Session-Id header");
    };
    match state.http.get(&id) {
        Some(http) => {
            // The pump sees the token fire, closes the session and forgets it.
            http.session.cancel_token().cancel();
            StatusCode::NO_CONTENT.into_response()
        }
        None => refuse(StatusCode::NOT_FOUND, "no such session"),
    }
}

/// `POST /send`.
async fn send(State(state): State<Arc<NetState>>, headers: HeaderMap, body: Bytes) -> Response {
    if !state.authorized(&headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    let Some(id) = session_of(&headers, None) else {
        return refuse(StatusCode::BAD_REQUEST, "no X-Session-Id header");
    };
    let Some(http) = state.http.get(&id) else {
        return refuse(StatusCode::NOT_FOUND, "no such session");
    };
    if http.session.cancel_token().is_cancelled() {
        return refuse(StatusCode::GONE, "the session has ended");
    }
    let lines = split_messages(&body);
    let n = lines.len() as f64;
    let wait = {
        let mut limit = http.limit.lock().await;
        if limit.wait_for(n) > state.options.max_rate_wait {
            let mut resp = refuse(StatusCode::TOO_MANY_REQUESTS, "rate limit exceeded");
            resp.headers_mut()
                .insert("retry-after", HeaderValue::from_static("1"));
            return resp;
        }
        limit.take(n)
    };
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    for line in lines {
        http.session.handle_line(line).await;
    }
    StatusCode::ACCEPTED.into_response()
}

/// One JSON message (possibly spread over lines), or NDJSON lines.
fn split_messages(body: &[u8]) -> Vec<&[u8]> {
    let trimmed = body.trim_ascii();
    if trimmed.is_empty() {
        return Vec::new();
    }
    let one_line = !trimmed.contains(&b'\n');
    if one_line || serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_ok() {
        return vec![trimmed];
    }
    trimmed
        .split(|b| *b == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|l| !l.is_empty())
        .collect()
}

#[derive(Deserialize)]
struct StreamQuery {
    session: Option<String>,
}

/// `GET /stream`.
async fn stream(
    State(state): State<Arc<NetState>>,
    headers: HeaderMap,
    Query(query): Query<StreamQuery>,
) -> Response {
    if !state.authorized(&headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    let Some(id) = session_of(&headers, query.session.as_deref()) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "no X-Session-Id header or ?session= parameter",
        );
    };
    let Some(http) = state.http.get(&id) else {
        return refuse(StatusCode::NOT_FOUND, "no such session");
    };
    let (tx, mut rx) = mpsc::channel::<Message>(STREAM_BUFFER);
    if tokio::time::timeout(Duration::from_secs(5), http.attach.send(tx))
        .await
        .map_or(true, |sent| sent.is_err())
    {
        return refuse(StatusCode::GONE, "the session has ended");
    }
    let events = futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).map(|msg: Message| {
        let json = String::from_utf8_lossy(&msg.to_json()).into_owned();
        Ok::<_, Infallible>(Event::default().data(json))
    });
    let mut resp = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(state.options.keep_alive))
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(SESSION_HEADER, value);
    }
    resp.headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-cache"));
    resp
}

use futures::StreamExt as _;

/// Moves the session's messages to whichever stream is attached; closes the
/// session when no stream comes back within the grace, when a stream cannot
/// keep up, when the session ends, or (after draining) on shutdown.
async fn pump(
    state: Arc<NetState>,
    http: Arc<HttpSession>,
    mut rx: mpsc::Receiver<Message>,
    mut attach: mpsc::Receiver<mpsc::Sender<Message>>,
    _slot: SessionSlot,
) {
    let session = http.session.clone();
    let cancel = session.cancel_token().clone();
    let options = state.options.clone();
    // Graceful shutdown: let calls in flight finish while the stream stays up.
    let drainer = {
        let session = session.clone();
        let shutdown = state.shutdown.clone();
        let drain = options.drain;
        tokio::spawn(async move {
            tokio::select! {
                () = shutdown.cancelled() => session.close(drain).await,
                () = session.cancel_token().cancelled() => {}
            }
        })
    };
    let mut pending: Option<Message> = None;
    let reason = 'session: loop {
        http.set_attached(false);
        let mut sink = tokio::select! {
            sink = attach.recv() => match sink {
                Some(sink) => sink,
                None => break "gone",
            },
            () = tokio::time::sleep(options.stream_grace) => break "no event stream within the grace period",
            () = cancel.cancelled() => break "session ended",
        };
        http.set_attached(true);
        loop {
            let msg = match pending.take() {
                Some(msg) => msg,
                None => tokio::select! {
                    biased;
                    msg = rx.recv() => match msg {
                        Some(msg) => msg,
                        None => break 'session "session ended",
                    },
                    newer = attach.recv() => {
                        if let Some(newer) = newer {
                            sink = newer;
                        }
                        continue;
                    }
                    () = sink.closed() => continue 'session,
                    () = cancel.cancelled() => {
                        // Deliver what is queued, then end the stream.
                        while let Ok(msg) = rx.try_recv() {
                            if sink.send_timeout(msg, options.write_stall).await.is_err() {
                                break;
                            }
                        }
                        break 'session "session ended";
                    }
                },
            };
            match sink.send_timeout(msg, options.write_stall).await {
                Ok(()) => {}
                Err(SendTimeoutError::Timeout(_)) => {
                    tracing::warn!(session = %session.id(), "event stream reader too slow; closing the session");
                    break 'session "reader too slow";
                }
                Err(SendTimeoutError::Closed(msg)) => {
                    pending = Some(msg);
                    continue 'session;
                }
            }
        }
    };
    tracing::debug!(session = %session.id(), "HTTP session closing: {reason}");
    state.http.remove(session.id());
    rx.close();
    session.close(Duration::ZERO).await;
    drainer.abort();
}
