//! `chain/*`: run a DAG, with its events as a stream and the final `chain/resp`.

use std::time::Duration;

use a2e_proto::{
    ChainAttach, ChainEvent, ChainFork, ChainRequest, ChainResponse, DagRequest, Message,
};

use crate::call::Call;
use crate::client::{Client, unexpected};
use crate::error::ClientResult;

/// The run [`ChainApi::attach`] re-attaches to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachTarget {
    /// The run's id.
    Run(String),
    /// The id of the `chain/req` that started it (the agent's newest run of
    /// that id).
    ChainRequest(String),
}

/// The chains capability of a [`Client`].
#[derive(Debug, Clone, Copy)]
pub struct ChainApi<'a> {
    client: &'a Client,
}

impl<'a> ChainApi<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Self { client }
    }

    /// Starts a chain: its `chain/event`s as a stream (when `req.streaming`),
    /// then [`Call::finish`] gives the `chain/resp`. A chain that ran and
    /// failed is a response with `success: false`; a chain refused before
    /// running (a cycle, an unknown node) is an error. The session id is
    /// filled in. The client waits `req.timeout` plus the slack.
    pub async fn run(&self, req: ChainRequest) -> ClientResult<Call<ChainEvent, ChainResponse>> {
        let limit = self
            .client
            .limit_for(if req.timeout == 0 { 300 } else { req.timeout }, None);
        self.run_within(req, limit).await
    }

    /// [`ChainApi::run`] with an explicit client-side limit.
    pub async fn run_within(
        &self,
        mut req: ChainRequest,
        limit: Duration,
    ) -> ClientResult<Call<ChainEvent, ChainResponse>> {
        req.session_id = self.client.session_id().to_owned();
        let streaming = req.streaming;
        self.client
            .start(req.into(), streaming, limit, |msg| match msg {
                Message::ChainResponse(resp) => Ok(resp),
                other => Err(unexpected("chain/resp", &other)),
            })
            .await
    }

    /// Runs a chain to its end, handing each event to `on_event` as it arrives.
    pub async fn run_with_events(
        &self,
        req: ChainRequest,
        on_event: impl FnMut(ChainEvent),
    ) -> ClientResult<ChainResponse> {
        self.run(req).await?.finish_with(on_event).await
    }

    /// Re-attaches to a durable run (the `chain/attach` wire extension,
    /// `docs/durability.md`): named by its run id, its events from
    /// `from_seq` on (the journaled ones, then the live ones, each `seq`
    /// once), then [`Call::finish`] gives its `chain/resp`. The events and
    /// the answer carry the attach request's id as `req_id`. Refused with
    /// `unknown_run` (no such run), `unauthorized` (another agent's run) or
    /// `unavailable` (the host journals no runs). `limit` is how long the
    /// client waits for the answer.
    pub async fn attach(
        &self,
        target: AttachTarget,
        from_seq: u64,
        limit: Duration,
    ) -> ClientResult<Call<ChainEvent, ChainResponse>> {
        let mut attach = ChainAttach {
            from_seq,
            ..Default::default()
        };
        match target {
            AttachTarget::Run(id) => attach.run_id = id,
            AttachTarget::ChainRequest(id) => attach.chain_req_id = id,
        }
        self.client
            .start(attach.into(), true, limit, |msg| match msg {
                Message::ChainResponse(resp) => Ok(resp),
                other => Err(unexpected("chain/resp", &other)),
            })
            .await
    }

    /// Runs an ACMP Layer 2 task DAG on the host (the `dag/req` wire
    /// extension, `docs/durability.md`): its tasks' transitions as
    /// `chain/event`s (when `req.streaming`), then [`Call::finish`] gives the
    /// `chain/resp` (with the run's id when the host journals its runs, for
    /// [`ChainApi::attach`]). A DAG the host cannot read is refused with
    /// `schema_violation`; a host built without ACMP DAGs answers
    /// `unavailable`. `limit` is how long the client waits for the answer.
    pub async fn run_dag(
        &self,
        req: DagRequest,
        limit: Duration,
    ) -> ClientResult<Call<ChainEvent, ChainResponse>> {
        let streaming = req.streaming;
        self.client
            .start(req.into(), streaming, limit, |msg| match msg {
                Message::ChainResponse(resp) => Ok(resp),
                other => Err(unexpected("chain/resp", &other)),
            })
            .await
    }

    /// Forks one of the agent's journaled chain runs from a node (the
    /// `chain/fork` wire extension, `docs/forks.md`): a new run in which
    /// every node not downstream of `req.from_node` takes the result the run
    /// journaled, and that node and what depends on it run; its events (when
    /// `req.streaming`), then [`Call::finish`] gives its `chain/resp`, whose
    /// `run_id` names the new run. Refused with `unknown_run`,
    /// `unauthorized` (another agent's run), `schema_violation` (no such
    /// node, not a chain) or `unavailable` (no journal). `limit` is how long
    /// the client waits for the answer.
    pub async fn fork(
        &self,
        req: ChainFork,
        limit: Duration,
    ) -> ClientResult<Call<ChainEvent, ChainResponse>> {
        let streaming = req.streaming;
        self.client
            .start(req.into(), streaming, limit, |msg| match msg {
                Message::ChainResponse(resp) => Ok(resp),
                other => Err(unexpected("chain/resp", &other)),
            })
            .await
    }

    /// Runs a chain to its end, ignoring its events.
    pub async fn run_to_end(&self, req: ChainRequest) -> ClientResult<ChainResponse> {
        self.run(req).await?.finish().await
    }
}
