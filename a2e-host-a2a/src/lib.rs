//! The A2E host as an A2A (Agent2Agent, v1.0) agent.
//!
//! An A2A client discovers the host's published skills on its Agent Card
//! (`/.well-known/agent-card.json`), sends one a message, and follows the
//! task it becomes — over JSON-RPC 2.0 (`POST /`) or HTTP+JSON
//! (`POST /message:send`, `GET /tasks/{id}`, …), answers and streams
//! (server-sent events) as the specification gives them.
//!
//! - A message names its skill in `metadata.skill` (of the message or of
//!   the request); an agent with one skill takes it by default. The
//!   skill's arguments are the message's data part (an object), or
//!   `{"text": …}` of its text parts.
//! - Every task is a run of the host's journal (kind `a2a_task`), created
//!   before the client hears of it: any host with the journal answers
//!   `GetTask`, `ListTasks` and `CancelTask`, after a restart or from
//!   another host of the cluster, and `a2e runs` lists it. A task whose host
//!   stopped before it ended is failed by the host that takes the run up.
//! - The skill's events become `TaskStatusUpdateEvent`s (state working, an
//!   agent message with the event); its output becomes the task's artifact.
//! - A call of the task that waits for approval puts the task in
//!   `TASK_STATE_INPUT_REQUIRED`; the client's next message to the task is
//!   the decision.
//! - Push notifications: webhooks set for a task (on `[http] allow_hosts`)
//!   get its events ([`push`]).
//!
//! docs/a2a.md has the details and what is not served yet.
//!
//! ```no_run
//! # async fn serve(host: std::sync::Arc<a2e_host_core::host::Host>) -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let base = format!("http://{}", listener.local_addr()?);
//! let agent = a2e_host_a2a::A2aAgent::new(host, base);
//! agent.serve(listener, std::future::pending()).await
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod card;
mod checks;
pub mod client;
mod input;
mod jsonrpc;
mod live;
mod ops;
pub mod push;
mod reply;
mod rest;
mod send;
mod stream;
mod tasks;
mod turns;

use std::sync::Arc;

use a2e_host_core::host::Host;
use axum::Router;
use axum::routing::{get, post};

pub use card::agent_card;
pub use reply::A2A_KEY;
pub use send::{SKILL_KEY, arguments_of};
pub use tasks::task_of;
pub use turns::{ANSWER_WAIT, IncomingMessage};

/// The host served as an A2A agent: its card, its tasks running here.
pub struct A2aAgent {
    host: Arc<Host>,
    base_url: String,
    live: live::Live,
    /// Whether a task may have push configurations: one was set here, or
    /// another host of the cluster may set one.
    pushes: std::sync::atomic::AtomicBool,
    /// When the agent was made (its card's `Last-Modified`).
    since: std::time::SystemTime,
}

impl std::fmt::Debug for A2aAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aAgent")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl A2aAgent {
    /// The agent of `host`, reached at `base_url` (`http://host:port`, no
    /// trailing slash): the URL its card names for both bindings.
    pub fn new(host: Arc<Host>, base_url: impl Into<String>) -> Arc<Self> {
        let base_url = base_url.into().trim_end_matches('/').to_owned();
        let pushes = std::sync::atomic::AtomicBool::new(host.cluster().is_some());
        Arc::new(Self {
            host,
            base_url,
            live: live::Live::default(),
            pushes,
            since: std::time::SystemTime::now(),
        })
    }

    /// The host.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Serves the agent on `listener` until `shutdown` resolves.
    pub async fn serve(
        self: &Arc<Self>,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await
    }

    /// The routes: the card, JSON-RPC at `/`, HTTP+JSON beside it.
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route(a2a_proto::headers::AGENT_CARD_PATH, get(card::serve_card))
            .route("/", post(jsonrpc::serve))
            .fallback(rest::serve)
            .with_state(self.clone())
    }
}
