//! One mounted MCP server: connection lifecycle, tool listing and calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex as SyncMutex, RwLock, Weak};
use std::time::Duration;

use a2e_proto::{ToolDefinition, ToolResult};
use futures::future::BoxFuture;
use nix::sys::signal::Signal;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, ProgressNotificationParam, ProgressToken,
    ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerConfig, McpTransport};
use crate::error::McpError;
use crate::output::McpOutput;
use crate::process::{ProcessGroupGuard, StderrTail};
use crate::tool::{McpTool, ToolCatalog};

/// A progress notification of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct McpProgress {
    /// Progress so far (increases with each notification).
    pub progress: f64,
    /// Total, when the server knows it.
    pub total: Option<f64>,
    /// What is happening.
    pub message: Option<String>,
}

impl McpProgress {
    /// Percent done, 0–100: `progress / total` when a total is known,
    /// otherwise `progress` itself, clamped.
    pub fn pct(&self) -> i64 {
        let pct = match self.total {
            Some(total) if total > 0.0 => self.progress / total * 100.0,
            _ => self.progress,
        };
        if pct.is_finite() {
            // Clamped to 0..=100 first, so the cast cannot overflow.
            pct.clamp(0.0, 100.0).round() as i64
        } else {
            0
        }
    }

    /// The payload of an A2E `tool/event` of kind `progress`: `{pct, message}`.
    pub fn event_data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        data.insert("pct".into(), Value::from(self.pct()));
        data.insert(
            "message".into(),
            Value::from(self.message.clone().unwrap_or_default()),
        );
        data
    }
}

/// Receives a call's progress; awaited before the next one is delivered.
pub type ProgressFn = Arc<dyn Fn(McpProgress) -> BoxFuture<'static, ()> + Send + Sync>;

/// Per-call options: a time limit, a cancellation token, a progress callback.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Time limit (the server's `call_timeout_secs` caps it).
    pub timeout: Option<Duration>,
    /// Cancels the call: `notifications/cancelled` goes to the server.
    pub cancel: Option<CancellationToken>,
    /// Receives progress notifications.
    pub progress: Option<ProgressFn>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("cancel", &self.cancel.is_some())
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl CallOptions {
    /// With a time limit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// With a cancellation token.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// With a progress callback.
    pub fn on_progress<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(McpProgress) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.progress = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }
}

type Routes = Arc<SyncMutex<HashMap<ProgressToken, mpsc::UnboundedSender<McpProgress>>>>;

/// The client side of one connection: routes progress to calls, notes tool
/// list changes.
#[derive(Clone)]
struct ClientSide {
    routes: Routes,
    tools_stale: Arc<AtomicBool>,
}

