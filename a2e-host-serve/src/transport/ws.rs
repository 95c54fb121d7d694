//! WebSocket: one A2E message per text frame (binary frames are read too).
//!
//! The upgrade needs the bearer token when one is configured (401 otherwise).
//! Frames over the message size limit close the connection with 1009. Input
//! beyond the rate limit is read more slowly. A writer that cannot hand a
//! frame to a slow reader within the stall bound drops the connection. When
//! the connection ends, the session is closed at once: its calls are
//! cancelled and its processes killed. On graceful shutdown, calls in flight
//! may finish and answer first; then the host closes with 1001.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as WsMessage, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use tokio_util::sync::CancellationToken;

use super::net::{NetState, SessionSlot};
use crate::session::{OUTBOUND_CAPACITY, Session};
use a2e_host_core::outbound::{EventReceiver, EventStream};

/// Close codes.
const GOING_AWAY: u16 = 1001;
const POLICY: u16 = 1008;
const TOO_BIG: u16 = 1009;
const NORMAL: u16 = 1000;

/// Read chunk and write batching size of a connection; larger messages still pass.
const BUFFER: usize = 16 * 1024;

pub(crate) fn routes() -> Router<Arc<NetState>> {
    Router::new()
        .route("/", get(upgrade))
        .route("/ws", get(upgrade))
}

async fn upgrade(
    State(state): State<Arc<NetState>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if !state.authorized(&headers) {
        return (StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n").into_response();
    }
    let Some(slot) = state.admit() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "too many sessions\n").into_response();
    };
    let max = state.host.config().max_message_bytes;
    let tasks = state.tasks.clone();
    // Small I/O buffers: a host holds many of these connections at once.
    ws.max_message_size(max)
        .max_frame_size(max)
        .read_buffer_size(BUFFER)
        .write_buffer_size(BUFFER)
        .on_upgrade(move |socket| async move {
            // Tracked so that shutdown waits for the session to drain.
            let _ = tasks.spawn(run(state, socket, slot)).await;
        })
}

/// Serves one session over `socket`.
async fn run(state: Arc<NetState>, socket: WebSocket, _slot: SessionSlot) {
    let (tx, rx) = EventStream::channel(OUTBOUND_CAPACITY);
    let session = Session::on_transport(state.host.clone(), tx, "ws");
    let _listed = state.open.list(&session, "ws");
    tracing::debug!(session = %session.id(), "WebSocket session opened");
    let (sink, mut stream) = socket.split();
    let closing: Arc<Mutex<Option<CloseFrame>>> = Arc::new(Mutex::new(None));
    let done = CancellationToken::new();
    let writer = tokio::spawn(write_loop(
        sink,
        rx,
        session.cancel_token().clone(),
        done.clone(),
        closing.clone(),
        state.options.write_stall,
        state.options.keep_alive,
    ));

    let mut limit = state.options.rate_limit();
    let mut graceful = false;
    loop {
        let next = tokio::select! {
            next = stream.next() => next,
            () = session.cancel_token().cancelled() => break,
            () = state.shutdown.cancelled() => {
                graceful = true;
                break;
            }
        };
        let bytes = match next {
            Some(Ok(WsMessage::Text(text))) => text.as_bytes().to_vec(),
            Some(Ok(WsMessage::Binary(bytes))) => bytes.to_vec(),
            Some(Ok(WsMessage::Close(_))) | None => break,
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                let (code, reason) = read_error(e);
                tracing::info!(session = %session.id(), code, "WebSocket input failed: {reason}");
                set_close(&closing, code, &reason);
                break;
            }
        };
        let wait = limit.take(1.0);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        session.handle_line(&bytes).await;
    }

    let drain = if graceful {
        set_close(&closing, GOING_AWAY, "the host is shutting down");
        state.options.drain
    } else {
        Duration::ZERO
    };
    session.close(drain).await;
    tracing::debug!(session = %session.id(), "WebSocket session closed");
    done.cancel();
    drop(session);
    let _ = writer.await;
}

