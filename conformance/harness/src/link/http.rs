//! HTTP + Server-Sent Events, the reference's network protocol: `POST
//! /session` opens a session (`X-Session-Id`), `POST /send` carries messages
//! to the host, `GET /stream` carries the host's as SSE `data:` lines.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyDataStream, BodyExt, Full, Limited};
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use sse_stream::SseByteStream;
use tokio::sync::mpsc;

use super::{Ends, Incoming, Link, MAX_MESSAGE_BYTES, deliver};

/// The header naming the session.
pub const SESSION_HEADER: &str = "x-session-id";

/// How long one HTTP exchange (up to its headers) may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest response body read (error texts, not streams).
const MAX_BODY: usize = 1024 * 1024;

/// An HTTP+SSE host at a base URL.
#[derive(Clone, Debug)]
pub struct HttpTarget {
    base: String,
    token: Option<String>,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// A response read whole.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The session header, when present.
    pub session: Option<String>,
    /// `Content-Type`, when present.
    pub content_type: Option<String>,
    /// The body (at most 1 MiB).
    pub body: String,
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its `id:`.
    pub id: Option<String>,
    /// Its `data:` (lines joined by `\n`).
    pub data: Option<String>,
}

/// What an open event stream yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamItem {
    /// An event.
    Event(Event),
    /// The stream ended, and why.
    End(String),
}

