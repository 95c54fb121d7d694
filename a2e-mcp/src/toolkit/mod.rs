//! One mounted MCP server: connection lifecycle, tool listing and calls.

mod client_side;
mod rounds;
mod session;

pub use crate::protocol::PROTOCOL_VERSION;
use client_side::{ClientSide, Routes, SamplerSlot};
pub use client_side::{Sampler, defaults_of};

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex as SyncMutex, RwLock, Weak};
use std::time::Duration;

use a2e_proto::{ToolDefinition, ToolResult};
use futures::future::BoxFuture;
use nix::sys::signal::Signal;
use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    ProgressToken, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::call::McpCallOptions;
use crate::config::{McpServerConfig, McpTransport, Revision};
use crate::error::McpError;
use crate::output::McpOutput;
use crate::process::{ProcessGroupGuard, StderrTail};
use crate::schema::ArgumentsMismatch;
use crate::tool::{McpTool, ToolCatalog};
pub use session::http_client;

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
    /// What answers the server's questions (its requests in a session, the
    /// `input_required` rounds of a 2026-07-28 server).
    answers: ClientSide,
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
    sampler: SamplerSlot,
    challenge: crate::challenge::ChallengeSlot,
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
                sampler: Arc::default(),
                challenge: Arc::default(),
            }),
        })
    }

    /// Sets what answers the server's sampling requests (when its config
    /// has `sampling`); it applies from the next connection on.
    pub fn set_sampler(&self, sampler: Arc<dyn Sampler>) {
        let mut slot = self
            .inner
            .sampler
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *slot = Some(sampler);
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

    /// The MCP revision the running server and the host speak (`None` while
    /// it is not running).
    pub async fn protocol_version(&self) -> Option<String> {
        match &*self.inner.state.lock().await {
            State::Up(c) if c.alive() => c
                .peer
                .peer_info()
                .map(|info| info.protocol_version.to_string()),
            _ => None,
        }
    }

    /// The server's tools, starting it if needed; listed once per connection
    /// (again after `notifications/tools/list_changed`).
    pub async fn tools(&self) -> Result<Arc<ToolCatalog>, McpError> {
        self.reauthorizing(|| self.tools_once()).await
    }

    async fn tools_once(&self) -> Result<Arc<ToolCatalog>, McpError> {
        let conn = self.inner.connection().await?;
        if !self.inner.tools_stale.load(Ordering::SeqCst)
            && let Some(catalog) = self.cached_tools()
        {
            return Ok(catalog);
        }
        self.inner.list_tools(&conn).await
    }

    /// Whether the server announced a change of its tools
    /// (`notifications/tools/list_changed`) since it was last listed.
    pub fn tools_changed(&self) -> bool {
        self.inner.tools_stale.load(Ordering::SeqCst)
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
        options: McpCallOptions,
    ) -> Result<McpOutput, McpError> {
        self.reauthorizing(|| self.call_once(tool, args.clone(), options.clone()))
            .await
    }

    /// Runs `op`; when it failed on an authorization challenge of an OAuth
    /// server (a 401, or a 403 for a scope it lacks: step-up) and a consent
    /// can run now, authorizes with that challenge (the scopes it names) and
    /// runs `op` once more, on a new connection. One retry only: a server
    /// that keeps refusing is not asked again and again.
    async fn reauthorizing<T, F, Fut>(&self, op: F) -> Result<T, McpError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, McpError>>,
    {
        let _stale = crate::challenge::take(&self.inner.challenge);
        let first = op().await;
        let Err(error) = first else {
            return first;
        };
        let (Some(oauth), McpTransport::Http { url, .. }) =
            (&self.inner.config.oauth, &self.inner.transport)
        else {
            return Err(error);
        };
        let Some(challenge) = crate::challenge::take(&self.inner.challenge) else {
            return Err(error);
        };
        let server = self.name().to_owned();
        if oauth.needs_consent() && !crate::oauth::can_consent_inline() {
            return Err(McpError::Init {
                server: server.clone(),
                reason: format!(
                    "the server asks for (more) OAuth authorization: run `a2e mcp login {server}` ({error})"
                ),
            });
        }
        let file = self.inner.token_file(oauth);
        crate::oauth::authorize(&server, url, oauth, &file, Some(challenge)).await?;
        self.inner.reset().await;
        op().await
    }

    async fn call_once(
        &self,
        tool: &str,
        args: Map<String, Value>,
        options: McpCallOptions,
    ) -> Result<McpOutput, McpError> {
        let server = self.name().to_owned();
        let catalog = self.tools_once().await?;
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
                reason: ArgumentsMismatch::one("/: arguments must be an object"),
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
        options: McpCallOptions,
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
