//! The engine: validation, then a run of the scheduler, then the response.

pub(crate) mod resolve;
mod scheduler;
mod state;
#[cfg(test)]
pub(crate) type SlotSize = state::Slot;
#[cfg(test)]
pub(crate) type OutSize = state::Out;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use a2e_proto::{ChainRequest, ChainResponse, Outputs};
use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use self::scheduler::Run;
use self::state::Status;
use crate::config::ChainConfig;
use crate::error::ValidationError;
use crate::events::ChainEventSink;
use crate::graph::Plan;
use crate::resume::RunOptions;
use crate::runner::{DynNodeRunner, NodeRunner};
use crate::validate::validate;

/// Runs chains: validates a [`ChainRequest`], schedules its nodes and calls
/// the [`NodeRunner`] for `tool`, `skill` and `proc` nodes. Cheap to share;
/// one engine serves any number of concurrent chains.
#[derive(Clone)]
pub struct Engine {
    runner: Arc<dyn DynNodeRunner>,
    config: ChainConfig,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine calling `runner`, with the default [`ChainConfig`].
    pub fn new(runner: impl NodeRunner) -> Self {
        Self::from_dyn(Arc::new(runner), ChainConfig::default())
    }

    /// An engine calling a shared, type-erased runner.
    pub fn from_dyn(runner: Arc<dyn DynNodeRunner>, config: ChainConfig) -> Self {
        Self { runner, config }
    }

    /// The same engine with `config`.
    pub fn with_config(mut self, config: ChainConfig) -> Self {
        self.config = config;
        self
    }

    /// The configuration in force.
    pub fn config(&self) -> &ChainConfig {
        &self.config
    }

    /// Validates `req` without running anything (see [`crate::validate()`]).
    pub fn validate<'r>(&self, req: &'r ChainRequest) -> Result<Plan<'r>, ValidationError> {
        validate(req, &self.config)
    }

    /// Validates and runs `req`. Events go to `events` as they happen;
    /// cancelling `cancel` stops the chain (every runner's token fires).
    ///
    /// A refused chain is an `Err` (the host answers with an `error`
    /// message carrying [`ValidationError::code`]); a chain that ran is an
    /// `Ok` response, `success: false` when it failed.
    ///
    /// Must run inside a tokio runtime with its time driver enabled (runner
    /// calls that wait continue on tasks; timeouts use tokio timers).
    /// Dropping the returned future cancels every runner's token.
    pub async fn run(
        &self,
        req: &ChainRequest,
        events: impl ChainEventSink,
        cancel: CancellationToken,
    ) -> Result<ChainResponse, ValidationError> {
        let started = Instant::now();
        let plan = self.validate(req)?;
        Ok(self
            .execute(&plan, events, cancel, started, RunOptions::default())
            .await)
    }

    /// Runs a plan made by [`Engine::validate`].
    pub async fn run_plan(
        &self,
        plan: &Plan<'_>,
        events: impl ChainEventSink,
        cancel: CancellationToken,
    ) -> ChainResponse {
        self.execute(plan, events, cancel, Instant::now(), RunOptions::default())
            .await
    }

    /// Runs a plan durably: resumed from what an earlier run of the same
    /// request finished, its calls observed (see [`RunOptions`] and
    /// `docs/semantics.md`, section 11).
    pub async fn run_plan_with(
        &self,
        plan: &Plan<'_>,
        events: impl ChainEventSink,
        cancel: CancellationToken,
        options: RunOptions,
    ) -> ChainResponse {
        self.execute(plan, events, cancel, Instant::now(), options)
            .await
    }

    async fn execute(
        &self,
        plan: &Plan<'_>,
        events: impl ChainEventSink,
        cancel: CancellationToken,
        started: Instant,
        options: RunOptions,
    ) -> ChainResponse {
        let chain_token = cancel.child_token();
        // If the caller drops this future mid-run, every runner still hears
        // that the chain is over.
        let _cancel_on_drop = chain_token.clone().drop_guard();
        let mut run = Run::new(
            plan,
            &self.config,
            self.runner.clone(),
            events,
            chain_token.clone(),
            options,
        );
        // A panic in the scheduler itself still ends in one response.
        let driven = AssertUnwindSafe(run.drive(&cancel)).catch_unwind().await;
        if let Err(panic) = driven {
            run.chain_panicked(None, panic);
        }
        // Every event is out of the sink before the response.
        run.ev.sink.flush();
        // Whatever still runs (late map items, stragglers after a failure)
        // is told to stop, and aborted after the grace period.
        chain_token.cancel();
        run.release_leftovers(self.config.cancel_grace);
        respond(plan, run, started)
    }
}

fn respond<S>(plan: &Plan<'_>, mut run: Run<'_, '_, S>, started: Instant) -> ChainResponse {
    let final_output = plan
        .nodes
        .iter()
        .zip(&run.slots)
        .zip(&run.outs)
        .rev()
        .find(|((node, slot), _)| node.terminal && slot.status == Status::Done)
        .map_or(Value::Null, |(_, out)| out.output.clone());
    let mut outputs = Outputs::with_capacity(plan.total);
    for ((node, slot), out) in plan.nodes.iter().zip(&run.slots).zip(run.outs.iter_mut()) {
        if slot.status == Status::Done {
            // From the plan's copy of the id: the request's nodes stay cold.
            outputs.push(node.id.clone(), std::mem::take(&mut out.output));
        }
    }
    let nodes_run = run.nodes_run;
    let failure = run.failure.take();
    ChainResponse {
        req_id: plan.req.id.clone(),
        chain_id: plan.req.chain_id.clone(),
        success: failure.is_none(),
        outputs,
        final_output,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        nodes_run,
        error: failure,
        ..ChainResponse::default()
    }
}