fn set_close(closing: &Mutex<Option<CloseFrame>>, code: u16, reason: &str) {
    let mut slot = closing.lock().unwrap_or_else(PoisonError::into_inner);
    if slot.is_none() {
        // A close reason must fit in a control frame (123 bytes).
        let mut reason = reason.to_owned();
        while reason.len() > 120 {
            reason.pop();
        }
        *slot = Some(CloseFrame {
            code,
            reason: Utf8Bytes::from(reason),
        });
    }
}

/// The close code and reason for a failed read.
fn read_error(e: axum::Error) -> (u16, String) {
    use tokio_tungstenite::tungstenite::Error as WsError;
    match e.into_inner().downcast::<WsError>() {
        Ok(inner) => match *inner {
            WsError::Capacity(c) => (TOO_BIG, format!("message too big: {c}")),
            WsError::Protocol(p) => (POLICY, format!("protocol error: {p}")),
            other => (NORMAL, other.to_string()),
        },
        Err(other) => (NORMAL, other.to_string()),
    }
}

/// Sends each JSON text as a text frame; false when the output failed or
/// the peer did not take a frame within `stall` (then the close frame says so).
async fn send_texts<S>(
    sink: &mut S,
    texts: Vec<bytes::Bytes>,
    stall: Duration,
    closing: &Mutex<Option<CloseFrame>>,
) -> bool
where
    S: futures::Sink<WsMessage, Error = axum::Error> + Unpin,
{
    for text in texts {
        // The host's own encoder wrote it: UTF-8 (checked, not assumed).
        let text = Utf8Bytes::try_from(text.clone())
            .unwrap_or_else(|_| Utf8Bytes::from(String::from_utf8_lossy(&text).into_owned()));
        match tokio::time::timeout(stall, sink.send(WsMessage::Text(text))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::debug!("WebSocket output failed: {e}");
                return false;
            }
            Err(_) => {
                tracing::warn!("WebSocket reader too slow for {stall:?}; disconnecting");
                set_close(closing, POLICY, "reader too slow");
                return false;
            }
        }
    }
    true
}

/// Sends the session's messages; stops when the session has ended (`done`)
/// after flushing what is queued, or when the peer cannot keep up.
async fn write_loop<S>(
    mut sink: S,
    mut rx: EventReceiver,
    cancel: CancellationToken,
    done: CancellationToken,
    closing: Arc<Mutex<Option<CloseFrame>>>,
    stall: Duration,
    keep_alive: Duration,
) where
    S: futures::Sink<WsMessage, Error = axum::Error> + Unpin,
{
    let mut ping = tokio::time::interval(keep_alive);
    ping.tick().await;
    let mut flushing = false;
    loop {
        let msg = if flushing {
            match rx.try_recv() {
                Some(msg) => msg,
                None => break,
            }
        } else {
            tokio::select! {
                msg = rx.recv() => match msg {
                    Some(msg) => msg,
                    None => break,
                },
                () = done.cancelled() => {
                    flushing = true;
                    continue;
                }
                _ = ping.tick() => {
                    let sent = tokio::time::timeout(stall, sink.send(WsMessage::Ping(Default::default()))).await;
                    if !matches!(sent, Ok(Ok(()))) {
                        cancel.cancel();
                        break;
                    }
                    continue;
                }
            }
        };
        // One text frame per message; a run of encoded lines is one frame
        // per line.
        if !send_texts(&mut sink, msg.json_texts(), stall, &closing).await {
            cancel.cancel();
            break;
        }
    }
    // Senders fail from now on instead of waiting on a dead output.
    rx.close();
    let frame = closing
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .unwrap_or(CloseFrame {
            code: NORMAL,
            reason: Utf8Bytes::from_static("session ended"),
        });
    let _ = tokio::time::timeout(
        Duration::from_secs(1),
        sink.send(WsMessage::Close(Some(frame))),
    )
    .await;
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
}
