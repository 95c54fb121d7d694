//! The workers of a host: for each toolkit it serves, `[cluster] workers`
//! loops pulling that toolkit's nodes, each running one node at a time on
//! this host (on behalf of the run's agent, with the node's idempotency
//! key), journaling its result, then acknowledging it. While a node runs,
//! its worker tells the server every third of `ack_wait` that it is still
//! at it, so only a dead worker's node is delivered again; a cancel of the
//! node or its run stops it. One loop per host reads the nodes whose
//! deliveries ran out and fails them.
//!
//! Telemetry: a node's call span hangs under the coordinator's span of the
//! node (the message's `traceparent`), so a run across hosts is one trace;
//! a delivery after the first counts in `a2e.cluster.redeliveries`, and
//! with metrics on the host records `a2e.cluster.queue.depth` of each
//! toolkit it serves every second.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use a2e_chain::{NodeCall, NodeInput};
use a2e_journal::nats::{Job, NatsJournal, WorkQueue, Worker};
use a2e_journal::{Journal, NodeOutcome};
use a2e_proto::NodeKind;
use a2e_telemetry::TraceContext;
use tokio_util::sync::CancellationToken;

use super::{Cluster, SKILLS_TOOLKIT, alive, toolkit_of};
use crate::chains::HostRunner;
use crate::host::Host;

/// How long a worker waits before pulling again after an error.
const RETRY: Duration = Duration::from_secs(1);

/// How often a host records the depth of the work queues it serves.
const DEPTH_EVERY: Duration = Duration::from_secs(1);

/// The toolkits this host serves, among those it has.
fn served(host: &Host) -> BTreeSet<String> {
    let mut kits: BTreeSet<String> = host
        .registry()
        .tools()
        .iter()
        .filter_map(|t| toolkit_of(host, &NodeKind::TOOL, &t.def.name))
        .collect();
    kits.insert(SKILLS_TOOLKIT.into());
    kits.retain(|k| host.config().cluster.serves(k));
    kits
}

/// Starts the workers of the toolkits `host` serves and the dead-letter
/// reader; they stop with the cluster.
pub(super) fn start(host: &Arc<Host>, cluster: &Arc<Cluster>) {
    let kits = served(host);
    let config = &host.config().cluster;
    tracing::info!(toolkits = ?kits, "cluster: serving toolkits");
    let every = (Duration::from_secs(config.ack_wait_secs) / 3).max(Duration::from_millis(100));
    if host.telemetry().metrics().is_enabled() && !kits.is_empty() {
        tokio::spawn(sample_depth(
            Arc::downgrade(host),
            cluster.queue().clone(),
            kits.iter().cloned().collect(),
            cluster.shutdown(),
        ));
    }
    for kit in kits {
        for _ in 0..config.workers {
            tokio::spawn(work(
                Arc::downgrade(host),
                cluster.queue().clone(),
                cluster.journal().clone(),
                kit.clone(),
                every,
                cluster.shutdown(),
            ));
        }
    }
    tokio::spawn(dead_letters(
        cluster.queue().clone(),
        cluster.journal().clone(),
        cluster.shutdown(),
    ));
}

async fn pull(queue: &WorkQueue, kit: &str, stop: &CancellationToken) -> Option<Worker> {
    loop {
        match queue.worker(kit).await {
            Ok(w) => return Some(w),
            Err(e) => tracing::warn!(toolkit = kit, "cluster: cannot pull work: {e}"),
        }
        tokio::select! {
            () = stop.cancelled() => return None,
            () = tokio::time::sleep(RETRY) => {}
        }
    }
}

async fn work(
    host: Weak<Host>,
    queue: WorkQueue,
    journal: NatsJournal,
    kit: String,
    every: Duration,
    stop: CancellationToken,
) {
    let Some(mut worker) = pull(&queue, &kit, &stop).await else {
        return;
    };
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = worker.next() => next,
        };
        match next {
            Some(Ok(job)) => {
                let Some(host) = alive(&host) else { return };
                run_job(&host, &journal, job, every).await;
            }
            Some(Err(e)) => tracing::warn!(toolkit = %kit, "cluster: {e}"),
            None => {
                let Some(w) = pull(&queue, &kit, &stop).await else {
                    return;
                };
                worker = w;
            }
        }
    }
}

