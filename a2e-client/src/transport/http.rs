//! HTTP + Server-Sent Events, the reference's network protocol:
//! `POST /session` opens a session (its id in `X-Session-Id`), `GET /stream`
//! carries host → agent messages as SSE `data:` lines, `POST /send` carries
//! agent → host messages (queued ones are batched as NDJSON lines).

use std::sync::Arc;
use std::time::Duration;

use a2e_proto::Message;
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyDataStream, BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use sse_stream::SseByteStream;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::Guard;
use crate::conn::Shared;
use crate::error::{ClientError, ClientResult};

/// The header naming the session.
pub const SESSION_HEADER: &str = "x-session-id";

/// Largest batch of queued messages sent in one `POST /send`.
const MAX_BATCH: usize = 256 * 1024;

#[derive(Clone)]
struct Target {
    /// `host:port` to connect to and send as `Host`.
    authority: String,
    /// Path prefix without a trailing slash.
    base: String,
    token: String,
}

impl Target {
    fn parse(url: &str, token: &str) -> ClientResult<Self> {
        let uri: Uri = url
            .parse()
            .map_err(|e| ClientError::Invalid(format!("bad URL `{url}`: {e}")))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => {
                return Err(ClientError::Invalid(format!(
                    "scheme `{other}` is not supported; use http://"
                )));
            }
            None => return Err(ClientError::Invalid(format!("`{url}` has no scheme"))),
        }
        let Some(authority) = uri.authority() else {
            return Err(ClientError::Invalid(format!("`{url}` has no host")));
        };
        let authority = if authority.port().is_some() {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        Ok(Self {
            authority,
            base: uri.path().trim_end_matches('/').to_owned(),
            token: token.to_owned(),
        })
    }

    async fn connect(&self) -> ClientResult<SendRequest<Full<Bytes>>> {
        let stream = TcpStream::connect(&self.authority).await.map_err(|e| {
            ClientError::transport(format!("cannot connect to {}", self.authority), e)
        })?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ClientError::transport("HTTP handshake", e))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("HTTP connection ended: {e}");
            }
        });
        Ok(sender)
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        session: Option<&str>,
        body: Bytes,
    ) -> ClientResult<Request<Full<Bytes>>> {
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("host", &self.authority);
        if let Some(session) = session {
            builder = builder.header(SESSION_HEADER, session);
        }
        if !self.token.is_empty() {
            builder = builder.header("authorization", format!("Bearer {}", self.token));
        }
        builder
            .body(Full::new(body))
            .map_err(|e| ClientError::Invalid(e.to_string()))
    }
}

/// Fails with the host's answer when it is not a success.
async fn check(
    resp: hyper::Response<hyper::body::Incoming>,
    what: &str,
) -> ClientResult<hyper::Response<hyper::body::Incoming>> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    if status == StatusCode::UNAUTHORIZED {
        return Err(ClientError::HandshakeRefused {
            reason: "auth_failed".into(),
        });
    }
    let body = resp
        .into_body()
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    Err(ClientError::transport_msg(format!(
        "{what}: the host answered HTTP {status}: {}",
        body.trim()
    )))
}

/// Opens a session at `url` (`http://host:port[/prefix]`) and starts streaming.
pub(crate) async fn connect(
    url: &str,
    token: &str,
    shared: &Arc<Shared>,
    out: mpsc::Receiver<Message>,
    max: usize,
) -> ClientResult<Guard> {
    let target = Target::parse(url, token)?;
    let mut sender = target.connect().await?;
    let resp = sender
        .send_request(target.request(Method::POST, "/session", None, Bytes::new())?)
        .await
        .map_err(|e| ClientError::transport("POST /session", e))?;
    let resp = check(resp, "POST /session").await?;
    let session = resp
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| ClientError::transport_msg("POST /session: no X-Session-Id header"))?;
    let _ = resp.into_body().collect().await;

    let mut streamer = target.connect().await?;
    let mut request = target.request(Method::GET, "/stream", Some(&session), Bytes::new())?;
    request.headers_mut().insert(
        "accept",
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    let resp = streamer
        .send_request(request)
        .await
        .map_err(|e| ClientError::transport("GET /stream", e))?;
    let resp = check(resp, "GET /stream").await?;

    let read = tokio::spawn(read_events(resp.into_body(), shared.clone(), max, streamer));
    let write = tokio::spawn(write_loop(
        target,
        sender,
        session,
        out,
        shared.clone(),
        max,
    ));
    Ok(Guard {
        tasks: vec![read, write],
        child: None,
    })
}

/// Bytes without a line end that the event stream may send before it is cut
/// off: an SSE line never needs more than the largest message plus its field name.
fn line_limit(max: usize) -> usize {
    max.saturating_add(16)
}

/// Reads the SSE stream (`sse-stream` parses it; a line longer than the largest
/// message is refused before the parser buffers it) and delivers each event's data.
async fn read_events(
    body: hyper::body::Incoming,
    shared: Arc<Shared>,
    max: usize,
    _conn: SendRequest<Full<Bytes>>,
) {
    let limit = line_limit(max);
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
                        "the host sent a line over {max} bytes"
                    )))
                } else {
                    Ok(chunk)
                }
            });
        std::future::ready(Some(item))
    });
    let mut events = std::pin::pin!(SseByteStream::new(bounded));
    let reason = loop {
        match events.next().await {
            Some(Ok(event)) => {
                // Comments (keep-alives) and `event:`/`id:`/`retry:`-only blocks carry no data.
                let Some(data) = event.data else { continue };
                if data.len() > max {
                    break format!("the host sent an event over {max} bytes");
                }
                super::receive(&shared, data.as_bytes(), max);
            }
            Some(Err(e)) => break format!("the event stream failed: {e}"),
            None => break "the host closed the event stream".to_owned(),
        }
    };
    shared.fail_all(&reason);
}

async fn write_loop(
    target: Target,
    mut sender: SendRequest<Full<Bytes>>,
    session: String,
    mut out: mpsc::Receiver<Message>,
    shared: Arc<Shared>,
    max: usize,
) {
    let batch_limit = MAX_BATCH.min(max);
    loop {
        let msg = tokio::select! {
            msg = out.recv() => msg,
            () = shared.stop.cancelled() => None,
        };
        let Some(msg) = msg else { break };
        let mut body = msg.to_line();
        while body.len() < batch_limit {
            match out.try_recv() {
                Ok(more) => body.extend_from_slice(&more.to_line()),
                Err(_) => break,
            }
        }
        let body = Bytes::from(body);
        if let Err(e) = post(&target, &mut sender, &session, body).await {
            shared.fail_all(&format!("sending to the host failed: {e}"));
            return;
        }
    }
    // Tell the host this session is over; it closes the event stream.
    if let Ok(request) = target.request(Method::DELETE, "/session", Some(&session), Bytes::new()) {
        let _ = tokio::time::timeout(Duration::from_secs(2), sender.send_request(request)).await;
    }
}

/// One `POST /send`; reconnects once when the kept-alive connection has gone.
async fn post(
    target: &Target,
    sender: &mut SendRequest<Full<Bytes>>,
    session: &str,
    body: Bytes,
) -> ClientResult<()> {
    if sender.ready().await.is_err() {
        *sender = target.connect().await?;
    }
    let request = target.request(Method::POST, "/send", Some(session), body)?;
    let resp = sender
        .send_request(request)
        .await
        .map_err(|e| ClientError::transport("POST /send", e))?;
    let resp = check(resp, "POST /send").await?;
    let _ = resp.into_body().collect().await;
    Ok(())
}
