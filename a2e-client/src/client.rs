//! [`Client`]: one connection to a host, after a successful handshake.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use a2e_proto::{
    A2ECapability, Capability, HandshakeRequest, HandshakeResponse, Message, Ping, Shutdown,
    ToolDefinition,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use crate::api::{ChainApi, ProcApi, SkillApi, ToolApi};
use crate::call::{Call, FromMessage, MapAnswer};
use crate::conn::Shared;
use crate::error::{ClientError, ClientResult};
use crate::transport::{self, Guard};

/// Capacity of the outgoing queue; senders wait when it is full.
const OUT_CAPACITY: usize = 256;

/// How a [`Client`] connects and behaves. Start from [`Client::builder`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    agent_id: String,
    caps: Vec<A2ECapability>,
    auth_token: String,
    request_timeout: Duration,
    handshake_timeout: Duration,
    timeout_slack: Duration,
    max_message_bytes: usize,
    peer_name: String,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            agent_id: String::new(),
            caps: Vec::new(),
            auth_token: String::new(),
            request_timeout: Duration::from_secs(30),
            handshake_timeout: Duration::from_secs(10),
            timeout_slack: Duration::from_secs(5),
            max_message_bytes: a2e_proto::decode::DEFAULT_MAX_BYTES,
            peer_name: "the host".to_owned(),
        }
    }
}

impl ClientBuilder {
    /// Who the agent is (`agent_id` of the handshake).
    pub fn agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.agent_id = agent_id.into();
        self
    }

    /// Capabilities to ask for (none: everything the host has loaded).
    pub fn capabilities(mut self, caps: impl IntoIterator<Item = A2ECapability>) -> Self {
        self.caps.extend(caps);
        self
    }

    /// The host's shared secret: sent as `auth_token` in the handshake and, on
    /// network transports, as an `Authorization: Bearer` header.
    pub fn auth_token(mut self, token: impl Into<String>) -> Self {
        self.auth_token = token.into();
        self
    }

    /// Limit for requests without a wire timeout of their own (list, discover,
    /// ping, proc). Default 30 s.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Limit for connecting and the handshake. Default 10 s.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// How long past a call's wire `timeout` the client still waits for the
    /// host's answer before giving up on its own. Default 5 s.
    pub fn timeout_slack(mut self, slack: Duration) -> Self {
        self.timeout_slack = slack;
        self
    }

    /// Largest message accepted from the host. Default 16 MiB.
    pub fn max_message_bytes(mut self, max: usize) -> Self {
        self.max_message_bytes = max;
        self
    }

    /// Who is at the other end, as messages and logs name it (default "the
    /// host"); a host speaking to its plugin process names the plugin, so a
    /// plugin that breaks the protocol is not taken for a host.
    pub fn peer_name(mut self, name: impl Into<String>) -> Self {
        self.peer_name = name.into();
        self
    }

    /// Spawns the host (e.g. `a2e serve --stdio`) and speaks NDJSON over its
    /// stdin/stdout; its stderr is inherited. When the last clone of the
    /// client is dropped, the child gets end of input (so it ends its session
    /// and its processes) and is killed if it has not exited 3 s later
    /// (SIGTERM, then SIGKILL after 2 s more; at once without a runtime).
    pub async fn connect_stdio(
        self,
        command: impl Into<tokio::process::Command>,
    ) -> ClientResult<Client> {
        let command = command.into();
        self.connect_with(|shared, out, max| async move {
            transport::stdio::spawn(command, &shared, out, max)
        })
        .await
    }

    /// Connects to `ws://host:port/` (one message per text frame).
    pub async fn connect_ws(self, url: &str) -> ClientResult<Client> {
        let token = self.auth_token.clone();
        let url = url.to_owned();
        self.connect_with(|shared, out, max| async move {
            transport::ws::connect(&url, &token, &shared, out, max).await
        })
        .await
    }

    /// Connects to `http://host:port/` with the HTTP+SSE protocol
    /// (`POST /session`, `GET /stream`, `POST /send`).
    pub async fn connect_http(self, url: &str) -> ClientResult<Client> {
        let token = self.auth_token.clone();
        let url = url.to_owned();
        self.connect_with(|shared, out, max| async move {
            transport::http::connect(&url, &token, &shared, out, max).await
        })
        .await
    }

    /// Speaks NDJSON over any pair of byte streams (a pipe, a socket, an
    /// in-memory duplex).
    pub async fn connect_io<R, W>(self, reader: R, writer: W) -> ClientResult<Client>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.connect_with(|shared, out, max| async move {
            Ok(transport::io::spawn(reader, writer, &shared, out, max))
        })
        .await
    }

    async fn connect_with<F, Fut>(self, start: F) -> ClientResult<Client>
    where
        F: FnOnce(Arc<Shared>, mpsc::Receiver<Message>, usize) -> Fut,
        Fut: std::future::Future<Output = ClientResult<Guard>>,
    {
        let (out_tx, out_rx) = mpsc::channel(OUT_CAPACITY);
        let shared = Shared::new(out_tx, self.peer_name.clone());
        let limit = self.handshake_timeout;
        let guard =
            tokio::time::timeout(limit, start(shared.clone(), out_rx, self.max_message_bytes))
                .await
                .map_err(|_| ClientError::Timeout(limit))??;
        let mut client = Client {
            inner: Arc::new(Inner {
                shared,
                session: HandshakeResponse::default(),
                config: self,
                tools: Mutex::new(None),
                guard: Mutex::new(guard),
            }),
        };
        let req = HandshakeRequest {
            agent_id: client.inner.config.agent_id.clone(),
            agent_caps: client.inner.config.caps.clone(),
            auth_token: client.inner.config.auth_token.clone(),
            ..HandshakeRequest::default()
        };
        let call: Call<Message, HandshakeResponse> = client
            .start(req.into(), false, limit, |msg| match msg {
                Message::HandshakeResponse(r) => Ok(r),
                other => Err(unexpected("handshake/resp", &other)),
            })
            .await?;
        let resp = call.finish().await?;
        if !resp.ok {
            client.close().await;
            return Err(ClientError::HandshakeRefused {
                reason: if resp.reason.is_empty() {
                    "refused".into()
                } else {
                    resp.reason
                },
            });
        }
        tracing::debug!(session = %resp.session_id, "connected");
        // Still the only handle: fill in the session.
        if let Some(inner) = Arc::get_mut(&mut client.inner) {
            inner.session = resp;
        }
        Ok(client)
    }
}

