//! The server side: a host's tools served to MCP clients.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use a2e_proto::{EventKind, ToolDefinition, ToolEvent, ToolResult};
use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::output::to_mcp_result;
use crate::schema::schema_from_params;

/// A tool offered to MCP clients: its definition and, when the backend has
/// one, the full JSON Schema of its input (otherwise it is derived from the
/// definition's parameters).
#[derive(Debug, Clone, PartialEq)]
pub struct BackendTool {
    /// The definition.
    pub definition: ToolDefinition,
    /// The full input schema, if known.
    pub input_schema: Option<Map<String, Value>>,
}

impl From<ToolDefinition> for BackendTool {
    fn from(definition: ToolDefinition) -> Self {
        Self {
            definition,
            input_schema: None,
        }
    }
}

impl BackendTool {
    /// The MCP form of this tool.
    pub fn to_mcp(&self) -> Tool {
        let def = &self.definition;
        let schema = self
            .input_schema
            .clone()
            .unwrap_or_else(|| schema_from_params(&def.input_parameters));
        let mut tool = Tool::new(def.name.clone(), def.description.clone(), Arc::new(schema));
        if !def.output_parameters.is_empty() {
            tool.output_schema = Some(Arc::new(schema_from_params(&def.output_parameters)));
        }
        if def.idempotent {
            let mut a = ToolAnnotations::new();
            a.idempotent_hint = Some(true);
            tool.annotations = Some(a);
        }
        tool
    }
}

/// What the host implements to be served over MCP.
///
/// The host applies its own confinement, allow-lists and audit inside
/// [`call_tool`](Self::call_tool), as it does for A2E calls.
pub trait ToolBackend: Send + Sync + 'static {
    /// The tools to offer.
    fn list_tools(&self) -> impl Future<Output = Vec<BackendTool>> + Send;

    /// Runs a tool. `progress` forwards events to the client as
    /// `notifications/progress` (when it asked for them); `cancel` fires when
    /// the client sends `notifications/cancelled` or goes away; `meta` is the
    /// request's `params._meta` (a W3C `traceparent` and `tracestate` among
    /// its entries, when the client traces).
    fn call_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        progress: ProgressSink,
        cancel: CancellationToken,
        meta: Map<String, Value>,
    ) -> impl Future<Output = ToolResult> + Send;
}

/// Where a backend's events for one call go: `progress` events become MCP
/// `notifications/progress` (`progress` = pct, `total` = 100, `message`), in
/// order; progress that would go backwards is dropped (MCP requires it to
/// increase). Other event kinds are not forwarded. A call without a progress
/// token gets a sink that drops everything.
#[derive(Debug, Clone, Default)]
pub struct ProgressSink {
    tx: Option<mpsc::UnboundedSender<SinkMsg>>,
}

#[derive(Debug)]
enum SinkMsg {
    Progress(f64, String),
    /// Answered once everything before it has been sent.
    Flush(oneshot::Sender<()>),
}

/// How long a call's answer waits for its last progress notifications.
const FLUSH_LIMIT: Duration = Duration::from_secs(5);

impl ProgressSink {
    /// A sink that drops everything.
    pub fn discard() -> Self {
        Self::default()
    }

    fn for_peer(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        let Some(token) = token else {
            return Self::discard();
        };
        let (tx, mut rx) = mpsc::unbounded_channel::<SinkMsg>();
        tokio::spawn(async move {
            let mut last = f64::MIN;
            let mut open = true;
            while let Some(msg) = rx.recv().await {
                match msg {
                    SinkMsg::Flush(done) => {
                        let _ = done.send(());
                    }
                    SinkMsg::Progress(pct, message) => {
                        if !open || pct < last {
                            continue;
                        }
                        last = pct;
                        let mut params = ProgressNotificationParam::new(token.clone(), pct);
                        params.total = Some(100.0);
                        params.message = (!message.is_empty()).then_some(message);
                        open = peer.notify_progress(params).await.is_ok();
                    }
                }
            }
        });
        Self { tx: Some(tx) }
    }

    /// Waits until the notifications reported so far have been sent, so the
    /// answer does not overtake them.
    async fn flush(&self) {
        if let Some(tx) = &self.tx {
            let (done, wait) = oneshot::channel();
            if tx.send(SinkMsg::Flush(done)).is_ok() {
                let _ = tokio::time::timeout(FLUSH_LIMIT, wait).await;
            }
        }
    }

    /// Whether the client asked for progress.
    pub fn is_active(&self) -> bool {
        self.tx.is_some()
    }

    /// Reports `pct` (0–100) done.
    pub fn progress(&self, pct: i64, message: &str) {
        if let Some(tx) = &self.tx {
            // pct is clamped to 0..=100, exactly representable as f64.
            let pct = pct.clamp(0, 100) as f64;
            let _ = tx.send(SinkMsg::Progress(pct, message.to_owned()));
        }
    }

    /// Forwards an A2E event (kind and `data`); `progress` events only: the
    /// other kinds have no per-call MCP notification (logging is
    /// session-wide and deprecated by the spec), see the host's
    /// `docs/protocol-decisions.md`.
    pub fn emit(&self, kind: &EventKind, data: &Map<String, Value>) {
        if *kind == EventKind::PROGRESS {
            let pct = data.get("pct").and_then(Value::as_i64).unwrap_or(0);
            let message = data.get("message").and_then(Value::as_str).unwrap_or("");
            self.progress(pct, message);
        }
    }