impl ClientHandler for ClientSide {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = routes.get(&params.progress_token) {
            let _ = tx.send(McpProgress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
        std::future::ready(())
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.tools_stale.store(true, Ordering::SeqCst);
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("a2e-mcp", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Removes a call's progress route when the call ends.
struct RouteGuard {
    routes: Routes,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        routes.remove(&self.token);
    }
}

/// A live connection to the server.
struct Connection {
    peer: Peer<RoleClient>,
    stop: CancellationToken,
    alive: Arc<AtomicBool>,
    group: Option<ProcessGroupGuard>,
    stderr: StderrTail,
    started: Instant,
    done: SyncMutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Connection {
    fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst) && !self.peer.is_transport_closed()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.stop.cancel();
        // `group` drops next and kills the process group.
    }
}

enum State {
    Down {
        failures: u32,
        retry_at: Option<Instant>,
        last_error: String,
    },
    Up(Arc<Connection>),
    Stopped,
}

/// Backoff left to wait in a call rather than failing at once.
const WAIT_BACKOFF_AT_MOST: Duration = Duration::from_secs(2);
/// A connection that lived this long resets the crash count.
const STABLE_UPTIME: Duration = Duration::from_secs(30);
/// Time a stopping server gets after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

struct Inner {
    config: McpServerConfig,
    transport: McpTransport,
    state: tokio::sync::Mutex<State>,
    catalog: RwLock<Option<Arc<ToolCatalog>>>,
    routes: Routes,
    tools_stale: Arc<AtomicBool>,
    crashes: AtomicU32,
}

/// One mounted MCP server, as an A2E toolkit named after it.
///
/// Cheap to clone (all clones share the connection). The server starts on
/// first use ([`tools`](Self::tools) or [`call`](Self::call)), or at once
/// with [`start`](Self::start) (which [`McpToolkit::mount`] does for `eager`
/// servers). A server that stops is restarted on next use — or right away
/// for eager servers — after a backoff that doubles with each consecutive
/// failure; calls in flight when it stopped fail with
/// [`McpError::ServerStopped`]. Dropping the last clone, or
/// [`shutdown`](Self::shutdown), kills a stdio server's whole process group.
#[derive(Clone)]
pub struct McpToolkit {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpToolkit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolkit")
            .field("server", &self.inner.config.name)
            .finish()
    }
}

impl McpToolkit {
    /// A toolkit for `config` (checked here); nothing is started yet.
    pub fn new(config: McpServerConfig) -> Result<Self, McpError> {
        let transport = config.transport()?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                transport,
                state: tokio::sync::Mutex::new(State::Down {
                    failures: 0,
                    retry_at: None,
                    last_error: String::new(),
                }),
                catalog: RwLock::new(None),
                routes: Arc::default(),
                tools_stale: Arc::default(),
                crashes: AtomicU32::new(0),
            }),
        })
    }

    /// [`new`](Self::new), then [`start`](Self::start) when the config says
    /// `eager`. A failed eager start is logged, not returned: the toolkit
    /// retries on first use.
    pub async fn mount(config: McpServerConfig) -> Result<Self, McpError> {
        let kit = Self::new(config)?;
        if kit.inner.config.eager
            && let Err(e) = kit.start().await
        {
            tracing::warn!(error = %e, "eager MCP server did not start");
        }
        Ok(kit)
    }

    /// The server (and toolkit) name.
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// The config it was made from.
    pub fn config(&self) -> &McpServerConfig {
        &self.inner.config
    }

    /// Starts the server (if it is not running) and lists its tools.
    pub async fn start(&self) -> Result<(), McpError> {
        self.tools().await.map(|_| ())
    }

    /// The process id of a running stdio server (its process group id too).
    pub async fn server_pid(&self) -> Option<u32> {
        match &*self.inner.state.lock().await {
            State::Up(c) if c.alive() => c.group.as_ref().and_then(ProcessGroupGuard::pid),
            _ => None,
        }
    }

    /// Whether the server is running now.
    pub async fn is_running(&self) -> bool {
        matches!(&*self.inner.state.lock().await, State::Up(c) if c.alive())
    }

    /// The server's tools, starting it if needed; listed once per connection
    /// (again after `notifications/tools/list_changed`).
    pub async fn tools(&self) -> Result<Arc<ToolCatalog>, McpError> {
        let conn = self.inner.connection().await?;
        if !self.inner.tools_stale.load(Ordering::SeqCst)
            && let Some(catalog) = self.cached_tools()
        {
            return Ok(catalog);
        }
        self.inner.list_tools(&conn).await
    }

    /// The tools listed last, without starting anything (`None` before the
    /// first listing).
    pub fn cached_tools(&self) -> Option<Arc<ToolCatalog>> {
        self.inner
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The A2E definitions of the tools (`toolkit` set to the server name,
    /// `defer_loading` from the config), starting the server if needed.
    pub async fn definitions(&self) -> Result<Vec<ToolDefinition>, McpError> {
        Ok(self
            .tools()
            .await?
            .iter()
            .map(|t| t.definition.clone())
            .collect())
    }

    /// Calls `tool` (its MCP name) with `args`.
    ///
    /// Arguments are checked against the tool's full input schema first. The
    /// result's `isError` is kept in [`McpOutput::is_error`]; failures to get
    /// a result at all are errors naming the server.
    pub async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        options: CallOptions,
    ) -> Result<McpOutput, McpError> {
        let server = self.name().to_owned();
        let catalog = self.tools().await?;
        let known = match catalog.get(tool) {
            Some(t) => Some(t.clone()),
            // The list may be out of date: look once more.
            None => {
                let conn = self.inner.connection().await?;
                self.inner.list_tools(&conn).await?.get(tool).cloned()
            }
        };
        let Some(known) = known else {
            return Err(McpError::UnknownTool {
                server,
                tool: tool.into(),
            });
        };
        let args = Value::Object(args);
        known
            .check_argument_value(&args)
            .map_err(|reason| McpError::InvalidArguments {
                server: server.clone(),
                tool: tool.into(),
                reason,
            })?;
        let Value::Object(args) = args else {
            return Err(McpError::InvalidArguments {
                server,
                tool: tool.into(),
                reason: "arguments must be an object".into(),
            });
        };
        let conn = self.inner.connection().await?;
        self.inner.call_on(&conn, tool, args, options).await
    }

    /// [`call`](Self::call) as an A2E [`ToolResult`] (`duration_ms` filled):
    /// errors and `isError` become `success: false` with their error code
    /// (`tool_error` for a failed tool or a stopped server, `timeout`,
    /// `unknown_tool`, `schema_violation`).
    pub async fn call_result(
        &self,
        tool: &str,
        args: Map<String, Value>,
        options: CallOptions,
    ) -> ToolResult {
        let started = Instant::now();
        let mut result = match self.call(tool, args, options).await {
            Ok(output) => output.into_tool_result(tool),
            Err(e) => ToolResult::failed(tool, e.code(), e.to_string()),
        };
        result.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        result
    }

    /// Stops the server: SIGTERM to a stdio server's process group, SIGKILL
    /// after a grace period; an HTTP session is closed. Later calls fail with
    /// [`McpError::Shutdown`].
    pub async fn shutdown(&self) {
        let old = std::mem::replace(&mut *self.inner.state.lock().await, State::Stopped);
        if let State::Up(conn) = old {
            conn.stop.cancel();
            if let Some(group) = &conn.group {
                group.signal(Signal::SIGTERM);
            }
            let done = conn.done.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(done) = done {
                let _ = tokio::time::timeout(STOP_GRACE, done).await;
            }
            // Dropping the last reference kills whatever is left of the group.
        }
    }
}