pub(crate) fn unexpected(expected: &'static str, got: &Message) -> ClientError {
    ClientError::UnexpectedAnswer {
        expected,
        got: got.type_str().to_owned(),
    }
}

pub(crate) struct Inner {
    pub(crate) shared: Arc<Shared>,
    session: HandshakeResponse,
    pub(crate) config: ClientBuilder,
    pub(crate) tools: Mutex<Option<Arc<Vec<ToolDefinition>>>>,
    guard: Mutex<Guard>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shared.stop.cancel();
        self.shared.fail_all("the client was dropped");
    }
}

/// A connection to an A2E host, after the handshake. Cheap to clone; every
/// clone shares the connection, and many requests may be in flight at once.
///
/// The connection ends when the last clone is dropped (a spawned host is
/// killed) or on [`Client::close`]; requests still waiting then fail with
/// [`ClientError::ConnectionClosed`], as they do when the host goes away.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session_id", &self.session_id())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder with default settings.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Spawns a host and connects over its stdio, with default settings.
    pub async fn connect_stdio(command: impl Into<tokio::process::Command>) -> ClientResult<Self> {
        Self::builder().connect_stdio(command).await
    }

    /// Connects over WebSocket, with default settings.
    pub async fn connect_ws(url: &str) -> ClientResult<Self> {
        Self::builder().connect_ws(url).await
    }

    /// Connects over HTTP+SSE, with default settings.
    pub async fn connect_http(url: &str) -> ClientResult<Self> {
        Self::builder().connect_http(url).await
    }

    /// The session the host opened.
    pub fn session_id(&self) -> &str {
        &self.inner.session.session_id
    }

    /// The capabilities the host accepted (unavailable ones have `enabled: false`).
    pub fn accepted_caps(&self) -> &[Capability] {
        &self.inner.session.accepted_caps
    }

    /// Whether `cap` was accepted and is enabled.
    pub fn has_capability(&self, cap: &A2ECapability) -> bool {
        self.accepted_caps()
            .iter()
            .any(|c| c.enabled && &c.capability == cap)
    }

    /// How many requests the host runs at once for this session (more wait in its queue).
    pub fn max_parallel(&self) -> u32 {
        self.inner.session.max_parallel
    }

    /// The process id of a host this client spawned.
    pub fn child_id(&self) -> Option<u32> {
        self.inner
            .guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .child
            .as_ref()
            .and_then(tokio::process::Child::id)
    }

    /// Tools: list, search, call.
    pub fn tools(&self) -> ToolApi<'_> {
        ToolApi::new(self)
    }

    /// Skills: discover, call.
    pub fn skills(&self) -> SkillApi<'_> {
        SkillApi::new(self)
    }

    /// Chains: run a DAG of tools, skills and processes.
    pub fn chains(&self) -> ChainApi<'_> {
        ChainApi::new(self)
    }

    /// Processes: spawn, write, kill, status, output.
    pub fn proc(&self) -> ProcApi<'_> {
        ProcApi::new(self)
    }

    /// Sends `ping` and waits for `pong`; returns the round-trip time.
    pub async fn ping(&self) -> ClientResult<Duration> {
        let started = Instant::now();
        self.request(Ping::default().into())
            .await
            .and_then(|msg| match msg {
                Message::Pong(_) => Ok(started.elapsed()),
                other => Err(unexpected("pong", &other)),
            })
    }

    /// Asks the host to end the session after draining calls in flight for up
    /// to `timeout_secs`, waits for it to close the connection (a little
    /// longer than that), then closes this side.
    pub async fn shutdown(&self, timeout_secs: u64) -> ClientResult<()> {
        let msg = Shutdown {
            timeout: timeout_secs,
            ..Shutdown::default()
        };
        self.inner.shared.send(msg.into()).await?;
        let wait = Duration::from_secs(timeout_secs) + self.inner.config.timeout_slack;
        let _ = tokio::time::timeout(wait, self.closed()).await;
        self.close().await;
        Ok(())
    }

    /// Closes the connection: a spawned host gets end of input, then SIGTERM
    /// after 3 s and SIGKILL after 2 s more; a network session is ended.
    /// Requests still waiting fail with [`ClientError::ConnectionClosed`].
    pub async fn close(&self) {
        let shared = &self.inner.shared;
        shared.stop.cancel();
        let child = self
            .inner
            .guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .child
            .take();
        match child {
            Some(child) => transport::stdio::stop_child(child).await,
            None => {
                let _ =
                    tokio::time::timeout(Duration::from_secs(2), shared.ended().cancelled()).await;
            }
        }
        shared.fail_all("the client closed the connection");
        self.inner
            .guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .abort();
    }

    /// Waits until the connection has ended, for whatever reason.
    pub async fn closed(&self) {
        self.inner.shared.ended().cancelled().await;
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.inner.shared.ended().is_cancelled()
    }

    /// Why the connection ended, once it has.
    pub fn close_reason(&self) -> Option<String> {
        self.inner.shared.closed_reason()
    }

    /// Registers a handler for messages that answer no pending request
    /// (unsolicited events, messages of types this client does not expect).
    /// Handlers run on the connection's reader: keep them short.
    pub fn on_push(&self, handler: impl Fn(&Message) + Send + Sync + 'static) {
        self.inner.shared.add_push(Arc::new(handler));
    }

    /// Number of requests waiting for answers (and processes still streaming).
    pub fn pending_requests(&self) -> usize {
        self.inner.shared.pending()
    }

    /// Sends any request and waits for its final answer, within the request timeout.
    /// An `error` answer becomes [`ClientError::Protocol`].
    pub async fn request(&self, msg: Message) -> ClientResult<Message> {
        let limit = self.inner.config.request_timeout;
        self.start::<Message, Message>(msg, false, limit, Ok)
            .await?
            .finish()
            .await
    }

    /// Sends a message that expects no answer.
    pub async fn send(&self, msg: Message) -> ClientResult<()> {
        self.inner.shared.send(msg).await
    }

    /// Sends a request and returns its [`Call`]: events (of type `E`) as a
    /// stream, then the final answer as `R`, within `limit`.
    pub(crate) async fn start<E: FromMessage, R>(
        &self,
        msg: Message,
        with_events: bool,
        limit: Duration,
        map: MapAnswer<R>,
    ) -> ClientResult<Call<E, R>> {
        self.start_route(msg, with_events, false, limit, map).await
    }

    pub(crate) async fn start_route<E: FromMessage, R>(
        &self,
        msg: Message,
        with_events: bool,
        sticky: bool,
        limit: Duration,
        map: MapAnswer<R>,
    ) -> ClientResult<Call<E, R>> {
        let id = msg.id().to_owned();
        if id.is_empty() {
            return Err(ClientError::Invalid("a request needs an id".into()));
        }
        let shared = self.inner.shared.clone();
        let registered = shared.register(&id, with_events, sticky)?;
        let call = Call::new(
            id,
            shared.clone(),
            registered.events,
            registered.answer,
            limit,
            map,
        );
        // On failure the call is dropped, and with it the route.
        shared.send(msg).await?;
        Ok(call)
    }

    /// The wire timeout in seconds plus the configured slack, or `explicit`.
    pub(crate) fn limit_for(&self, wire_secs: u64, explicit: Option<Duration>) -> Duration {
        explicit.unwrap_or_else(|| Duration::from_secs(wire_secs) + self.inner.config.timeout_slack)
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        self.inner.config.request_timeout
    }
}
