//! The scripted host's side of a network connection: a server on a loopback
//! port that hands each client connection (WebSocket) or session (HTTP+SSE)
//! to the script as a [`Link`], with what the transport showed of it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::mpsc;

use super::{Ends, Incoming, Link, MAX_MESSAGE_BYTES, deliver};
use crate::scenario::Transport;

/// What the transport showed of one connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The `Authorization` header of the upgrade or of `POST /session`.
    pub authorization: Option<String>,
}

/// A listening scripted host.
#[derive(Debug)]
pub struct Server {
    url: String,
    accepted: mpsc::Receiver<(Link, Facts)>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// The URL a client connects to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The next connection within `within`.
    pub async fn accept(&mut self, within: Duration) -> Option<(Link, Facts)> {
        tokio::time::timeout(within, self.accepted.recv())
            .await
            .ok()
            .flatten()
    }
}

#[derive(Clone)]
struct Shared {
    accepted: mpsc::Sender<(Link, Facts)>,
    sessions: Arc<Mutex<HashMap<String, HttpSession>>>,
}

struct HttpSession {
    /// Where the client's messages go.
    inbox: mpsc::Sender<Incoming>,
    /// The script's messages for the client (taken by the stream).
    out: Arc<tokio::sync::Mutex<mpsc::Receiver<String>>>,
    /// How many event streams the client has opened.
    streams: Arc<AtomicU64>,
}

/// How long a session waits for the client to open a new event stream after
/// dropping one, before it counts the client as gone. The reference's
/// protocol has no `DELETE /session`: a client ends a session by dropping
/// its stream.
const STREAM_GRACE: Duration = Duration::from_secs(3);

/// Held by an event stream; when the stream is dropped and the client opens
/// no newer one within [`STREAM_GRACE`], the session is closed.
struct StreamHold {
    shared: Shared,
    id: String,
    streams: Arc<AtomicU64>,
    mine: u64,
}

impl Drop for StreamHold {
    fn drop(&mut self) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (shared, id, streams, mine) = (
            self.shared.clone(),
            self.id.clone(),
            self.streams.clone(),
            self.mine,
        );
        rt.spawn(async move {
            tokio::time::sleep(STREAM_GRACE).await;
            if streams.load(Ordering::SeqCst) != mine {
                return;
            }
            let gone = shared.sessions().remove(&id);
            if let Some(s) = gone {
                let why = format!(
                    "the client dropped its event stream and opened none within {STREAM_GRACE:?}"
                );
                deliver(&s.inbox, Incoming::Closed(why)).await;
            }
        });
    }
}

impl Shared {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, HttpSession>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Listens on a free loopback port for `transport` (WebSocket or HTTP+SSE).
pub async fn listen(transport: Transport) -> Result<Server, String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen on loopback: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))?;
    let (tx, accepted) = mpsc::channel(16);
    let shared = Shared {
        accepted: tx,
        sessions: Arc::default(),
    };
    let (router, url) = match transport {
        Transport::Ws => (
            Router::new()
                .route("/", get(upgrade))
                .route("/ws", get(upgrade)),
            format!("ws://{addr}/"),
        ),
        Transport::Http => (
            Router::new()
                .route("/session", post(open).delete(end))
                .route("/send", post(send))
                .route("/stream", get(stream))
                .layer(DefaultBodyLimit::max(MAX_MESSAGE_BYTES)),
            format!("http://{addr}/"),
        ),
        Transport::Stdio => return Err("stdio needs no server".into()),
    };
    let app = router.with_state(shared);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(Server {
        url,
        accepted,
        task,
    })
}

fn authorization(headers: &HeaderMap) -> Option<String> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn upgrade(
    State(shared): State<Shared>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let facts = Facts {
        authorization: authorization(&headers),
    };
    ws.max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| async move {
            let (mut link, ends) = Link::pair();
            link.hold(tokio::spawn(pump(socket, ends)));
            let _ = shared.accepted.send((link, facts)).await;
        })
}

async fn pump(mut socket: WebSocket, Ends { mut out, inbox }: Ends) {
    let mut writing = true;
    loop {
        tokio::select! {
            msg = out.recv(), if writing => match msg {
                Some(text) => {
                    if socket.send(Message::text(text)).await.is_err() {
                        writing = false;
                    }
                }
                None => {
                    let _ = socket.send(Message::Close(None)).await;
                    return;
                }
            },
            frame = socket.recv() => {
                let item = match frame {
                    Some(Ok(Message::Text(text))) => Incoming::Text(text.as_str().to_owned()),
                    Some(Ok(Message::Binary(bytes))) => super::text_of(bytes.to_vec()),
                    Some(Ok(Message::Close(_))) | None => Incoming::Closed("the client closed the socket".into()),
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => Incoming::Closed(format!("the socket failed: {e}")),
                };
                let end = matches!(item, Incoming::Closed(_));
                if !deliver(&inbox, item).await || end {
                    return;
                }
            }
        }
    }
}

