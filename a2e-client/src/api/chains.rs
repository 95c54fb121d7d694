//! `chain/*`: run a DAG, with its events as a stream and the final `chain/resp`.

use std::time::Duration;

use a2e_proto::{ChainEvent, ChainRequest, ChainResponse, Message};

use crate::call::Call;
use crate::client::{Client, unexpected};
use crate::error::ClientResult;

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

    /// Runs a chain to its end, ignoring its events.
    pub async fn run_to_end(&self, req: ChainRequest) -> ClientResult<ChainResponse> {
        self.run(req).await?.finish().await
    }
}
