//! A provider reached over MCP Streamable HTTP: another host's
//! `a2e serve --mcp-http ADDR`, its `http://…/mcp` endpoint. Every message is
//! POSTed with `Authorization: Bearer <token>`; a request's answer (a JSON body
//! or an SSE stream) is delivered as it comes. After `initialize` the session's
//! own SSE stream (a GET) carries the provider's notifications
//! (`acmp/heartbeat`, `acmp/streamChunk`): an MCP server sends notifications
//! that answer no request there, not on the request's stream. So that a
//! streamed output is complete before its result, a result with
//! `output_streamed: true` is held until the task's final chunk came (or
//! [`FINAL_CHUNK_WAIT`] passed). A refused request (401, 404, …) is answered
//! with a JSON-RPC error naming the HTTP status; a session the server forgot
//! (404) or a transport failure closes the connection (the next call opens a
//! new one). The session is deleted when the connection ends.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use acmp_dag::remote::{Connection, Connector};
use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinSet;

/// How long a streamed result waits for its final chunk on the session's stream.
pub const FINAL_CHUNK_WAIT: Duration = Duration::from_secs(5);

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// Connects to a provider's MCP Streamable HTTP endpoint.
#[derive(Debug, Clone)]
pub struct HttpConnector {
    url: String,
    token: Option<String>,
}

impl HttpConnector {
    /// A connector to `url` (`http://…/mcp`), presenting `token` as a bearer token.
    pub fn new(url: impl Into<String>, token: Option<String>) -> Self {
        Self {
            url: url.into(),
            token,
        }
    }
}

