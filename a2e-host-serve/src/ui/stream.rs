//! `GET /ui/events`: the live view's Server-Sent Events. Each event's data
//! is one JSON object with a `kind`: the host's [`LiveItem`]s as they
//! happen (`run_started`, `node_started`, `node_traced`, `node_finished`, `event`,
//! `run_finished`), `sessions` (the open sessions, at once and whenever
//! they change), `lagged` (items were missed: reload), and `stale` with a
//! `run_id` (an item too large to send: reload that run). The stream ends
//! when the server shuts down.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::json;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::{allowed, guarded, unauthorized};
use crate::transport::SessionView;
use crate::transport::net::NetState;
use a2e_host_core::live::LiveItem;

/// How often the open sessions are looked at (sent only when they changed).
const SESSIONS_EVERY: Duration = Duration::from_millis(500);

/// An item larger than this is not sent; a `stale` note stands in for it.
const MAX_ITEM_BYTES: usize = 256 * 1024;

struct Feed {
    state: Arc<NetState>,
    rx: broadcast::Receiver<Arc<LiveItem>>,
    tick: tokio::time::Interval,
    sessions: Option<Vec<SessionView>>,
}

fn data(text: String) -> Event {
    Event::default().data(text)
}

/// An item as an SSE event.
fn item_event(item: &LiveItem) -> Event {
    match serde_json::to_string(item) {
        Ok(text) if text.len() <= MAX_ITEM_BYTES => data(text),
        _ => data(json!({ "kind": "stale", "run_id": item.run_id() }).to_string()),
    }
}

impl Feed {
    async fn next(&mut self) -> Option<Event> {
        loop {
            tokio::select! {
                () = self.state.shutdown.cancelled() => return None,
                item = self.rx.recv() => return match item {
                    Ok(item) => Some(item_event(&item)),
                    Err(RecvError::Lagged(_)) => Some(data(json!({"kind": "lagged"}).to_string())),
                    Err(RecvError::Closed) => None,
                },
                _ = self.tick.tick() => {
                    let now = self.state.open_sessions();
                    if self.sessions.as_ref() != Some(&now) {
                        let text = json!({"kind": "sessions", "sessions": now}).to_string();
                        self.sessions = Some(now);
                        return Some(data(text));
                    }
                }
            }
        }
    }
}

/// `GET /ui/events`.
pub(super) async fn events(State(state): State<Arc<NetState>>, headers: HeaderMap) -> Response {
    if !allowed(&state, &headers) {
        return unauthorized();
    }
    let mut tick = tokio::time::interval(SESSIONS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let keep_alive = state.options.keep_alive;
    let feed = Feed {
        rx: state.host.live().subscribe(),
        state,
        tick,
        sessions: None,
    };
    let stream = futures::stream::unfold(feed, |mut feed| async move {
        let event = feed.next().await?;
        Some((Ok::<_, Infallible>(event), feed))
    });
    guarded(
        Sse::new(stream.boxed())
            .keep_alive(KeepAlive::new().interval(keep_alive))
            .into_response(),
    )
}
