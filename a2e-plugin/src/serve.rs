//! One plugin's tools served over stdio: the process a host's `[[plugins]]`
//! entry starts, and the smallest A2E host an agent can talk to.
//!
//! [`serve`] speaks the A2E core protocol on standard input and output for
//! one [`ToolPlugin`]: `handshake/req`, `tool/list/req`, `tool/call/req`
//! (streaming `tool/event`s when asked), `ping` and `shutdown`. Everything else
//! is refused with an `error` naming why. The protocol it answers, which a
//! plugin in any language answers the same way, is the repository's
//! `docs/plugin-protocol.md`.
//!
//! Calls run concurrently, each under its request's timeout, and are cancelled
//! when the session ends.

use std::sync::Arc;
use std::time::Duration;

use a2e_proto::{
    A2ECapability, Capability, ErrorCode, ErrorMessage, HandshakeRequest, HandshakeResponse,
    Message, Pong, Response, ToolCallRequest, ToolCallResponse, ToolEvent, ToolListRequest,
    ToolListResponse, ToolResult,
};
use serde_json::Value;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::{CallContext, DynToolPlugin, Error, EventSink, ToolOutput, ToolPlugin};

#[cfg(test)]
mod tests;

/// Longest request line read, in bytes; a longer one is refused and skipped.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Most calls in flight at once (the handshake's `max_parallel`).
const MAX_PARALLEL: u32 = 16;
/// Longest timeout a request may ask for, in seconds (one day).
const MAX_TIMEOUT_SECS: u64 = 86_400;
/// How long a stopped call (timed out, cancelled) may take to wind down
/// before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_millis(200);
/// Most events a result lists (later ones are still streamed).
const MAX_RESULT_EVENTS: usize = 100;

/// Serves `plugin`'s tools on standard input and output until the input ends
/// or a `shutdown` arrives: a plugin binary's `main` ends with it.
///
/// Up to 16 calls run at once (the handshake's `max_parallel`), each under
/// its request's `timeout` (at most a day); a request line longer than
/// 16 MiB is refused with `invalid_message` and skipped. It runs its own
/// runtime, so a plugin crate needs no dependency on one.
/// Called from inside an async runtime (a `#[tokio::main]`), it serves from a
/// thread of its own and blocks the caller until it is done.
///
/// ```no_run
/// fn main() -> std::io::Result<()> {
///     a2e_plugin::serve(a2e_plugin::Toolbox::new("notes"))
/// }
/// ```
pub fn serve(plugin: impl ToolPlugin) -> std::io::Result<()> {
    let run = move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?
            .block_on(serve_io(plugin, tokio::io::stdin(), tokio::io::stdout()))
    };
    if tokio::runtime::Handle::try_current().is_err() {
        return run();
    }
    // A runtime cannot be started on a thread that drives another.
    std::thread::scope(|scope| {
        scope
            .spawn(run)
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the plugin's server panicked")))
    })
}

/// Serves `plugin`'s tools on any pair of byte streams (what [`serve`] does
/// on standard input and output).
async fn serve_io<R, W>(plugin: impl ToolPlugin, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let plugin: Arc<dyn DynToolPlugin> = Arc::new(plugin);
    let (tx, rx) = mpsc::channel::<Message>(256);
    let writer = tokio::spawn(write_all(rx, output));
    let session = CancellationToken::new();
    let mut state = Session {
        plugin,
        out: tx,
        session_id: String::new(),
        calls: JoinSet::new(),
        cancel: session.clone(),
    };
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    let mut drain = Duration::ZERO;
    loop {
        while state.calls.try_join_next().is_some() {}
        let got = read_line(&mut input, &mut line).await?;
        match got {
            Line::End => break,
            Line::TooLong => {
                let message = format!("a request line is longer than {MAX_LINE_BYTES} bytes");
                state
                    .send(ErrorMessage::new("", ErrorCode::INVALID_MESSAGE, message).into())
                    .await;
            }
            Line::Text => {
                if let Some(timeout) = state.handle(&line).await {
                    drain = Duration::from_secs(timeout.min(MAX_TIMEOUT_SECS));
                    break;
                }
            }
        }
    }
    // In-flight calls may finish within the drain time (none at end of input).
    let calls = &mut state.calls;
    let _ = tokio::time::timeout(drain, async { while calls.join_next().await.is_some() {} }).await;
    session.cancel();
    while state.calls.join_next().await.is_some() {}
    drop(state);
    writer.await.map_err(std::io::Error::other)?
}