impl Inner {
    /// The live connection, starting the server when there is none.
    async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, McpError> {
        let server = &self.config.name;
        let mut state = self.state.lock().await;
        loop {
            match &mut *state {
                State::Stopped => {
                    return Err(McpError::Shutdown {
                        server: server.clone(),
                    });
                }
                State::Up(conn) if conn.alive() => return Ok(conn.clone()),
                State::Up(conn) => {
                    // A server that keeps stopping soon after it started backs
                    // off further each time; one that ran a while starts over.
                    let crashes = if conn.started.elapsed() < STABLE_UPTIME {
                        self.crashes
                            .fetch_add(1, Ordering::SeqCst)
                            .saturating_add(1)
                    } else {
                        self.crashes.store(1, Ordering::SeqCst);
                        1
                    };
                    let last_error = format!("the server stopped; {}", conn.stderr.joined());
                    tracing::warn!(server = %server, crashes, "MCP server stopped; restarting after backoff");
                    *state = State::Down {
                        failures: crashes,
                        retry_at: Some(Instant::now() + self.config.backoff(crashes)),
                        last_error,
                    };
                }
                State::Down {
                    failures,
                    retry_at,
                    last_error,
                } => {
                    if let Some(at) = *retry_at {
                        let now = Instant::now();
                        if at > now {
                            let left = at - now;
                            if left > WAIT_BACKOFF_AT_MOST {
                                return Err(McpError::Unavailable {
                                    server: server.clone(),
                                    failures: *failures,
                                    retry_in: left,
                                    last_error: last_error.clone(),
                                });
                            }
                            tokio::time::sleep_until(at).await;
                        }
                    }
                    match self.connect().await {
                        Ok(conn) => {
                            *state = State::Up(conn.clone());
                            return Ok(conn);
                        }
                        Err(e) => {
                            let failures = failures.saturating_add(1);
                            *state = State::Down {
                                failures,
                                retry_at: Some(Instant::now() + self.config.backoff(failures)),
                                last_error: e.to_string(),
                            };
                            return Err(e);
                        }
                    }
                }
            }
        }
    }