/// An open `GET /stream`.
#[derive(Debug)]
pub struct EventStream {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// Its events.
    pub events: mpsc::Receiver<StreamItem>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HttpTarget {
    /// The host at `url` (`http://host:port[/prefix]`); `token` is sent as a
    /// bearer token when given.
    pub fn new(url: &str, token: Option<&str>) -> Result<Self, String> {
        if !url.starts_with("http://") {
            return Err(format!("`{url}` is not an http:// URL"));
        }
        Ok(Self {
            base: url.trim_end_matches('/').to_owned(),
            token: token.map(str::to_owned),
            client: Client::builder(TokioExecutor::new()).build_http(),
        })
    }

    /// The same host with another token (`None`: no `Authorization` header).
    pub fn with_token(&self, token: Option<&str>) -> Self {
        Self {
            token: token.map(str::to_owned),
            ..self.clone()
        }
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        session: Option<&str>,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, String> {
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(session) = session {
            builder = builder.header(SESSION_HEADER, session);
        }
        if let Some(token) = &self.token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(Full::new(body)).map_err(|e| e.to_string())
    }

    /// One exchange, its body read whole.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        session: Option<&str>,
        body: impl Into<Bytes>,
    ) -> Result<Reply, String> {
        let what = format!("{method} {path}");
        let request = self.request(method, path, session, &[], body.into())?;
        let resp = tokio::time::timeout(EXCHANGE_TIMEOUT, self.client.request(request))
            .await
            .map_err(|_| format!("{what}: no answer within {EXCHANGE_TIMEOUT:?}"))?
            .map_err(|e| format!("{what}: {e}"))?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let session = header(SESSION_HEADER);
        let content_type = header("content-type");
        let body = tokio::time::timeout(
            EXCHANGE_TIMEOUT,
            Limited::new(resp.into_body(), MAX_BODY).collect(),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
        Ok(Reply {
            status,
            session,
            content_type,
            body,
        })
    }

    /// `POST /session`: the new session's id, from the `X-Session-Id` header
    /// (or, as the Python reference sends it, a JSON body's `session_id`;
    /// `transport.http.session` checks for the header).
    pub async fn open_session(&self) -> Result<String, String> {
        let reply = self
            .call(Method::POST, "/session", None, Bytes::new())
            .await?;
        if !(200..300).contains(&reply.status) {
            return Err(format!(
                "POST /session answered HTTP {}: {}",
                reply.status,
                reply.body.trim()
            ));
        }
        if let Some(id) = reply.session {
            return Ok(id);
        }
        serde_json::from_str::<serde_json::Value>(&reply.body)
            .ok()
            .and_then(|v| {
                v.get("session_id")
                    .and_then(|s| s.as_str())
                    .map(str::to_owned)
            })
            .ok_or_else(|| "POST /session: no X-Session-Id header".to_owned())
    }

    /// `GET /stream` of `session`, resuming after `last_event_id` when given.
    pub async fn stream(
        &self,
        session: &str,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, String> {
        let mut headers = vec![("accept", "text/event-stream")];
        if let Some(id) = last_event_id {
            headers.push(("last-event-id", id));
        }
        let request = self.request(
            Method::GET,
            "/stream",
            Some(session),
            &headers,
            Bytes::new(),
        )?;
        let resp = tokio::time::timeout(EXCHANGE_TIMEOUT, self.client.request(request))
            .await
            .map_err(|_| format!("GET /stream: no answer within {EXCHANGE_TIMEOUT:?}"))?
            .map_err(|e| format!("GET /stream: {e}"))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (tx, events) = mpsc::channel(1024);
        let task = tokio::spawn(read_events(resp.into_body(), tx));
        Ok(EventStream {
            status,
            content_type,
            events,
            task,
        })
    }
}

/// Parses the event stream; a line longer than the largest message ends it.
async fn read_events(body: hyper::body::Incoming, tx: mpsc::Sender<StreamItem>) {
    let limit = MAX_MESSAGE_BYTES + 64;
    let bounded = BodyDataStream::new(body).scan(0usize, move |run, chunk| {
        let item = chunk
            .map_err(|e| std::io::Error::other(format!("the event stream failed: {e}")))
            .and_then(|chunk: Bytes| {
                *run = match chunk.iter().rposition(|b| *b == b'\n') {
                    Some(at) => chunk.len() - at - 1,
                    None => run.saturating_add(chunk.len()),
                };
                if *run > limit {
                    Err(std::io::Error::other(format!(
                        "an event stream line over {limit} bytes"
                    )))
                } else {
                    Ok(chunk)
                }
            });
        std::future::ready(Some(item))
    });
    let mut events = std::pin::pin!(SseByteStream::new(bounded));
    let end = loop {
        match events.next().await {
            Some(Ok(sse)) => {
                if sse.data.is_none() && sse.id.is_none() {
                    continue;
                }
                let event = Event {
                    id: sse.id,
                    data: sse.data,
                };
                if tx.send(StreamItem::Event(event)).await.is_err() {
                    return;
                }
            }
            Some(Err(e)) => break format!("the event stream failed: {e}"),
            None => break "the host closed the event stream".to_owned(),
        }
    };
    let _ = tx.send(StreamItem::End(end)).await;
}

/// A link over a new HTTP+SSE session at `url`.
pub async fn connect(url: &str, token: Option<&str>) -> Result<Link, String> {
    let target = HttpTarget::new(url, token)?;
    let session = target.open_session().await?;
    let stream = target.stream(&session, None).await?;
    if !(200..300).contains(&stream.status) {
        return Err(format!("GET /stream answered HTTP {}", stream.status));
    }
    let (mut link, Ends { out, inbox }) = Link::pair();
    link.hold(tokio::spawn(forward_events(stream, inbox.clone())));
    link.hold(tokio::spawn(post_loop(target, session, out, inbox)));
    Ok(link)
}

async fn forward_events(mut stream: EventStream, inbox: mpsc::Sender<Incoming>) {
    while let Some(item) = stream.events.recv().await {
        let (next, end) = match item {
            StreamItem::Event(Event {
                data: Some(data), ..
            }) => (Incoming::Text(data), false),
            StreamItem::Event(_) => continue,
            StreamItem::End(why) => (Incoming::Closed(why), true),
        };
        if !deliver(&inbox, next).await || end {
            return;
        }
    }
}

/// Posts each message in order; `DELETE /session` when the suite closes.
async fn post_loop(
    target: HttpTarget,
    session: String,
    mut out: mpsc::Receiver<String>,
    inbox: mpsc::Sender<Incoming>,
) {
    while let Some(text) = out.recv().await {
        match target
            .call(Method::POST, "/send", Some(&session), text)
            .await
        {
            Ok(reply) if (200..300).contains(&reply.status) => {}
            Ok(reply) => {
                let why = format!(
                    "POST /send answered HTTP {}: {}",
                    reply.status,
                    reply.body.trim()
                );
                deliver(&inbox, Incoming::Closed(why)).await;
                return;
            }
            Err(e) => {
                deliver(&inbox, Incoming::Closed(e)).await;
                return;
            }
        }
    }
    let _ = target
        .call(Method::DELETE, "/session", Some(&session), Bytes::new())
        .await;
}