/// One MCP session: what every request of it carries, and the final chunks seen.
struct Session {
    client: Client,
    url: String,
    token: Option<String>,
    id: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    finals: Mutex<HashSet<String>>,
    final_seen: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why a POST brought no answer.
enum Failed {
    /// The server answered with this status.
    Status(StatusCode),
    /// The transport failed.
    Transport(String),
}

impl Session {
    fn headers(&self, accept: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        if let Some(token) = &self.token
            && let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}"))
        {
            headers.insert(AUTHORIZATION, value);
        }
        for (name, value) in [
            (SESSION_HEADER, lock(&self.id).clone()),
            (VERSION_HEADER, lock(&self.version).clone()),
        ] {
            if let Some(value) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
                headers.insert(name, value);
            }
        }
        headers
    }

    /// POSTs one message and delivers what comes back; `accepted` fires when the
    /// server took it (its answer's headers came).
    async fn post(
        &self,
        msg: &Value,
        conn: &Weak<Connection>,
        accepted: Option<oneshot::Sender<()>>,
    ) -> Result<(), Failed> {
        let response = self
            .client
            .post(&self.url)
            .headers(self.headers("application/json, text/event-stream"))
            .header(CONTENT_TYPE, "application/json")
            .body(msg.to_string())
            .send()
            .await
            .map_err(|e| Failed::Transport(a2e_http::describe(&e)))?;
        if !response.status().is_success() {
            return Err(Failed::Status(response.status()));
        }
        if let Some(id) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            *lock(&self.id) = Some(id.to_owned());
        }
        if let Some(accepted) = accepted {
            let _ = accepted.send(());
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if is_sse {
            self.read_events(response, conn).await;
        } else if response.status() != StatusCode::ACCEPTED {
            let body = response
                .text()
                .await
                .map_err(|e| Failed::Transport(a2e_http::describe(&e)))?;
            if !body.trim().is_empty() {
                self.deliver(&body, conn).await;
            }
        }
        Ok(())
    }

    /// Delivers every event of an SSE body until it ends.
    async fn read_events(&self, response: reqwest::Response, conn: &Weak<Connection>) {
        let mut stream = response.bytes_stream();
        let mut buffer = Vec::new();
        while let Some(Ok(bytes)) = stream.next().await {
            buffer.extend_from_slice(&bytes);
            while let Some((event, rest)) = split_event(&buffer) {
                let data = event_data(event);
                buffer = rest.to_vec();
                if !data.is_empty() {
                    self.deliver(&data, conn).await;
                }
            }
        }
    }

    /// Delivers one message, holding a streamed result until its final chunk came.
    async fn deliver(&self, text: &str, conn: &Weak<Connection>) {
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            tracing::debug!("a provider sent something that is not JSON over MCP HTTP");
            return;
        };
        if let Some(version) = message
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
        {
            // `initialize`'s answer: the version goes with every later request.
            *lock(&self.version) = Some(version.to_owned());
        }
        let final_chunk_of = (message.get("method").and_then(Value::as_str)
            == Some("acmp/streamChunk")
            && message.pointer("/params/final") == Some(&Value::Bool(true)))
        .then(|| message.pointer("/params/task_id").and_then(Value::as_str))
        .flatten()
        .map(str::to_owned);
        if message.pointer("/result/output_streamed") == Some(&Value::Bool(true))
            && let Some(task) = message.pointer("/result/task_id").and_then(Value::as_str)
        {
            let seen = async {
                loop {
                    let notified = self.final_seen.notified();
                    if lock(&self.finals).remove(task) {
                        return;
                    }
                    notified.await;
                }
            };
            let _ = tokio::time::timeout(FINAL_CHUNK_WAIT, seen).await;
        }
        if let Some(conn) = conn.upgrade() {
            conn.deliver(message);
        }
        // Marked only once delivered, so that the held result comes after it.
        if let Some(task) = final_chunk_of {
            lock(&self.finals).insert(task);
            self.final_seen.notify_waiters();
        }
    }

    /// Follows the session's own stream until the connection ends.
    async fn listen(self: Arc<Self>, conn: Weak<Connection>) {
        loop {
            let response = self
                .client
                .get(&self.url)
                .headers(self.headers("text/event-stream"))
                .send()
                .await;
            match response {
                Ok(r) if r.status().is_success() => self.read_events(r, &conn).await,
                Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                Ok(r) => {
                    tracing::debug!("the provider's MCP stream: HTTP {}", r.status());
                    if let Some(conn) = conn.upgrade() {
                        conn.close();
                    }
                    return;
                }
                Err(e) => tracing::debug!("the provider's MCP stream: {}", a2e_http::describe(&e)),
            }
            if conn.upgrade().is_none_or(|c| c.is_closed()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Ends the session on the server (best effort).
    async fn delete(&self) {
        if lock(&self.id).is_none() {
            return;
        }
        let request = self
            .client
            .request(Method::DELETE, &self.url)
            .headers(self.headers("application/json"))
            .send();
        let _ = tokio::time::timeout(Duration::from_secs(2), request).await;
    }
}

/// The first event of an SSE buffer and what follows it, once a blank line ended it.
fn split_event(buffer: &[u8]) -> Option<(&[u8], &[u8])> {
    let find = |end: &[u8]| {
        buffer
            .windows(end.len())
            .position(|w| w == end)
            .map(|at| (at, at + end.len()))
    };
    let (end, next) = match (find(b"\n\n"), find(b"\r\n\r\n")) {
        (Some(lf), Some(crlf)) => lf.min(crlf),
        (lf, crlf) => lf.or(crlf)?,
    };
    Some((buffer.get(..end)?, buffer.get(next..)?))
}

/// The `data:` lines of an event, joined.
fn event_data(event: &[u8]) -> String {
    let text = String::from_utf8_lossy(event);
    let mut data = Vec::new();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(rest) = line.strip_prefix("data:") {
            data.push(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    data.join("\n")
}

/// What a POST that failed answers: a request gets a JSON-RPC error; a forgotten
/// session or a failed transport closes the connection.
fn failed(msg: &Value, failure: Failed, conn: &Weak<Connection>) {
    let Some(conn) = conn.upgrade() else { return };
    let is_request = msg.get("method").is_some() && msg.get("id").is_some();
    let (message, close) = match failure {
        Failed::Status(status)
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN =>
        {
            (
                format!(
                    "the provider {}",
                    acmp_dag::remote::refused_token(status.as_u16())
                ),
                false,
            )
        }
        Failed::Status(status) => (
            format!("the provider answered HTTP {status}"),
            status == StatusCode::NOT_FOUND,
        ),
        Failed::Transport(e) => (e, true),
    };
    if close {
        tracing::debug!("closing the MCP HTTP connection: {message}");
        conn.close();
    } else if is_request {
        let task_id = msg.pointer("/params/task_id").cloned();
        conn.deliver(json!({"jsonrpc": "2.0", "id": msg["id"],
            "error": {"code": -33099, "message": message, "data": {"task_id": task_id}}}));
    }
}

impl Connector for HttpConnector {
    fn connect(&self) -> BoxFuture<'static, Result<Arc<Connection>, String>> {
        let url = self.url.clone();
        let token = self.token.clone();
        Box::pin(async move {
            let client = a2e_http::ClientOptions::default()
                .pool(a2e_http::Pool::Reuse)
                .build()
                .map_err(|e| format!("{url}: {e}"))?;
            let session = Arc::new(Session {
                client,
                url,
                token,
                id: Mutex::new(None),
                version: Mutex::new(None),
                finals: Mutex::new(HashSet::new()),
                final_seen: Notify::new(),
            });
            let (tx, rx) = mpsc::unbounded_channel::<Value>();
            let conn = Arc::new(Connection::new(tx));
            tokio::spawn(send_all(session, rx, Arc::downgrade(&conn)));
            Ok(conn)
        })
    }
}

/// POSTs every outgoing message in order: each is sent once the server took the
/// one before (an `acmp/inputChunk` or `acmp/cancel` never overtakes its
/// invoke), requests' answers are read side by side (an `acmp/invoke` waits for
/// its task). Ends with the connection, deleting the session.
async fn send_all(
    session: Arc<Session>,
    mut rx: mpsc::UnboundedReceiver<Value>,
    conn: Weak<Connection>,
) {
    let mut tasks = JoinSet::new();
    while let Some(msg) = rx.recv().await {
        while tasks.try_join_next().is_some() {}
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let is_request = !method.is_empty() && msg.get("id").is_some();
        if is_request && method != "initialize" {
            let (session, conn) = (session.clone(), conn.clone());
            let (accepted, taken) = oneshot::channel();
            tasks.spawn(async move {
                if let Err(e) = session.post(&msg, &conn, Some(accepted)).await {
                    failed(&msg, e, &conn);
                }
            });
            let _ = taken.await;
            continue;
        }
        if let Err(e) = session.post(&msg, &conn, None).await {
            failed(&msg, e, &conn);
        } else if method == "notifications/initialized" {
            tasks.spawn(session.clone().listen(conn.clone()));
        }
    }
    tasks.abort_all();
    session.delete().await;
}

#[cfg(test)]
mod tests {
    use super::{event_data, split_event};

    #[test]
    fn an_event_ends_at_its_blank_line_and_the_rest_is_kept() {
        assert_eq!(split_event(b"data: {}"), None);
        assert_eq!(split_event(b"data: {}\n"), None);
        let (event, rest) = split_event(b"data: 1\n\ndata: 2").unwrap();
        assert_eq!((event, rest), (&b"data: 1"[..], &b"data: 2"[..]));
        let (event, rest) = split_event(b"data: 1\r\n\r\ndata: 2\r\n\r\n").unwrap();
        assert_eq!((event, rest), (&b"data: 1"[..], &b"data: 2\r\n\r\n"[..]));
        // Whichever blank line comes first ends the event.
        let (event, _) = split_event(b"data: a\n\ndata: b\r\n\r\n").unwrap();
        assert_eq!(event, b"data: a");
        let (event, rest) = split_event(b"\n\n").unwrap();
        assert!(event.is_empty() && rest.is_empty());
    }

    #[test]
    fn data_lines_are_joined_and_other_fields_ignored() {
        assert_eq!(
            event_data(b"event: message\nid: 7\ndata: {\"a\":1}"),
            "{\"a\":1}"
        );
        assert_eq!(
            event_data(b"data: line one\ndata:line two"),
            "line one\nline two"
        );
        assert_eq!(event_data(b"data: x\r\nretry: 10\r"), "x");
        assert_eq!(event_data(b": a comment\nevent: ping"), "");
        // Only one leading space is the separator.
        assert_eq!(event_data(b"data:  spaced"), " spaced");
        // Bytes that are not UTF-8 do not panic.
        assert_eq!(event_data(b"data: \xff"), "\u{fffd}");
    }

    #[test]
    fn a_stream_cut_anywhere_gives_the_same_events() {
        let body = b"event: message\ndata: {\"n\":1}\n\n: keep-alive\n\ndata: {\"n\":2}\r\n\r\n";
        for cut in 0..body.len() {
            let mut buffer = Vec::new();
            let mut events = Vec::new();
            for part in [&body[..cut], &body[cut..]] {
                buffer.extend_from_slice(part);
                while let Some((event, rest)) = split_event(&buffer) {
                    let data = event_data(event);
                    buffer = rest.to_vec();
                    if !data.is_empty() {
                        events.push(data);
                    }
                }
            }
            assert_eq!(events, ["{\"n\":1}", "{\"n\":2}"], "cut at {cut}");
        }
    }
}
