//! Hosts that share runs (`[cluster]`): the run journal in NATS JetStream,
//! the tool and skill nodes of every durable run on a work queue, and a
//! lease per run held by the host that schedules it (its coordinator).
//!
//! - **Work**: a coordinator does not call a node's tool or skill itself; it
//!   publishes a [`WorkItem`] (idempotency key `run_id/node_id/attempt` as
//!   `Nats-Msg-Id`) on the subject of the node's toolkit and waits for the
//!   node's result in the journal. Every host that serves the toolkit
//!   (`[cluster] serve`) pulls from the toolkit's shared consumer, runs the
//!   node, journals its result, then acknowledges it (`worker.rs`). A worker
//!   that dies leaves the node unacknowledged: it is delivered again after
//!   `ack_wait_secs`; after `max_deliver` deliveries it fails with
//!   `worker_lost`. A result already journaled for a key is not applied
//!   again, and a delivery whose key has a result is acknowledged without
//!   running.
//! - **Coordination** (`coord.rs`): a run's coordinator holds its lease and
//!   renews it; every host looks for running runs whose lease expired and
//!   takes them over from the journal (finished nodes are not run again;
//!   nodes that were queued are waited for, not queued twice).
//! - **Events**: the journal publishes a run's events on the run's subject,
//!   so `chain/attach` on any host follows a run wherever it executes.

mod coord;
mod runner;
mod worker;

use std::sync::{Arc, Weak};
use std::time::Duration;

use a2e_chain::{NodeCall, NodeError, NodeResult};
use a2e_journal::nats::{Leases, NatsJournal, NatsOptions, WorkConfig, WorkItem, WorkQueue};
use a2e_journal::{Journal, NodeKey, NodeOutcome, RunId};
use a2e_proto::{ErrorCode, NodeKind};

use crate::host::Host;

pub(crate) use coord::Coordination;
pub use coord::start_takeover;
pub use runner::ClusterRunner;

/// The toolkit of skill nodes on the work queue.
pub const SKILLS_TOOLKIT: &str = "skills";
/// The toolkit of the built-in tools (and of tools that name none).
pub const BUILTIN_TOOLKIT: &str = "builtin";

pub use a2e_journal::nats::Cluster;

