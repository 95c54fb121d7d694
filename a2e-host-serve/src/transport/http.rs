//! HTTP + Server-Sent Events, the reference implementation's protocol.
//!
//! - `POST /session` opens a session; its id comes back in the `X-Session-Id`
//!   header (and as `{"session_id": …}`).
//! - `POST /send` (header `X-Session-Id`) carries agent → host messages: one
//!   JSON message, or NDJSON lines. 202 once every message has been taken in.
//!   A W3C `traceparent` header (and `tracestate`) is the trace context of
//!   the requests among them that carry none in their envelope.
//! - `GET /stream` (header `X-Session-Id` or `?session=`) is the SSE stream of
//!   host → agent messages, one `data:` line per message. A newer stream of
//!   the same session replaces an older one; messages wait in the session's
//!   bounded queue while none is attached. A stream whose connection died
//!   counts as attached until the server notices (keep-alive writes make
//!   that prompt). Every event carries an `id:` (0, 1, 2, … per session) and
//!   the session keeps the last [`REPLAY_BUFFER`] events it wrote: a stream
//!   that reconnects with `Last-Event-ID: n` first gets every kept event after
//!   `n` (what the dead stream may have swallowed), then the rest. Without the
//!   header nothing is replayed. `NetState::stream_attached` tells whether a
//!   stream is attached.
//! - `DELETE /session` ends a session at once.
//!
//! Every route needs the bearer token when one is configured (401). A session
//! with no stream attached for the grace period is closed (calls cancelled,
//! processes killed); so is one whose stream cannot take an event within the
//! stall bound (a slow reader).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

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

use super::http_sessions::{Attach, HttpSession, Numbered};
use super::net::{NetState, SessionSlot};
use super::open_sessions::Listed;
use crate::session::{OUTBOUND_CAPACITY, Session};
use a2e_host_core::outbound::{EventReceiver, EventStream, Outbound};

/// The header naming the session.
pub const SESSION_HEADER: &str = "x-session-id";

/// Events buffered between the session and one SSE response.
const STREAM_BUFFER: usize = 16;

/// Events a session keeps for a reconnecting stream's `Last-Event-ID`.
pub const REPLAY_BUFFER: usize = 256;

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
    let (tx, rx) = EventStream::channel(OUTBOUND_CAPACITY);
    let session = Session::on_transport(state.host.clone(), tx, "http");
    let (attach, attach_rx) = mpsc::channel(1);
    let id = session.id().to_owned();
    let listed = state.open.list(&session, "http");
    let http = Arc::new(HttpSession {
        session,
        attach,
        limit: tokio::sync::Mutex::new(state.options.rate_limit()),
        attached: std::sync::atomic::AtomicBool::new(false),
    });
    state.http.insert(http.clone());
    state
        .tasks
        .spawn(pump(state.clone(), http, rx, attach_rx, (slot, listed)));
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
    // A `traceparent` header is the trace context of the requests sent
    // without one of their own.
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match header("traceparent") {
        Some(parent) => {
            let state = header("tracestate").unwrap_or("");
            for line in lines {
                http.session.handle_line_traced(line, parent, state).await;
            }
        }
        None => {
            for line in lines {
                http.session.handle_line(line).await;
            }
        }
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
    let last_seen = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (tx, mut rx) = mpsc::channel::<Numbered>(STREAM_BUFFER);
    if tokio::time::timeout(Duration::from_secs(5), http.attach.send((tx, last_seen)))
        .await
        .map_or(true, |sent| sent.is_err())
    {
        return refuse(StatusCode::GONE, "the session has ended");
    }
    let events = futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).map(|(n, json): Numbered| {
        let json = String::from_utf8_lossy(&json);
        Ok::<_, Infallible>(Event::default().id(n.to_string()).data(json))
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
    mut rx: EventReceiver,
    mut attach: mpsc::Receiver<Attach>,
    _slot: (SessionSlot, Listed),
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
    let mut replay = Replay::default();
    // Events numbered and not yet sent: the rest of a run of lines, or an
    // event the previous stream refused outright (its channel was closed),
    // which goes to the next stream unless that stream's replay covers it.
    let mut pending: VecDeque<Numbered> = VecDeque::new();
    let reason = 'session: loop {
        http.set_attached(false);
        let (mut sink, last_seen) = tokio::select! {
            sink = attach.recv() => match sink {
                Some(sink) => sink,
                None => break "gone",
            },
            () = tokio::time::sleep(options.stream_grace) => break "no event stream within the grace period",
            () = cancel.cancelled() => break "session ended",
        };
        http.set_attached(true);
        if replay
            .resend(&sink, last_seen, options.write_stall)
            .await
            .is_err()
        {
            continue 'session;
        }
        if last_seen.is_some() {
            pending.clear();
        }
        loop {
            let numbered = match pending.pop_front() {
                Some(numbered) => numbered,
                None => tokio::select! {
                    biased;
                    msg = rx.recv() => match msg {
                        Some(msg) => {
                            pending.extend(replay.keep(&msg));
                            continue;
                        }
                        None => break 'session "session ended",
                    },
                    newer = attach.recv() => {
                        if let Some((newer, last_seen)) = newer {
                            sink = newer;
                            if replay.resend(&sink, last_seen, options.write_stall).await.is_err() {
                                continue 'session;
                            }
                        }
                        continue;
                    }
                    () = sink.closed() => continue 'session,
                    () = cancel.cancelled() => {
                        // Deliver what is queued, then end the stream.
                        'drain: while let Some(msg) = rx.try_recv() {
                            for numbered in replay.keep(&msg) {
                                if sink.send_timeout(numbered, options.write_stall).await.is_err() {
                                    break 'drain;
                                }
                            }
                        }
                        break 'session "session ended";
                    }
                },
            };
            match sink.send_timeout(numbered, options.write_stall).await {
                Ok(()) => {}
                Err(SendTimeoutError::Timeout(_)) => {
                    tracing::warn!(session = %session.id(), "event stream reader too slow; closing the session");
                    break 'session "reader too slow";
                }
                Err(SendTimeoutError::Closed(numbered)) => {
                    pending.push_front(numbered);
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

/// The last [`REPLAY_BUFFER`] events of a session, numbered.
#[derive(Default)]
struct Replay {
    next: u64,
    kept: std::collections::VecDeque<Numbered>,
}

impl Replay {
    /// Numbers each message of `msg` (a run of lines is one event per
    /// line), keeps a copy, and returns them for sending.
    fn keep(&mut self, msg: &Outbound) -> Vec<Numbered> {
        msg.json_texts()
            .into_iter()
            .map(|json| {
                let n = self.next;
                self.next = self.next.saturating_add(1);
                if self.kept.len() == REPLAY_BUFFER {
                    self.kept.pop_front();
                }
                // A shared buffer: the copy costs a reference count.
                self.kept.push_back((n, json.clone()));
                (n, json)
            })
            .collect()
    }

    /// Sends `sink` every kept event after `last_seen` (nothing without it).
    async fn resend(
        &self,
        sink: &mpsc::Sender<Numbered>,
        last_seen: Option<u64>,
        stall: Duration,
    ) -> Result<(), ()> {
        let Some(last_seen) = last_seen else {
            return Ok(());
        };
        for (n, json) in self.kept.iter().filter(|(n, _)| *n > last_seen) {
            sink.send_timeout((*n, json.clone()), stall)
                .await
                .map_err(|_| ())?;
        }
        Ok(())
    }
}