    /// Starts the server and runs `initialize` (bounded by `init_timeout`).
    async fn connect(self: &Arc<Self>) -> Result<Arc<Connection>, McpError> {
        let server = self.config.name.clone();
        let handler = ClientSide {
            routes: self.routes.clone(),
            tools_stale: self.tools_stale.clone(),
        };
        let stop = CancellationToken::new();
        let limit = self.config.init_timeout();
        let init_failed = |reason: String| McpError::Init {
            server: server.clone(),
            reason,
        };
        let timed_out = || McpError::InitTimeout {
            server: server.clone(),
            after: limit,
        };
        let (running, group, stderr): (RunningService<RoleClient, ClientSide>, _, _) = match &self
            .transport
        {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (child, group, stderr) =
                    crate::process::spawn(&server, command, args, env, cwd.as_ref())?;
                let started =
                    tokio::time::timeout(limit, handler.serve_with_ct(child, stop.clone())).await;
                // On failure `group` drops here and kills what was started.
                match started {
                    Err(_) => return Err(timed_out()),
                    Ok(Err(e)) => {
                        let tail = stderr.joined();
                        let reason = if tail.is_empty() {
                            e.to_string()
                        } else {
                            format!("{e} (stderr: {tail})")
                        };
                        return Err(init_failed(reason));
                    }
                    Ok(Ok(running)) => (running, Some(group), stderr),
                }
            }
            McpTransport::Http {
                url,
                headers,
                bearer_token,
            } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = bearer_token {
                    config = config.auth_header(token.clone());
                }
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = axum::http::HeaderName::try_from(name.as_str())
                        .map_err(|e| init_failed(format!("header `{name}`: {e}")))?;
                    let value = axum::http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| init_failed(format!("header `{name}`: {e}")))?;
                    custom.insert(name, value);
                }
                config = config.custom_headers(custom);
                let client = http_client().map_err(init_failed)?;
                let transport = StreamableHttpClientTransport::with_client(client, config);
                match tokio::time::timeout(limit, handler.serve_with_ct(transport, stop.clone()))
                    .await
                {
                    Err(_) => return Err(timed_out()),
                    Ok(Err(e)) => return Err(init_failed(e.to_string())),
                    Ok(Ok(running)) => (running, None, StderrTail::default()),
                }
            }
        };
        let alive = Arc::new(AtomicBool::new(true));
        let conn = Arc::new(Connection {
            peer: running.peer().clone(),
            stop,
            alive: alive.clone(),
            group,
            stderr,
            started: Instant::now(),
            done: SyncMutex::new(None),
        });
        self.tools_stale.store(true, Ordering::SeqCst);
        let weak = Arc::downgrade(self);
        let done = tokio::spawn(watch(running, alive, weak, server));
        *conn.done.lock().unwrap_or_else(|e| e.into_inner()) = Some(done);
        Ok(conn)
    }

    async fn list_tools(&self, conn: &Connection) -> Result<Arc<ToolCatalog>, McpError> {
        let server = &self.config.name;
        self.tools_stale.store(false, Ordering::SeqCst);
        let listed = tokio::time::timeout(self.config.init_timeout(), conn.peer.list_all_tools())
            .await
            .map_err(|_| McpError::Protocol {
                server: server.clone(),
                what: "tools/list".into(),
                reason: format!(
                    "no answer within {}s",
                    self.config.init_timeout().as_secs_f64()
                ),
            })?
            .map_err(|e| service_error(server, "tools/list", conn, e))?;
        let tools = listed
            .into_iter()
            .map(|t| McpTool::from_mcp(server, self.config.defer_loading, t))
            .collect();
        let catalog = Arc::new(ToolCatalog::new(tools));
        *self.catalog.write().unwrap_or_else(|e| e.into_inner()) = Some(catalog.clone());
        Ok(catalog)
    }

    async fn call_on(
        &self,
        conn: &Connection,
        tool: &str,
        args: Map<String, Value>,
        options: CallOptions,
    ) -> Result<McpOutput, McpError> {
        let server = &self.config.name;
        let what = format!("tools/call {tool}");
        let limit = options.timeout.map_or(self.config.call_timeout(), |t| {
            t.min(self.config.call_timeout())
        });
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new(tool.to_owned()).with_arguments(args),
        ));
        let (tx, mut progress_rx) = mpsc::unbounded_channel();
        let handle = conn
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| service_error(server, &what, conn, e))?;
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(handle.progress_token.clone(), tx);
        let _route = RouteGuard {
            routes: self.routes.clone(),
            token: handle.progress_token.clone(),
        };
        let id = handle.id.clone();
        let response = handle.await_response();
        tokio::pin!(response);
        let deadline = tokio::time::sleep(limit);
        tokio::pin!(deadline);
        let cancel = options.cancel.clone().unwrap_or_default();
        let result = loop {
            tokio::select! {
                biased;
                r = &mut response => break r,
                Some(p) = progress_rx.recv() => {
                    if let Some(f) = &options.progress {
                        f(p).await;
                    }
                }
                _ = cancel.cancelled() => {
                    send_cancel(&conn.peer, id, "cancelled by the caller").await;
                    return Err(McpError::Cancelled { server: server.clone(), tool: tool.into() });
                }
                _ = &mut deadline => {
                    send_cancel(&conn.peer, id, "timed out").await;
                    return Err(McpError::Timeout {
                        server: server.clone(),
                        tool: tool.into(),
                        after: limit,
                    });
                }
            }
        };
        // Progress that arrived just before the result.
        while let Ok(p) = progress_rx.try_recv() {
            if let Some(f) = &options.progress {
                f(p).await;
            }
        }
        match result.map_err(|e| service_error(server, &what, conn, e))? {
            ServerResult::CallToolResult(r) => Ok(McpOutput::from_mcp(&r)),
            other => Err(McpError::Protocol {
                server: server.clone(),
                what,
                reason: format!("unexpected answer: {}", short_debug(&other)),
            }),
        }
    }
}