/// What one read gave.
enum Line {
    /// A line (without its newline) is in the buffer.
    Text,
    /// A line over the limit was skipped.
    TooLong,
    /// The input ended.
    End,
}

/// Reads one line into `buf`, bounded by [`MAX_LINE_BYTES`].
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<Line> {
    buf.clear();
    let mut limited = AsyncReadExt::take(&mut *input, MAX_LINE_BYTES as u64 + 1);
    let n = limited.read_until(b'\n', buf).await?;
    if n == 0 {
        return Ok(Line::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > MAX_LINE_BYTES {
        // Skip the rest of the long line.
        let mut rest = Vec::new();
        loop {
            rest.clear();
            let mut chunk = AsyncReadExt::take(&mut *input, 64 * 1024);
            if chunk.read_until(b'\n', &mut rest).await? == 0 || rest.last() == Some(&b'\n') {
                return Ok(Line::TooLong);
            }
        }
    }
    Ok(Line::Text)
}

async fn write_all<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<Message>,
    mut output: W,
) -> std::io::Result<()> {
    while let Some(msg) = rx.recv().await {
        output.write_all(&msg.to_line()).await?;
        if rx.is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await
}

struct Session {
    plugin: Arc<dyn DynToolPlugin>,
    out: mpsc::Sender<Message>,
    /// Empty until the handshake.
    session_id: String,
    calls: JoinSet<()>,
    cancel: CancellationToken,
}

impl Session {
    async fn send(&self, msg: Message) {
        let _ = self.out.send(msg).await;
    }

    async fn refuse(&self, req_id: &str, code: ErrorCode, message: impl Into<String>) {
        self.send(ErrorMessage::new(req_id, code, message).into())
            .await;
    }

    /// Handles one line; `Some(drain seconds)` when the session is to end.
    async fn handle(&mut self, line: &[u8]) -> Option<u64> {
        let msg = match a2e_proto::decode(line) {
            Ok(msg) => msg,
            Err(e) => {
                let _ = self.out.send(e.to_error_message().into()).await;
                return None;
            }
        };
        let id = msg.id().to_owned();
        match msg {
            Message::HandshakeRequest(req) => self.handshake(req).await,
            Message::Ping(_) => {
                let pong = Pong {
                    req_id: id,
                    ..Pong::default()
                };
                self.send(pong.into()).await;
            }
            Message::Shutdown(req) => return Some(req.timeout),
            _ if self.session_id.is_empty() => {
                self.refuse(
                    &id,
                    ErrorCode::UNAUTHORIZED,
                    "no session: send handshake/req first",
                )
                .await;
            }
            Message::ToolListRequest(req) => self.list(req).await,
            Message::ToolCallRequest(req) => self.call(req).await,
            Message::Unknown(_) => {
                self.refuse(&id, ErrorCode::INVALID_MESSAGE, "unknown message type")
                    .await;
            }
            other => {
                let what = format!(
                    "`{}` is not served here: this host offers tools only",
                    other.type_str()
                );
                self.refuse(&id, ErrorCode::UNAUTHORIZED, what).await;
            }
        }
        None
    }

    async fn handshake(&mut self, req: HandshakeRequest) {
        if !self.session_id.is_empty() {
            self.refuse(
                &req.id,
                ErrorCode::INVALID_MESSAGE,
                "the session is already open",
            )
            .await;
            return;
        }
        let accepted_caps = req
            .agent_caps
            .iter()
            .map(|cap| {
                if *cap == A2ECapability::TOOLS {
                    Capability::enabled(cap.clone())
                } else {
                    Capability::disabled(cap.clone(), "this host offers tools only")
                }
            })
            .collect();
        let resp = HandshakeResponse {
            req_id: req.id,
            accepted_caps,
            max_parallel: MAX_PARALLEL,
            ..HandshakeResponse::default()
        };
        self.session_id = resp.session_id.clone();
        self.send(resp.into()).await;
    }

    async fn list(&self, req: ToolListRequest) {
        let query = req.query.to_lowercase();
        let tools = self
            .plugin
            .tools()
            .into_iter()
            .filter(|t| {
                req.filter_tags.is_empty() || t.tags.iter().any(|tag| req.filter_tags.contains(tag))
            })
            .filter(|t| {
                query.is_empty()
                    || t.name.to_lowercase().contains(&query)
                    || t.description.to_lowercase().contains(&query)
            })
            .collect();
        let resp = ToolListResponse {
            req_id: req.id,
            tools,
            ..ToolListResponse::default()
        };
        self.send(resp.into()).await;
    }

    async fn call(&mut self, req: ToolCallRequest) {
        if self.calls.len() >= MAX_PARALLEL as usize {
            let why = format!("more than {MAX_PARALLEL} calls in flight");
            self.refuse(&req.id, ErrorCode::UNAVAILABLE, why).await;
            return;
        }
        if !self.plugin.tools().iter().any(|t| t.name == req.tool_name) {
            let why = Error::unknown_tool(&req.tool_name);
            self.send(why.to_error_message(&req.id).into()).await;
            return;
        }
        let mut req = req;
        let args = std::mem::take(&mut req.arguments);
        let plugin = self.plugin.clone();
        let out = self.out.clone();
        let cancel = self.cancel.child_token();
        let session_id = self.session_id.clone();
        self.calls.spawn(async move {
            let resp = run_call(plugin, &session_id, req, args, cancel, out.clone()).await;
            let _ = out.send(resp).await;
        });
    }
}

/// Runs one call to its answer: the response, or an `error` for a refusal.
async fn run_call(
    plugin: Arc<dyn DynToolPlugin>,
    session_id: &str,
    req: ToolCallRequest,
    args: serde_json::Map<String, Value>,
    cancel: CancellationToken,
    out: mpsc::Sender<Message>,
) -> Message {
    let secs = req.timeout.clamp(1, MAX_TIMEOUT_SECS);
    let limit = Duration::from_secs(secs);
    let deadline = tokio::time::Instant::now() + limit;
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<ToolEvent>();
    let req_id = req.id.clone();
    let seq = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sink = EventSink::new(move |kind, data| {
        let n = seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let event = ToolEvent {
            kind,
            data,
            seq: n,
            req_id: req_id.clone(),
            ..ToolEvent::default()
        };
        let _ = events_tx.send(event);
        Box::pin(std::future::ready(()))
    });
    let ctx = CallContext::new(session_id, &req.id, cancel.clone(), Some(deadline), sink)
        .with_correlation_id(&req.correlation_id);
    let started = std::time::Instant::now();
    let call = plugin.call_dyn(&req.tool_name, args, ctx);
    let streaming = req.streaming;
    let mut events = Vec::new();
    let forward = async {
        while let Some(event) = events_rx.recv().await {
            if streaming {
                let _ = out.send(event.clone().into()).await;
            }
            if events.len() < MAX_RESULT_EVENTS {
                events.push(event);
            }
        }
    };
    let mut call = call;
    let (outcome, finished) = tokio::select! {
        outcome = &mut call => (Some(outcome), true),
        () = tokio::time::sleep(limit) => (None, false),
        () = cancel.cancelled() => (Some(Err(Error::Cancelled)), false),
    };
    if !finished {
        // A call that is stopped gets a moment to wind down before it is dropped.
        cancel.cancel();
        let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
    }
    cancel.cancel();
    drop(call);
    // The call's sink is gone with its future: the events it sent are all here.
    forward.await;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut result = match outcome {
        Some(Ok(output)) => success(&req.tool_name, output),
        Some(Err(e)) if e.is_refusal() => return e.to_error_message(&req.id).into(),
        Some(Err(e)) => ToolResult::failed(&req.tool_name, e.code(), e.to_string()),
        None => {
            let e = Error::TimedOut { secs };
            ToolResult::failed(&req.tool_name, e.code(), e.to_string())
        }
    };
    result.duration_ms = duration_ms;
    result.events = events;
    let mut resp = ToolCallResponse::for_request(&req);
    resp.data = result;
    resp.into()
}

fn success(tool: &str, output: ToolOutput) -> ToolResult {
    let mut result = ToolResult::ok(tool, output.data);
    result.summary = output.summary;
    result.truncated = output.truncated;
    result.exit_code = output.exit_code;
    result
}
