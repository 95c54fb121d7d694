//! The chain plugin (priority 10): runs `chain/req` on the a2e-chain engine
//! with the host's tools, skills and processes as node runners.
//!
//! - `tool` nodes call the tool with the node's resolved input as arguments
//!   (validated like any call); the node's output is the tool result's `data`.
//! - `skill` nodes call the skill; the output is the skill result's `data`.
//! - `proc` nodes run `input.cmd` (argv, no shell; `cwd`, `env` optional)
//!   through the proc capability and wait for exit; the output is
//!   `{exit_code, stdout, stderr}`, and a non-zero exit fails the node.
//!
//! A node failure carries the callee's error code (`tool_error`, `timeout`,
//! `tool_denied`, …). Every node call gets the chain's cancellation token, so
//! a chain timeout or a cancelled session stops the tools and kills processes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use a2e_chain::{ChainConfig, ChainEventSink, DynNodeRunner, Engine, Event, Plan, RunOptions};
use a2e_proto::{ChainNode, ChainRequest, ChainResponse, ErrorCode};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use a2e_telemetry::{OpSpan, WorkflowKind};

use crate::error::{HostError, HostResult};
use crate::host::{CallOptions, Host};
use crate::outbound::{EventStream, Outbound};
use sink::{LineSink, Tee};

/// Priority of the chain plugin (a2e-core.md §6).
pub const CHAIN_PLUGIN_PRIORITY: i32 = 10;

mod catalog;
mod runner;
mod sink;
#[cfg(test)]
mod tests;

pub use catalog::check_catalog;
pub use runner::HostRunner;

/// The engine for a session's chains: a request without a timeout gets the
/// host's default chain timeout; the nodes' spans hang under `op`.
fn engine(
    host: &Arc<Host>,
    session_id: &str,
    op: &OpSpan,
    req: &ChainRequest,
    durable: Option<(&str, Option<Decorate>)>,
    extensions: crate::plugin::Extensions,
) -> Engine {
    let mut runner = HostRunner::new(host.clone(), session_id)
        .carrying(extensions)
        .approving(req);
    if op.is_recording() {
        runner = runner.traced(op.span().clone(), &req.chain_id);
    }
    match durable {
        Some((run_id, decorate)) => {
            runner = runner.durable(run_id);
            match decorate {
                Some(decorate) => Engine::from_dyn(decorate(runner), run_config(host, req)),
                None => Engine::new(runner).with_config(run_config(host, req)),
            }
        }
        None => Engine::new(runner).with_config(run_config(host, req)),
    }
}

/// Wraps a durable run's node runner before its engine takes it (the
/// cluster sends nodes to its workers this way; see `crate::runs`).
pub type Decorate = Box<dyn FnOnce(HostRunner) -> Arc<dyn DynNodeRunner> + Send>;

/// The span of chain `chain_id` (`invoke_workflow`) of `session_id`.
fn chain_span(host: &Host, session_id: &str, chain_id: &str) -> OpSpan {
    host.telemetry()
        .workflow(WorkflowKind::Chain, None)
        .chain(chain_id)
        .session(session_id)
        .start()
}

/// A finished chain on its span and in the metrics.
fn record(op: &OpSpan, timer: a2e_telemetry::Timer<'_>, resp: &ChainResponse) {
    let error = resp.error.as_ref();
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .unwrap_or(ErrorCode::RUNTIME_ERROR.as_str());
    if resp.success {
        timer.workflow(WorkflowKind::Chain, a2e_telemetry::metrics::OK);
    } else {
        let message = error
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        op.error(code, message);
        timer.workflow(WorkflowKind::Chain, code);
    }
}

/// `fut` under `op`'s span when it records (no wrapper otherwise).
async fn traced<F: std::future::Future>(op: &OpSpan, fut: F) -> F::Output {
    if op.is_recording() {
        tracing::Instrument::instrument(fut, op.span().clone()).await
    } else {
        fut.await
    }
}

/// The chain configuration of `host`'s sessions.
fn config(host: &Host) -> ChainConfig {
    ChainConfig {
        default_timeout_secs: host.config().timeouts.chain_secs,
        ..ChainConfig::default()
    }
}