async fn send_cancel(peer: &Peer<RoleClient>, id: rmcp::model::RequestId, reason: &str) {
    let params = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    if let Err(e) = peer.notify_cancelled(params).await {
        tracing::debug!(error = %e, "could not send notifications/cancelled");
    }
}

fn short_debug(value: &impl std::fmt::Debug) -> String {
    let text = format!("{value:?}");
    text.chars().take(200).collect()
}

fn service_error(server: &str, what: &str, conn: &Connection, e: ServiceError) -> McpError {
    match e {
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            conn.alive.store(false, Ordering::SeqCst);
            McpError::ServerStopped {
                server: server.into(),
                what: what.into(),
                stderr_tail: conn.stderr.joined(),
            }
        }
        ServiceError::McpError(data) => McpError::Protocol {
            server: server.into(),
            what: what.into(),
            reason: format!("{} (code {})", data.message, data.code.0),
        },
        other => McpError::Protocol {
            server: server.into(),
            what: what.into(),
            reason: other.to_string(),
        },
    }
}

/// The HTTP client for Streamable HTTP servers: rustls with the `ring`
/// provider and the webpki roots (no process-wide TLS default needed), no
/// redirects followed, no idle connection pool (as rmcp's own default).
pub fn http_client() -> Result<reqwest::Client, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS is not available: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}

/// `connection()` behind a box: the watcher of a connection may start the
/// next one, and the box keeps that cycle out of the futures' types.
fn reconnect(inner: &Arc<Inner>) -> BoxFuture<'_, Result<Arc<Connection>, McpError>> {
    Box::pin(inner.connection())
}

/// Waits for a connection to end; marks it dead and, for eager servers,
/// restarts the server after its backoff.
async fn watch(
    running: RunningService<RoleClient, ClientSide>,
    alive: Arc<AtomicBool>,
    inner: Weak<Inner>,
    server: String,
) {
    let reason = running.waiting().await;
    alive.store(false, Ordering::SeqCst);
    tracing::info!(server = %server, ?reason, "MCP connection ended");
    loop {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        if !strong.config.eager || matches!(&*strong.state.lock().await, State::Stopped) {
            return;
        }
        // `connection()` waits out a short backoff itself and reports a
        // longer one as `Unavailable`.
        let wait = match reconnect(&strong).await {
            Ok(conn) => {
                let _ = strong.list_tools(&conn).await;
                return;
            }
            Err(McpError::Shutdown { .. }) => return,
            Err(McpError::Unavailable { retry_in, .. }) => retry_in,
            Err(e) => {
                tracing::warn!(server = %server, error = %e, "eager restart failed");
                Duration::ZERO
            }
        };
        drop(strong);
        tokio::time::sleep(wait).await;
    }
}