/// A unique name for this process: the machine, the process id, a suffix.
fn default_name() -> String {
    let machine = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".into());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{machine}-{}-{}",
        std::process::id(),
        suffix.get(..6).unwrap_or_default()
    )
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Connects `host` to the cluster of its `[cluster]` section: the journal
/// in JetStream becomes the host's run journal, and the workers of the
/// toolkits it serves and the dead-letter reader start. Call
/// [`start_takeover`] next (through `runs::resume_unfinished`).
pub(crate) async fn connect(host: &Arc<Host>) -> Result<Arc<dyn Journal>, String> {
    let config = host.config().cluster.clone();
    let name = if config.name.is_empty() {
        default_name()
    } else {
        config.name.clone()
    };
    let journal = NatsJournal::connect(
        &config.nats_url,
        NatsOptions {
            prefix: config.prefix.clone(),
            replicas: config.replicas.max(1),
            host: name.clone(),
            ..NatsOptions::default()
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    let js = journal.jetstream().clone();
    let leases = Leases::open(
        &js,
        &config.prefix,
        name.clone(),
        secs(config.lease_ttl_secs),
    )
    .await
    .map_err(|e| e.to_string())?;
    let queue = WorkQueue::open(
        &js,
        &config.prefix,
        WorkConfig {
            ack_wait: secs(config.ack_wait_secs),
            max_deliver: config.max_deliver,
            backoff: config.backoff_secs.iter().copied().map(secs).collect(),
            batch: 1,
            duplicate_window: secs(config.duplicate_window_secs),
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    let cluster = Arc::new(Cluster::new(journal.clone(), leases, queue, name));
    let as_journal: Arc<dyn Journal> = Arc::new(journal);
    if !host.set_journal(as_journal.clone()) {
        return Err("the host has a run journal already".into());
    }
    if !host.set_cluster(cluster.clone()) {
        return Err("the host is in a cluster already".into());
    }
    // Tools that load on first use are known before their toolkits are served.
    host.registry().load_tools(false).await;
    worker::start(host, &cluster);
    tracing::info!(name = %cluster.name(), url = %config.nats_url, "joined the cluster");
    Ok(as_journal)
}

/// The toolkit whose workers run a node of `kind` calling `name`; `None`
/// when the node runs on the coordinator (processes, and tools this host
/// does not know: their call fails here as it would anywhere).
pub(crate) fn toolkit_of(host: &Host, kind: &NodeKind, name: &str) -> Option<String> {
    if *kind == NodeKind::SKILL {
        return Some(SKILLS_TOOLKIT.into());
    }
    if *kind != NodeKind::TOOL {
        return None;
    }
    let entry = host.registry().tool(name)?;
    Some(
        entry
            .def
            .toolkit
            .clone()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| BUILTIN_TOOLKIT.into()),
    )
}

/// Runs `call` of run `run_id` on a worker of `toolkit`: its result when
/// one is journaled already, else queues it (its trace context in the
/// message's headers) and waits for its result.
pub(crate) async fn run_remote(
    cluster: &Cluster,
    run_id: &str,
    toolkit: String,
    agent: &str,
    trace: WorkTrace<'_>,
    call: NodeCall,
    approval: bool,
) -> NodeResult {
    let failed = |e: a2e_journal::JournalError| {
        NodeError::new(ErrorCode::UNAVAILABLE, format!("cluster: {e}"))
    };
    let journal = cluster.journal();
    let run = RunId::parse(run_id).map_err(failed)?;
    let key = NodeKey::new(run, &call.wire_id(), call.attempt).map_err(failed)?;
    if let Some(outcome) = journal.node_result(&key).await.map_err(failed)? {
        return result_of(outcome);
    }
    let item = WorkItem {
        key: key.clone(),
        toolkit,
        tool: call.name.to_string(),
        input: call.input.into_value(),
        agent: agent.to_owned(),
        chain_id: trace.chain_id.to_owned(),
        deadline_unix_ms: call.deadline.map(unix_ms),
        approval,
    };
    let mut headers: Vec<(&str, String)> = Vec::new();
    if let Some(context) = &trace.context {
        context.inject(|name, value| headers.push((name, value)));
    }
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    cluster
        .queue()
        .publish_with(&item, &headers)
        .await
        .map_err(failed)?;
    // Until its result is in, the node is cancelled on its worker when
    // this wait ends otherwise: a cancel, or the chain's deadline dropping it.
    let mut pending = CancelOnDrop {
        journal: Some(journal.clone()),
        key: key.clone(),
    };
    let result = tokio::select! {
        outcome = journal.wait_node_result(&key) => result_of(outcome.map_err(failed)?),
        () = call.cancel.cancelled() => {
            return Err(NodeError::new(
                ErrorCode::CANCELLED,
                format!("`{}` cancelled while queued or running on a worker", key.node_id()),
            ));
        }
    };
    pending.journal = None;
    result
}

/// Marks a node cancelled for its worker when dropped armed (its
/// coordinator stopped waiting for it before its result came).
struct CancelOnDrop {
    journal: Option<NatsJournal>,
    key: NodeKey,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(journal) = self.journal.take() else {
            return;
        };
        let key = self.key.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = journal.cancel_node(&key).await {
                    tracing::warn!(key = %key, "cluster: cannot cancel the node: {e}");
                }
            });
        }
    }
}

/// Where a queued node sits in its chain's trace.
pub(crate) struct WorkTrace<'a> {
    /// The context of the coordinator's span of the node (`None` with
    /// traces off): sent as `traceparent` / `tracestate` headers.
    pub context: Option<a2e_telemetry::TraceContext>,
    /// The chain's id.
    pub chain_id: &'a str,
}

/// `deadline` on the wall clock, in milliseconds since the Unix epoch, for
/// another host (whose monotonic clock is not this one's).
fn unix_ms(deadline: tokio::time::Instant) -> u64 {
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let at = std::time::SystemTime::now() + left;
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A deadline sent by another host (milliseconds since the Unix epoch) on
/// this host's monotonic clock; one already past is now.
pub(crate) fn deadline_from_unix_ms(ms: u64) -> tokio::time::Instant {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    let left = at
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default()
        .min(std::time::Duration::from_secs(
            crate::host::MAX_TIMEOUT_SECS,
        ));
    tokio::time::Instant::now() + left
}

/// A journaled outcome as a node's result.
fn result_of(outcome: NodeOutcome) -> NodeResult {
    match outcome {
        NodeOutcome::Output { output } => Ok(output),
        NodeOutcome::Error { code, message } => {
            Err(NodeError::new(ErrorCode::new(code.as_str()), message))
        }
    }
}

/// The host of a background task, while it lives.
fn alive(host: &Weak<Host>) -> Option<Arc<Host>> {
    host.upgrade()
}