fn session_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(super::http::SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn open(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    let facts = Facts {
        authorization: authorization(&headers),
    };
    let id = format!("scripted-{}", uuid_like());
    let (link, Ends { out, inbox }) = Link::pair();
    shared.sessions().insert(
        id.clone(),
        HttpSession {
            inbox,
            out: Arc::new(tokio::sync::Mutex::new(out)),
            streams: Arc::default(),
        },
    );
    let _ = shared.accepted.send((link, facts)).await;
    // As the reference host and `a2e serve` answer: the id in the header and
    // in a JSON body (the reference client reads the body).
    let body = axum::Json(serde_json::json!({ "session_id": id }));
    (
        StatusCode::CREATED,
        [(super::http::SESSION_HEADER, id.clone())],
        body,
    )
        .into_response()
}

async fn send(State(shared): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let Some(id) = session_of(&headers) else {
        return (StatusCode::BAD_REQUEST, "no X-Session-Id header\n").into_response();
    };
    let inbox = match shared.sessions().get(&id) {
        Some(s) => s.inbox.clone(),
        None => return (StatusCode::NOT_FOUND, "no such session\n").into_response(),
    };
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        deliver(&inbox, Incoming::Text(line.to_owned())).await;
    }
    StatusCode::ACCEPTED.into_response()
}

async fn end(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    let Some(id) = session_of(&headers) else {
        return (StatusCode::BAD_REQUEST, "no X-Session-Id header\n").into_response();
    };
    let gone = shared.sessions().remove(&id);
    match gone {
        Some(s) => {
            deliver(
                &s.inbox,
                Incoming::Closed("the client deleted its session".into()),
            )
            .await;
            StatusCode::NO_CONTENT.into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such session\n").into_response(),
    }
}

async fn stream(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    let Some(id) = session_of(&headers) else {
        return (StatusCode::BAD_REQUEST, "no X-Session-Id header\n").into_response();
    };
    let (out, streams) = match shared.sessions().get(&id) {
        Some(s) => (s.out.clone(), s.streams.clone()),
        None => return (StatusCode::NOT_FOUND, "no such session\n").into_response(),
    };
    let mine = streams.fetch_add(1, Ordering::SeqCst) + 1;
    let guard = out.lock_owned().await;
    let hold = StreamHold {
        shared: shared.clone(),
        id: id.clone(),
        streams,
        mine,
    };
    let events = futures::stream::unfold(
        (guard, 0u64, shared, id, hold),
        |(mut guard, n, shared, id, hold)| async move {
            match guard.recv().await {
                Some(text) => {
                    let event = Event::default().id(n.to_string()).data(text);
                    Some((Ok::<_, Infallible>(event), (guard, n + 1, shared, id, hold)))
                }
                None => {
                    // The script closed: the session is over.
                    shared.sessions().remove(&id);
                    None
                }
            }
        },
    );
    Sse::new(events).into_response()
}

/// A fresh 32-hex-digit id.
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{now:x}{:08x}", N.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Link;
    use crate::link::http::HttpTarget;
    use hyper::Method;

    /// Opens a session and its event stream; the script's link.
    async fn session_with_stream(
        server: &mut Server,
        target: &HttpTarget,
    ) -> (Link, String, crate::link::http::EventStream) {
        let id = target.open_session().await.unwrap();
        let (link, _) = server.accept(Duration::from_secs(2)).await.unwrap();
        let stream = target.stream(&id, None).await.unwrap();
        assert_eq!(stream.status, 200);
        (link, id, stream)
    }

    #[tokio::test]
    async fn a_dropped_stream_not_reopened_closes_the_session() {
        let mut server = listen(Transport::Http).await.unwrap();
        let target = HttpTarget::new(server.url(), None).unwrap();
        let (mut link, _, stream) = session_with_stream(&mut server, &target).await;
        drop(stream);
        let wait = STREAM_GRACE + Duration::from_secs(3);
        let got = link.recv(wait).await;
        assert!(
            matches!(&got, Some(Incoming::Closed(why)) if why.contains("dropped its event stream")),
            "{got:?}"
        );
    }

    #[tokio::test]
    async fn a_stream_reopened_in_time_keeps_the_session() {
        let mut server = listen(Transport::Http).await.unwrap();
        let target = HttpTarget::new(server.url(), None).unwrap();
        let (mut link, id, stream) = session_with_stream(&mut server, &target).await;
        drop(stream);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut again = target.stream(&id, None).await.unwrap();
        assert_eq!(again.status, 200);
        let got = link.recv(STREAM_GRACE + Duration::from_secs(1)).await;
        assert_eq!(got, None, "the session closed although a stream came back");
        link.send("{\"type\":\"ping\"}".into()).await.unwrap();
        let item = tokio::time::timeout(Duration::from_secs(2), again.events.recv()).await;
        assert!(matches!(
            item,
            Ok(Some(crate::link::http::StreamItem::Event(_)))
        ));
    }

    #[tokio::test]
    async fn a_new_http_session_is_named_in_the_header_and_the_body() {
        let mut server = listen(Transport::Http).await.unwrap();
        let target = HttpTarget::new(server.url(), None).unwrap();
        let reply = target
            .call(Method::POST, "/session", None, bytes::Bytes::new())
            .await
            .unwrap();
        assert_eq!(reply.status, 201);
        let header = reply.session.expect("an X-Session-Id header");
        let body: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
        assert_eq!(body["session_id"], header.as_str());
        assert!(reply.content_type.unwrap().starts_with("application/json"));
        assert!(server.accept(Duration::from_secs(2)).await.is_some());
    }
}