    /// Forwards a `tool/event`.
    pub fn event(&self, event: &ToolEvent) {
        self.emit(&event.kind, &event.data);
    }
}

/// The rmcp handler around a backend.
struct Handler<B> {
    backend: Arc<B>,
    name: Arc<str>,
}

impl<B> Clone for Handler<B> {
    fn clone(&self) -> Self {
        Self {
            backend: self.backend.clone(),
            name: self.name.clone(),
        }
    }
}

impl<B: ToolBackend> ServerHandler for Handler<B> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new(self.name.to_string(), env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.backend.list_tools().await;
        Ok(ListToolsResult::with_all_items(
            tools.iter().map(BackendTool::to_mcp).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let sink = ProgressSink::for_peer(context.peer.clone(), context.meta.get_progress_token());
        let name: Cow<'static, str> = request.name;
        let args = request.arguments.unwrap_or_default();
        // The request's `_meta`, wherever the service put it.
        let mut meta = context.meta.0.0.clone();
        if let Some(own) = request.meta {
            meta.extend(own.0.0);
        }
        let result = self
            .backend
            .call_tool(
                name.into_owned(),
                args,
                sink.clone(),
                context.ct.clone(),
                meta,
            )
            .await;
        sink.flush().await;
        Ok(CallToolResponse::Complete(to_mcp_result(&result)))
    }
}

fn handler<B: ToolBackend>(backend: Arc<B>, name: &str) -> Handler<B> {
    Handler {
        backend,
        name: name.into(),
    }
}

/// Serves `backend` as the MCP server `name` over a byte stream pair until
/// the client closes it or `shutdown` fires.
pub async fn serve_io<B, R, W>(
    backend: Arc<B>,
    name: &str,
    reader: R,
    writer: W,
    shutdown: CancellationToken,
) -> Result<(), ServeError>
where
    B: ToolBackend,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = handler(backend, name)
        .serve_with_ct((reader, writer), shutdown)
        .await
        .map_err(|e| ServeError::Init(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Join(e.to_string()))?;
    Ok(())
}

/// Serves `backend` on this process's stdin/stdout (`a2e serve --mcp-stdio`).
pub async fn serve_stdio<B: ToolBackend>(
    backend: Arc<B>,
    name: &str,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let (stdin, stdout) = rmcp::transport::stdio();
    serve_io(backend, name, stdin, stdout, shutdown).await
}

/// The Streamable HTTP endpoint as an axum router (`/mcp`), for a host that
/// mounts it into a server of its own. With `bearer_token`, every request
/// needs `Authorization: Bearer <token>` (and any `Host` is accepted);
/// without one, only loopback `Host`s are.
pub fn http_router<B: ToolBackend>(
    backend: Arc<B>,
    name: &str,
    bearer_token: Option<String>,
    shutdown: CancellationToken,
) -> Router {
    let h = handler(backend, name);
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown);
    if bearer_token.is_some() {
        config = config.disable_allowed_hosts();
    }
    let service: StreamableHttpService<Handler<B>, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(h.clone()), Arc::default(), config);
    let router = Router::new().nest_service("/mcp", service);
    match bearer_token {
        Some(token) => {
            let expected: Arc<str> = format!("Bearer {token}").into();
            router.layer(axum::middleware::from_fn(
                move |req: Request, next: Next| {
                    let expected = expected.clone();
                    async move { check_bearer(&expected, req, next).await }
                },
            ))
        }
        None => router,
    }
}

async fn check_bearer(expected: &str, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if constant_time_eq(given.as_bytes(), expected.as_bytes()) {
        next.run(req).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token",
        )
            .into_response()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves `backend` over Streamable HTTP at `http://<listener>/mcp` until
/// `shutdown` fires (`a2e serve --mcp-http ADDR`). A listener that is not on
/// a loopback address needs a bearer token.
pub async fn serve_http<B: ToolBackend>(
    backend: Arc<B>,
    name: &str,
    listener: TcpListener,
    bearer_token: Option<String>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let addr = listener.local_addr()?;
    if bearer_token.is_none() && !addr.ip().is_loopback() {
        return Err(ServeError::NotLoopback(addr));
    }
    let router = http_router(backend, name, bearer_token, shutdown.child_token());
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_become_mcp_tools() {
        let def = ToolDefinition::new("read_file", "Read a file")
            .param(a2e_proto::ToolParameter::new("path", "string", "File").required())
            .idempotent();
        let tool = BackendTool::from(def).to_mcp();
        assert_eq!(tool.name, "read_file");
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            serde_json::json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "File"}}, "required": ["path"]})
        );
        assert_eq!(tool.annotations.and_then(|a| a.idempotent_hint), Some(true));
    }

    #[test]
    fn bearer_comparison() {
        assert!(constant_time_eq(b"Bearer x", b"Bearer x"));
        assert!(!constant_time_eq(b"Bearer y", b"Bearer x"));
        assert!(!constant_time_eq(b"Bearer", b"Bearer x"));
    }
}