/// The engine's configuration for `req`: its calls get a handle to the
/// chain's events when one may wait for a person's decision (the host has
/// `[[approvals]]`, or a node asks for one), to say so in the chain's events.
fn run_config(host: &Host, req: &ChainRequest) -> ChainConfig {
    ChainConfig {
        notices: !host.config().approvals.is_empty()
            || req.nodes.iter().any(ChainNode::approval_required),
        ..config(host)
    }
}

fn refusal(e: a2e_chain::ValidationError) -> HostError {
    HostError::InvalidChain {
        code: e.code(),
        message: e.to_string(),
        detail: e.detail(),
    }
}

/// Validates a chain without running it.
pub fn validate(host: &Arc<Host>, req: &ChainRequest) -> HostResult<usize> {
    plan(host, req).map(|_| req.nodes.len())
}

/// Runs a `chain/req` for a session. Events go to the options' event stream
/// as `chain/event`s when the request asks for streaming. `Err` is a refusal
/// (invalid chain).
pub async fn run_request(
    host: &Arc<Host>,
    req: &ChainRequest,
    options: CallOptions<'_>,
) -> HostResult<ChainResponse> {
    let plan = plan(host, req)?;
    Ok(run_plan(host, &plan, options).await)
}

/// Validates a `chain/req` for [`run_plan`]; `Err` is a refusal (invalid
/// chain). A caller that answers the request over a transport keeps the
/// plan until the answer is out: freeing a large chain's compiled nodes
/// takes a while and need not delay it.
pub fn plan<'r>(host: &Arc<Host>, req: &'r ChainRequest) -> HostResult<Plan<'r>> {
    a2e_chain::validate(req, &config(host)).map_err(refusal)
}

/// Runs a chain validated by [`plan`] for a session, as [`run_request`]
/// does (its `duration_ms` counts from here).
pub async fn run_plan(
    host: &Arc<Host>,
    plan: &Plan<'_>,
    options: CallOptions<'_>,
) -> ChainResponse {
    let (session_id, stream, cancel) = options.into_parts();
    let fresh;
    let cancel = match cancel {
        Some(token) => token,
        None => {
            fresh = CancellationToken::new();
            &fresh
        }
    };
    let stream = stream.map(EventStream::into_sender);
    let req = plan.request();
    let op = chain_span(host, session_id, &req.chain_id);
    let timer = host.telemetry().metrics().timer();
    let _in_flight = host.telemetry().metrics().run_started("chain");
    let resp = traced(
        &op,
        run_plan_in::<()>(host, session_id, plan, stream, cancel, &op, None),
    )
    .await;
    record(&op, timer, &resp);
    resp
}

/// A durable run of a chain: its id, what it resumes from and who observes
/// its calls, and the sink that journals its events (see `crate::runs`).
pub struct Durable<S> {
    /// The run's id (the nodes' idempotency keys start with it).
    pub run_id: String,
    /// Resume and call observer.
    pub options: RunOptions,
    /// Journals every event (whether or not the request streams).
    pub sink: S,
    /// Wraps the run's node runner (a cluster's coordinator sends nodes to
    /// its workers).
    pub decorate: Option<Decorate>,
    /// What the nodes' calls carry (those of the call the chain runs for:
    /// a chain skill's), empty for an agent's chain.
    pub extensions: crate::plugin::Extensions,
}

/// Runs a chain validated by [`plan`] durably, as [`run_plan`] does, with
/// its events also going to `durable.sink` and its calls observed.
pub async fn run_plan_durable<S: ChainEventSink>(
    host: &Arc<Host>,
    plan: &Plan<'_>,
    options: CallOptions<'_>,
    durable: Durable<S>,
) -> ChainResponse {
    let (session_id, stream, cancel) = options.into_parts();
    let fresh;
    let cancel = match cancel {
        Some(token) => token,
        None => {
            fresh = CancellationToken::new();
            &fresh
        }
    };
    let stream = stream.map(EventStream::into_sender);
    let req = plan.request();
    let op = chain_span(host, session_id, &req.chain_id);
    let timer = host.telemetry().metrics().timer();
    let _in_flight = host.telemetry().metrics().run_started("chain");
    let resp = traced(
        &op,
        run_plan_in(host, session_id, plan, stream, cancel, &op, Some(durable)),
    )
    .await;
    record(&op, timer, &resp);
    resp
}

