//! Starting a server, listing its tools, calling them, watching it stop.

use super::*;

impl Inner {
    /// The live connection, starting the server when there is none.
    pub(super) async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, McpError> {
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

    /// Ends the connection (if any) so that the next use connects anew, at
    /// once (after a new authorization).
    pub(super) async fn reset(&self) {
        let mut state = self.state.lock().await;
        if let State::Up(conn) = &*state {
            conn.stop.cancel();
        }
        if !matches!(*state, State::Stopped) {
            *state = State::Down {
                failures: 0,
                retry_at: None,
                last_error: String::new(),
            };
        }
    }

    /// The server's token file.
    pub(super) fn token_file(&self, oauth: &crate::oauth::OAuthConfig) -> std::path::PathBuf {
        oauth.token_file_or(&crate::oauth::default_token_file(
            std::path::Path::new(".a2e"),
            &self.config.name,
        ))
    }

    /// An authorization manager with tokens for `url`: the stored ones, or,
    /// when there are none and the server asks for authorization, new ones
    /// from a consent run now (only where one can: `$BROWSER` set; else the
    /// error says to run `a2e mcp login`).
    async fn authorized(
        &self,
        url: &str,
        oauth: &crate::oauth::OAuthConfig,
        client: &reqwest::Client,
    ) -> Result<crate::oauth::Authorization, McpError> {
        let server = &self.config.name;
        let file = self.token_file(oauth);
        let authorization = crate::oauth::manager(server, url, oauth, &file).await?;
        if authorization.stored {
            return Ok(authorization);
        }
        let Some(challenge) = crate::oauth::challenge(client, url).await else {
            return Ok(authorization);
        };
        if oauth.needs_consent() && !crate::oauth::can_consent_inline() {
            return Err(McpError::Init {
                server: server.clone(),
                reason: format!(
                    "the server needs OAuth authorization: run `a2e mcp login {server}`"
                ),
            });
        }
        crate::oauth::authorize(server, url, oauth, &file, Some(challenge)).await?;
        crate::oauth::manager(server, url, oauth, &file).await
    }

    /// Starts the server and runs `initialize` (bounded by `init_timeout`).
    async fn connect(self: &Arc<Self>) -> Result<Arc<Connection>, McpError> {
        let server = self.config.name.clone();
        let handler = ClientSide {
            server: server.as_str().into(),
            routes: self.routes.clone(),
            tools_stale: self.tools_stale.clone(),
            elicitation: self.config.elicitation,
            sampling: self.config.sampling.clone(),
            sampler: self.sampler.clone(),
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
                let lifecycle = lifecycle(self.config.protocol.unwrap_or(Revision::Initialize));
                let started = tokio::time::timeout(
                    limit,
                    rmcp::service::serve_client_with_lifecycle_and_ct(
                        handler,
                        child,
                        lifecycle,
                        stop.clone(),
                    ),
                )
                .await;
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
                let client = http_client().map_err(|e| init_failed(a2e_http::error_chain(&e)))?;
                let started = match &self.config.oauth {
                    None => {
                        let revision = self.config.protocol;
                        let started =
                            serve_over_http(handler, client, config, revision, stop.clone());
                        tokio::time::timeout(limit, started).await
                    }
                    Some(oauth) => {
                        let authorization = self.authorized(url, oauth, &client).await?;
                        let client = crate::oauth::Dpop::new(client, authorization.dpop);
                        let client = crate::challenge::Noting::new(
                            rmcp::transport::auth::AuthClient::new(client, authorization.manager),
                            self.challenge.clone(),
                        );
                        let revision = self.config.protocol;
                        let started =
                            serve_over_http(handler, client, config, revision, stop.clone());
                        tokio::time::timeout(limit, started).await
                    }
                };
                match started {
                    Err(_) => return Err(timed_out()),
                    Ok(Err(e)) => return Err(init_failed(e.to_string())),
                    Ok(Ok(running)) => (running, None, StderrTail::default()),
                }
            }
        };
        let alive = Arc::new(AtomicBool::new(true));
        let conn = Arc::new(Connection {
            answers: running.service().clone(),
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

    pub(super) async fn list_tools(&self, conn: &Connection) -> Result<Arc<ToolCatalog>, McpError> {
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

    pub(super) async fn call_on(
        &self,
        conn: &Connection,
        tool: &str,
        args: Map<String, Value>,
        options: McpCallOptions,
    ) -> Result<McpOutput, McpError> {
        let server = &self.config.name;
        let what = format!("tools/call {tool}");
        let limit = options.timeout.map_or(self.config.call_timeout(), |t| {
            t.min(self.config.call_timeout())
        });
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let deadline = tokio::time::sleep(limit);
        tokio::pin!(deadline);
        for _ in 0..super::rounds::MAX_ROUNDS {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let answer = self
                .round(conn, tool, request, &options, deadline.as_mut(), limit)
                .await?;
            match answer {
                ServerResult::CallToolResult(r) => return Ok(McpOutput::from_mcp(&r)),
                // A 2026-07-28 server's questions: answered, then the call again.
                ServerResult::InputRequiredResult(r) => {
                    let requests = r.input_requests.unwrap_or_default();
                    if requests.is_empty() && r.request_state.is_none() {
                        return Err(protocol(
                            server,
                            &what,
                            "input_required without questions or state",
                        ));
                    }
                    let answers = super::rounds::answer(&conn.answers, &conn.peer, requests)
                        .await
                        .map_err(|e| {
                            protocol(
                                server,
                                &what,
                                &format!("answering its questions: {}", e.message),
                            )
                        })?;
                    params.input_responses = (!answers.is_empty()).then_some(answers);
                    params.request_state = r.request_state;
                }
                other => {
                    return Err(protocol(
                        server,
                        &what,
                        &format!("unexpected answer: {}", short_debug(&other)),
                    ));
                }
            }
        }
        Err(protocol(
            server,
            &what,
            &format!("still asking after {} rounds", super::rounds::MAX_ROUNDS),
        ))
    }

    /// One request of a call: sent, its progress routed, ended by its
    /// answer, the caller's cancellation or the call's `deadline`.
    async fn round(
        &self,
        conn: &Connection,
        tool: &str,
        request: ClientRequest,
        options: &McpCallOptions,
        mut deadline: std::pin::Pin<&mut tokio::time::Sleep>,
        limit: Duration,
    ) -> Result<ServerResult, McpError> {
        let server = &self.config.name;
        let what = format!("tools/call {tool}");
        let (tx, mut progress_rx) = mpsc::unbounded_channel();
        // `_meta` entries (the caller's trace context) ride along; the
        // progress token rmcp adds goes next to them.
        let mut request_options = PeerRequestOptions::no_options();
        if !options.meta.is_empty() {
            request_options.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(
                options.meta.clone(),
            )));
        }
        let handle = conn
            .peer
            .send_cancellable_request(request, request_options)
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
                _ = deadline.as_mut() => {
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
        result.map_err(|e| service_error(server, &what, conn, e))
    }
}

fn protocol(server: &str, what: &str, reason: &str) -> McpError {
    McpError::Protocol {
        server: server.into(),
        what: what.into(),
        reason: reason.into(),
    }
}

/// Starts a session over Streamable HTTP: `server/discover` at MCP
/// 2026-07-28 first (such a server is stateless and refuses `initialize`);
/// with a server that does not answer it with a discovery result (an
/// earlier revision's), `initialize` at [`PROTOCOL_VERSION`] on a new
/// transport. (rmcp's own fallback takes only a refusal it recognises; a
/// server that answers any request with an empty result is an earlier one
/// too.)
async fn serve_over_http<C>(
    handler: ClientSide,
    client: C,
    config: StreamableHttpClientTransportConfig,
    revision: Option<Revision>,
    stop: CancellationToken,
) -> Result<RunningService<RoleClient, ClientSide>, rmcp::service::ClientInitializeError>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient + Clone + Send + 'static,
{
    use rmcp::service::serve_client_with_lifecycle_and_ct;
    let transport = || StreamableHttpClientTransport::with_client(client.clone(), config.clone());
    let revision = revision.unwrap_or(Revision::Auto);
    if revision != Revision::Auto {
        let lifecycle = lifecycle(revision);
        return serve_client_with_lifecycle_and_ct(handler, transport(), lifecycle, stop).await;
    }
    // A new transport for `initialize`: a server that answered the probe
    // with something else may have left the first one in any state.
    let discover = lifecycle(Revision::Discover);
    let attempt =
        serve_client_with_lifecycle_and_ct(handler.clone(), transport(), discover, stop.clone());
    match tokio::time::timeout(DISCOVER_LIMIT, attempt).await {
        Ok(Ok(running)) => return Ok(running),
        Ok(Err(e)) => {
            tracing::debug!(server = %handler.server, "server/discover: {e}; initialize instead")
        }
        Err(_) => {
            tracing::debug!(server = %handler.server, "server/discover unanswered; initialize instead")
        }
    }
    let initialize = lifecycle(Revision::Initialize);
    serve_client_with_lifecycle_and_ct(handler, transport(), initialize, stop).await
}

/// How a connection of `revision` starts (`auto` on one transport: rmcp's
/// probe, which falls back to `initialize` on an error or after its wait).
fn lifecycle(revision: Revision) -> rmcp::service::ClientLifecycleMode {
    use rmcp::service::ClientLifecycleMode;
    let modern = vec![rmcp::model::ProtocolVersion::V_2026_07_28];
    match revision {
        Revision::Initialize => ClientLifecycleMode::Initialize,
        Revision::Discover => ClientLifecycleMode::Discover {
            preferred_versions: modern,
        },
        Revision::Auto => ClientLifecycleMode::Auto {
            preferred_versions: modern,
            legacy_version: Some(crate::protocol::PROTOCOL_VERSION),
        },
    }
}

/// How long a server may take to answer `server/discover` before the
/// session starts with `initialize` instead (as rmcp's own probe waits).
const DISCOVER_LIMIT: Duration = Duration::from_secs(10);

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

/// The HTTP client for Streamable HTTP servers, built by `a2e-http` as every
/// outgoing client of the workspace is: rustls with the `ring` provider and the
/// webpki roots (no process-wide TLS default needed), no redirects followed,
/// no idle connection pool (as rmcp's own default), no proxy from the
/// environment.
pub fn http_client() -> Result<reqwest::Client, a2e_http::HttpError> {
    a2e_http::ClientOptions::default()
        .user_agent(concat!("a2e-mcp/", env!("CARGO_PKG_VERSION")))
        .build()
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
