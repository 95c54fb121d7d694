//! A chain skill's chain inside a durable run: when a chain skill is called
//! for a node of a journaled run (its call carries the node's idempotency
//! key), its own nodes are journaled in that run under the calling node's id
//! — `NODE/inner` — with the chain itself as `NODE/@chain`. A resumed run
//! then runs the skill's node again (its finished inner nodes answered from
//! the journal, as the run's own are), and a fork from `NODE/inner` runs
//! only what is downstream of `inner` in the skill's chain, and what is
//! downstream of `NODE` in the run's (docs/forks.md). The inner chain's
//! events are not journaled: the run's agent sees the skill's node.

use std::sync::Arc;

use a2e_chain::{ChainEventSink, Event, RunOptions};
use a2e_journal::{NodeKey, NodeOutcome, RunState};
use a2e_proto::ChainRequest;

use crate::chains::{self, Durable, ProgressFn};
use crate::error::HostResult;
use crate::host::{CallOptions, Host};
use crate::journaled::{JournalObserver, Scope, resume_of};
use crate::plugin::CallContext;

/// The record, under a node's id, that holds the chain a chain skill ran
/// for that node.
pub const CHAIN_RECORD: &str = "@chain";

/// The chain the skill called for node `node` of `state` ran, as journaled.
pub fn chain_of(state: &RunState, node: &str) -> Option<ChainRequest> {
    let id = format!("{node}/{CHAIN_RECORD}");
    match state.result_of(&id)? {
        (_, NodeOutcome::Output { output }) => serde_json::from_value(output.clone()).ok(),
        _ => None,
    }
}

/// Whether node `node` of `state` ran a chain skill whose chain is
/// journaled inside the run: it may run again after a crash (its finished
/// inner nodes are not called again).
pub fn journaled_inside(state: &RunState, node: &str) -> bool {
    let id = format!("{node}/{CHAIN_RECORD}");
    state.nodes.iter().any(|r| r.node_id == id)
}

/// Reports each settled inner node as the skill's progress.
struct Progress(ProgressFn);

impl ChainEventSink for Progress {
    fn event(&mut self, event: &Event<'_>) {
        if event.item.is_none() && event.phase != a2e_proto::ChainPhase::START {
            (self.0)(event.progress.settled, event.progress.total, event.node_id);
        }
    }
}

/// Runs `req`, a chain skill's chain, inside the durable run the skill's
/// call belongs to (see the module docs): `Ok` with what it came to (an
/// `Err` in it is the chain refused before it ran), or `Err` handing
/// `progress` back when the call is not a node of a journaled run (the
/// caller runs the chain as it is).
pub async fn run_nested(
    host: &Arc<Host>,
    ctx: &CallContext,
    req: &ChainRequest,
    progress: ProgressFn,
) -> Result<HostResult<a2e_proto::ChainResponse>, ProgressFn> {
    let (Ok(key), Some(journal)) = (
        NodeKey::parse(&ctx.idempotency_key),
        host.journal().cloned(),
    ) else {
        return Err(progress);
    };
    let plan = match chains::plan(host, req) {
        Ok(plan) => plan,
        Err(e) => return Ok(Err(e)),
    };
    let run = key.run_id().clone();
    let prefix = format!("{}/", key.node_id());
    let state = match journal.show_run(&run).await {
        Ok(Some(state)) => state,
        Ok(None) | Err(_) => {
            tracing::warn!(run = %run, "nested chain: the run does not load; run as it is");
            return Err(progress);
        }
    };
    // The chain is journaled once: a fork reads it back.
    if !journaled_inside(&state, key.node_id())
        && let (Ok(chain_key), Ok(chain)) = (
            NodeKey::new(run.clone(), &format!("{prefix}{CHAIN_RECORD}"), 1),
            serde_json::to_value(req),
        )
    {
        let _ = journal
            .node_finished(&chain_key, &NodeOutcome::output(chain))
            .await;
    }
    let scope = Scope {
        prefix: &prefix,
        nodes: req.nodes.iter().map(|n| n.node_id.as_str()).collect(),
    };
    let rerun = |full: &str| {
        let inner = full.strip_prefix(prefix.as_str()).unwrap_or(full);
        crate::may_repeat(host, req, inner) || journaled_inside(&state, full)
    };
    let resume = match resume_of(&*journal, &state, &scope, rerun).await {
        Ok(resume) => resume,
        Err(e) => {
            tracing::warn!(run = %run, "nested chain: not resumed: {e}");
            return Err(progress);
        }
    };
    let mut observer = JournalObserver::new(&journal, &run, true);
    observer.prefix = prefix.clone();
    let durable = Durable {
        // The nodes' idempotency keys: `run/NODE/inner/attempt`.
        run_id: format!("{run}/{}", key.node_id()),
        options: RunOptions {
            resume: Some(resume),
            observer: Some(Arc::new(observer)),
        },
        sink: Progress(progress),
        decorate: None,
        extensions: ctx.extensions.clone(),
    };
    let options = CallOptions::new()
        .session(&ctx.session_id)
        .cancel(&ctx.cancel);
    Ok(Ok(
        chains::run_plan_durable(host, &plan, options, durable).await
    ))
}