/// Runs one delivered node and completes it.
async fn run_job(host: &Arc<Host>, journal: &NatsJournal, job: Job, every: Duration) {
    let item = job.item().clone();
    let key = item.key.clone();
    if job.delivered() > 1 {
        host.telemetry().metrics().redelivered(&item.toolkit);
    }
    // A redelivery of a node whose result is journaled (its worker died
    // between journaling and acknowledging): acknowledged, not run.
    match journal.node_result(&key).await {
        Ok(Some(outcome)) => {
            if let Err(e) = job.complete(journal, &outcome).await {
                tracing::warn!(key = %key, "cluster: {e}");
            }
            return;
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(key = %key, "cluster: {e}");
            let _ = job.release(Some(RETRY)).await;
            return;
        }
    }
    tracing::debug!(key = %key, delivered = job.delivered(), "cluster: running a node");
    // Its start again, with what it runs with (the coordinator's detail
    // would otherwise be replaced by a bare start).
    let mut start = crate::journaled::node_start(crate::redact::redact(&item.input));
    // Who ran it, for `a2e runs show` and the live view.
    start.host = host.cluster().map(|c| c.name().to_owned());
    let _ = journal.node_started_with(&key, &start).await;
    // One session per node: its identity is the run's agent, its processes
    // end with it.
    let session = format!("work-{key}");
    host.register_session(&session, &item.agent);
    let mut runner = HostRunner::new(host.clone(), &session)
        .durable(key.run_id().as_str())
        .remote_parent(trace_context(&job), &item.chain_id);
    if item.approval {
        runner = runner.approving_node(key.node_id());
    }
    let kind = if item.toolkit == SKILLS_TOOLKIT {
        NodeKind::SKILL
    } else {
        NodeKind::TOOL
    };
    let token = CancellationToken::new();
    // The coordinator's deadline of the node (its own timeout, or its
    // chain's): the call runs under it, not under this host's default.
    let deadline = item.deadline_unix_ms.map(super::deadline_from_unix_ms);
    let call = NodeCall {
        node_id: Arc::from(key.node_id()),
        item: None,
        kind,
        name: Arc::from(item.tool.as_str()),
        input: NodeInput::from_map(item.input.as_object().cloned().unwrap_or_default()),
        cancel: Arc::new(token.clone()),
        deadline,
        attempt: key.attempt(),
        notices: None,
    };
    // A cancel of the node (its coordinator's deadline or cancel) or of its
    // run (`a2e runs cancel`) stops the call.
    let watcher = {
        let (journal, key, token) = (journal.clone(), key.clone(), token.clone());
        tokio::spawn(async move {
            journal.node_cancelled(&key).await;
            tracing::debug!(key = %key, "cluster: the node was cancelled");
            token.cancel();
        })
    };
    let timed_out = timeout_error(&call);
    let run = runner.run_local(call);
    tokio::pin!(run);
    let past_deadline = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(past_deadline);
    let result = loop {
        tokio::select! {
            result = &mut run => break result,
            // The runner leaves a node's deadline to whoever set it: here,
            // this worker. The call gets the engine's grace to wind down.
            () = &mut past_deadline => {
                token.cancel();
                let _ = tokio::time::timeout(crate::host::CANCEL_GRACE, &mut run).await;
                break Err(timed_out);
            }
            () = tokio::time::sleep(every) => {
                if let Err(e) = job.progress().await {
                    tracing::warn!(key = %key, "cluster: {e}");
                }
            }
        }
    };
    watcher.abort();
    token.cancel();
    host.end_session(&session);
    let outcome = match result {
        Ok(v) => NodeOutcome::output(v),
        Err(e) => NodeOutcome::error(e.code.as_str(), e.message),
    };
    match job.complete(journal, &outcome).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(key = %key, "cluster: a result was journaled already; this one is not applied")
        }
        Err(e) => tracing::warn!(key = %key, "cluster: the result was not completed: {e}"),
    }
}

/// The error of a node whose deadline passed on this worker: the engine's
/// words for a node's own timeout, or the chain's deadline.
fn timeout_error(call: &NodeCall) -> a2e_chain::NodeError {
    let message = match call.own_timeout() {
        Some(own) => format!("node timed out after {} s", own.as_secs()),
        None => "the chain's deadline passed while the node ran on a worker".to_owned(),
    };
    a2e_chain::NodeError::new(a2e_proto::ErrorCode::TIMEOUT, message)
}

/// The coordinator's span of the node, from the message's `traceparent`
/// (and `tracestate`) headers; `None` without one or when it is unusable
/// (the call then starts a trace of its own).
fn trace_context(job: &Job) -> Option<TraceContext> {
    match TraceContext::extract(|name| job.header(name))? {
        Ok(context) => Some(context),
        Err(e) => {
            tracing::debug!(key = %job.item().key, "cluster: the node's trace context: {e}");
            None
        }
    }
}

/// Records the depth of every toolkit this host serves
/// (`a2e.cluster.queue.depth`: nodes waiting for a worker) every
/// [`DEPTH_EVERY`], while metrics are on.
async fn sample_depth(
    host: Weak<Host>,
    queue: WorkQueue,
    kits: Vec<String>,
    stop: CancellationToken,
) {
    loop {
        {
            let Some(host) = alive(&host) else { return };
            let metrics = host.telemetry().metrics();
            for kit in &kits {
                match queue.depth(kit).await {
                    Ok(depth) => metrics.queue_depth(kit, depth),
                    Err(e) => tracing::debug!(toolkit = %kit, "cluster: queue depth: {e}"),
                }
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(DEPTH_EVERY) => {}
        }
    }
}

/// Fails the nodes whose deliveries ran out (`worker_lost`).
async fn dead_letters(queue: WorkQueue, journal: NatsJournal, stop: CancellationToken) {
    loop {
        let mut dead = loop {
            match queue.dead_letters().await {
                Ok(d) => break d,
                Err(e) => tracing::warn!("cluster: cannot read dead letters: {e}"),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(RETRY) => {}
            }
        };
        loop {
            let next = tokio::select! {
                () = stop.cancelled() => return,
                next = dead.fail_in(&journal as &dyn Journal) => next,
            };
            match next {
                Some(Ok(d)) => tracing::warn!(key = %d.item.key, deliveries = d.deliveries,
                    "cluster: a node's workers kept stopping; it failed with worker_lost"),
                Some(Err(e)) => tracing::warn!("cluster: dead letter: {e}"),
                None => break,
            }
        }
    }
}