async fn run_plan_in<S: ChainEventSink>(
    host: &Arc<Host>,
    session_id: &str,
    plan: &Plan<'_>,
    stream: Option<mpsc::Sender<Outbound>>,
    cancel: &CancellationToken,
    op: &OpSpan,
    durable: Option<Durable<S>>,
) -> ChainResponse {
    let req = plan.request();
    let (run_id, journal, options, decorate, extensions) = match durable {
        Some(d) => (
            Some(d.run_id),
            Some(d.sink),
            d.options,
            d.decorate,
            d.extensions,
        ),
        None => (
            None,
            None,
            RunOptions::default(),
            None,
            crate::plugin::Extensions::new(),
        ),
    };
    let engine = engine(
        host,
        session_id,
        op,
        req,
        run_id.as_deref().map(|id| (id, decorate)),
        extensions,
    );
    let Some(stream) = stream.filter(|_| req.streaming) else {
        return match journal {
            Some(sink) => {
                engine
                    .run_plan_with(plan, sink, cancel.clone(), options)
                    .await
            }
            // Not streaming nor journaled: the events are not even built.
            None => engine.run_plan(plan, (), cancel.clone()).await,
        };
    };
    let (queue, mut queued_rx) = mpsc::unbounded_channel::<(Outbound, usize)>();
    let queued = Arc::new(AtomicUsize::new(0));
    // The sink cancels the run (not the caller's token) when the agent
    // leaves too much unread.
    let run_cancel = cancel.child_token();
    let limit = host.config().max_queued_event_bytes;
    let sink = LineSink::new(
        &req.id,
        stream.clone(),
        queue,
        queued.clone(),
        limit,
        run_cancel.clone(),
    )
    .for_run(run_id.as_deref().unwrap_or_default());
    // Runs the sink could not hand on at once, in order, as the channel
    // takes them.
    let forward = async move {
        while let Some((lines, len)) = queued_rx.recv().await {
            // A session that is gone takes nothing more; the rest is dropped.
            let _ = stream.send(lines).await;
            queued.fetch_sub(len, Ordering::AcqRel);
        }
    };
    let own = run_cancel.clone();
    let run = async move {
        match journal {
            Some(journal) => {
                engine
                    .run_plan_with(plan, Tee(sink, journal), run_cancel, options)
                    .await
            }
            None => engine.run_plan(plan, sink, run_cancel).await,
        }
    };
    let (mut resp, ()) = tokio::join!(run, forward);
    // Only the sink fires the run's own token without the caller's.
    if own.is_cancelled() && !cancel.is_cancelled() {
        explain_overflow(&mut resp, limit);
    }
    resp
}

/// A run cancelled by its own sink: the response's error says that the
/// agent did not read the events.
fn explain_overflow(resp: &mut ChainResponse, limit: usize) {
    let Some(error) = resp.error.as_mut() else {
        return;
    };
    if error.get("code").and_then(Value::as_str) == Some(ErrorCode::CANCELLED.as_str()) {
        error.insert(
            "message".into(),
            Value::from(format!(
                "chain cancelled: the agent left more than {limit} bytes of its events \
                 unread (max_queued_event_bytes)"
            )),
        );
    }
}

/// Progress callback: (nodes settled, total, node id).
pub type ProgressFn = Box<dyn FnMut(usize, usize, &str) + Send>;

/// Runs a chain as part of the call `ctx` (a chain skill's): in its session,
/// cancelled with it, its nodes' calls carrying its extensions; reports
/// progress. `Err` is a refusal (invalid chain).
pub async fn run_chain(
    host: &Arc<Host>,
    ctx: &crate::plugin::CallContext,
    req: &ChainRequest,
    mut progress: ProgressFn,
) -> HostResult<ChainResponse> {
    let session_id: &str = &ctx.session_id;
    let sink = move |event: &Event<'_>| {
        if event.item.is_none() && event.phase != a2e_proto::ChainPhase::START {
            progress(event.progress.settled, event.progress.total, event.node_id);
        }
    };
    let op = chain_span(host, session_id, &req.chain_id);
    let timer = host.telemetry().metrics().timer();
    let _in_flight = host.telemetry().metrics().run_started("chain");
    let engine = engine(host, session_id, &op, req, None, ctx.extensions.clone());
    let resp = traced(&op, engine.run(req, sink, ctx.cancel.clone()))
        .await
        .map_err(refusal)?;
    record(&op, timer, &resp);
    Ok(resp)
}
