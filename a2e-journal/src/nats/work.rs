//! The work queue: a run's tool and skill nodes as messages on a
//! work-queue stream, one subject per toolkit, pulled by every host that
//! serves the toolkit (one durable consumer per toolkit, shared), and
//! acknowledged only after the result is in the journal.
//!
//! A worker that dies leaves its message unacknowledged: the server
//! delivers it again after `ack_wait` (or the consumer's `backoff`) to
//! another worker, with the same idempotency key. After `max_deliver`
//! deliveries the server gives up and publishes an advisory, which the
//! `DEAD` stream keeps: [`DeadLetters`] turns each into the node's failure
//! ([`WORKER_LOST`]), so a poison node ends instead of looping. A result
//! journaled twice (a worker that was only slow, and its replacement) is
//! applied once: the journal keeps the first result of a key.

use std::time::Duration;

use async_nats::header::{self, HeaderMap};
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, pull};
use async_nats::jetstream::{self, AckKind, stream};
use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::streams::get_stream;
use super::{Names, nats_err, token};
use crate::error::{JournalError, Result};
use crate::ids::NodeKey;
use crate::journal::Journal;
use crate::model::NodeOutcome;

/// The code of a node whose deliveries ran out: its worker stopped (died,
/// or was killed by the node) `max_deliver` times.
pub const WORKER_LOST: &str = "worker_lost";

/// How long one pull waits for work on the server before it is asked again.
const PULL_WAIT: Duration = Duration::from_secs(5);

/// How work is redelivered.
#[derive(Debug, Clone)]
pub struct WorkConfig {
    /// How long a worker has to acknowledge a node before it is delivered
    /// again (default 30 s; a worker running a longer node reports progress
    /// with [`Job::progress`]). With `backoff` set, the server waits
    /// `backoff[n]` before the n-th redelivery instead.
    pub ack_wait: Duration,
    /// Most deliveries of one node (default 5).
    pub max_deliver: i64,
    /// Waits before each redelivery (the last repeats); must have fewer
    /// entries than `max_deliver`. Empty: `ack_wait` each time.
    pub backoff: Vec<Duration>,
    /// Nodes one worker may hold at once (default 1: a free worker takes
    /// the next node, a busy one takes none).
    pub batch: usize,
    /// How long the server remembers a node's `Nats-Msg-Id` and drops a
    /// second publish of it (default 2 minutes; at most a day). A node may
    /// be published again when its run is taken over: set it above the
    /// longest time a node waits in the queue. Used when the stream is
    /// created.
    pub duplicate_window: Duration,
}

impl Default for WorkConfig {
    fn default() -> Self {
        Self {
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            backoff: Vec::new(),
            batch: 1,
            duplicate_window: Duration::from_secs(120),
        }
    }
}

/// One node to run somewhere: its idempotency key, what to call and with
/// what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItem {
    /// `run_id/node_id/attempt`.
    pub key: NodeKey,
    /// The toolkit whose hosts may run it (the subject it goes to).
    pub toolkit: String,
    /// The tool or skill.
    pub tool: String,
    /// Its resolved input.
    pub input: Value,
    /// The agent the run belongs to (the worker calls on its behalf).
    #[serde(default)]
    pub agent: String,
    /// The chain's id (`a2e.chain.id` on the worker's span of the call).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chain_id: String,
    /// When the coordinator stops waiting for the node (the earlier of its
    /// chain's deadline and the node's own timeout), in milliseconds since
    /// the Unix epoch: the worker runs the call under it instead of its own
    /// default, and ends it there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_unix_ms: Option<u64>,
    /// The node asks for a person's decision before its call runs
    /// (`"approval": "required"`), whatever the hosts' rules say.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approval: bool,
}

/// The work-queue stream of a prefix.
#[derive(Clone)]
pub struct WorkQueue {
    js: jetstream::Context,
    names: Names,
    stream: stream::Stream,
    dead: stream::Stream,
    config: WorkConfig,
}

impl std::fmt::Debug for WorkQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue")
            .field("names", &self.names)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl WorkQueue {
    /// Opens (creating when missing) the work and dead-letter streams.
    pub async fn open(js: &jetstream::Context, prefix: &str, config: WorkConfig) -> Result<Self> {
        let names = Names::new(prefix)?;
        if !config.backoff.is_empty()
            && i64::try_from(config.backoff.len()).unwrap_or(i64::MAX) >= config.max_deliver
        {
            return Err(JournalError::InvalidId {
                what: "work config",
                message: format!(
                    "backoff has {} entries; it needs fewer than max_deliver ({})",
                    config.backoff.len(),
                    config.max_deliver
                ),
            });
        }
        let stream = get_stream(
            js,
            stream::Config {
                name: names.work_stream(),
                subjects: vec![names.work_subjects()],
                retention: stream::RetentionPolicy::WorkQueue,
                storage: stream::StorageType::File,
                duplicate_window: config
                    .duplicate_window
                    .clamp(Duration::from_secs(1), Duration::from_secs(24 * 3600)),
                ..Default::default()
            },
        )
        .await?;
        let dead = get_stream(
            js,
            stream::Config {
                name: names.dead_stream(),
                subjects: vec![names.advisories()],
                storage: stream::StorageType::File,
                max_age: Duration::from_secs(7 * 24 * 3600),
                ..Default::default()
            },
        )
        .await?;
        Ok(Self {
            js: js.clone(),
            names,
            stream,
            dead,
            config,
        })
    }

    /// Queues a node for the hosts serving its toolkit. `false` when the
    /// server dropped it as a duplicate (the same key published within the
    /// duplicate window: a coordinator that re-sent after a take-over).
    pub async fn publish(&self, item: &WorkItem) -> Result<bool> {
        self.publish_with(item, &[]).await
    }

    /// [`WorkQueue::publish`] with more message headers (the W3C
    /// `traceparent` and `tracestate` of the span that queues the node):
    /// a worker reads them with [`Job::header`].
    pub async fn publish_with(&self, item: &WorkItem, extra: &[(&str, &str)]) -> Result<bool> {
        let mut headers = HeaderMap::new();
        for (name, value) in extra {
            headers.insert(*name, *value);
        }
        headers.insert(header::NATS_MESSAGE_ID, item.key.to_string().as_str());
        let payload = Bytes::from(serde_json::to_vec(item)?);
        let ack = self
            .js
            .publish_with_headers(self.names.work_subject(&item.toolkit), headers, payload)
            .await
            .map_err(|e| nats_err("publish work", e))?
            .await
            .map_err(|e| nats_err("publish work", e))?;
        Ok(!ack.duplicate)
    }

    /// How many nodes of `toolkit` wait for a worker: the shared
    /// consumer's messages not yet delivered (`num_pending`; nodes being
    /// run are not counted). 0 while no host serves the toolkit yet.
    pub async fn depth(&self, toolkit: &str) -> Result<u64> {
        match self.stream.consumer_info(consumer_name(toolkit)).await {
            Ok(info) => Ok(info.num_pending),
            Err(e) if e.kind() == jetstream::context::ConsumerInfoErrorKind::NotFound => Ok(0),
            Err(e) => Err(nats_err(format!("consumer {}", consumer_name(toolkit)), e)),
        }
    }

    /// A worker for `toolkit`: pulls from the toolkit's durable consumer,
    /// which every host serving the toolkit shares (each node goes to one).
    pub async fn worker(&self, toolkit: &str) -> Result<Worker> {
        let name = consumer_name(toolkit);
        let consumer = self
            .stream
            .get_or_create_consumer(
                &name,
                pull::Config {
                    durable_name: Some(name.clone()),
                    filter_subject: self.names.work_subject(toolkit),
                    ack_policy: AckPolicy::Explicit,
                    ack_wait: self.config.ack_wait,
                    max_deliver: self.config.max_deliver,
                    backoff: self.config.backoff.clone(),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| nats_err(format!("consumer {name}"), e))?;
        Ok(Worker {
            consumer,
            batch: self.config.batch.max(1),
            messages: None,
        })
    }

    /// The nodes whose deliveries ran out, from the dead-letter stream (a
    /// durable consumer: each goes to one coordinator).
    pub async fn dead_letters(&self) -> Result<DeadLetters> {
        let consumer = self
            .dead
            .get_or_create_consumer(
                "dead",
                pull::Config {
                    durable_name: Some("dead".into()),
                    ack_policy: AckPolicy::Explicit,
                    deliver_policy: DeliverPolicy::All,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| nats_err("consumer dead", e))?;
        let messages = consumer
            .messages()
            .await
            .map_err(|e| nats_err("pull dead", e))?;
        Ok(DeadLetters {
            messages,
            work: self.stream.clone(),
            max_deliver: self.config.max_deliver,
        })
    }
}

/// The durable consumer of `toolkit`'s nodes.
fn consumer_name(toolkit: &str) -> String {
    format!("work_{}", token(toolkit))
}

/// Pulls the nodes of one toolkit. A pull asks for at most `batch` nodes,
/// and only when the worker asks for its next node: a busy worker holds no
/// node it has not started (whose `ack_wait` would run out while it waits).
pub struct Worker {
    consumer: jetstream::consumer::Consumer<pull::Config>,
    batch: usize,
    messages: Option<jetstream::consumer::pull::Batch>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Worker")
    }
}

impl Worker {
    /// The next node (waits for one). A message that is not a work item is
    /// acknowledged (dropped) and reported as an error.
    pub async fn next(&mut self) -> Option<Result<Job>> {
        let msg = loop {
            let batch = match &mut self.messages {
                Some(b) => b,
                None => match self
                    .consumer
                    .batch()
                    .max_messages(self.batch)
                    .expires(PULL_WAIT)
                    .messages()
                    .await
                {
                    Ok(b) => self.messages.insert(b),
                    Err(e) => return Some(Err(nats_err("pull work", e))),
                },
            };
            match batch.next().await {
                Some(Ok(msg)) => break msg,
                Some(Err(e)) => {
                    self.messages = None;
                    return Some(Err(nats_err("pull work", e)));
                }
                // The pull expired (or delivered its batch): ask again.
                None => self.messages = None,
            }
        };
        match serde_json::from_slice::<WorkItem>(&msg.payload) {
            Ok(item) => Some(Ok(Job { msg, item })),
            Err(e) => {
                let _ = msg.ack().await;
                Some(Err(JournalError::Nats {
                    op: "decode work".into(),
                    message: format!("{}: {e}", msg.subject),
                }))
            }
        }
    }
}

/// One delivery of a node to this worker.
pub struct Job {
    msg: jetstream::Message,
    item: WorkItem,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("item", &self.item).finish()
    }
}

impl Job {
    /// What to run.
    pub fn item(&self) -> &WorkItem {
        &self.item
    }

    /// Which delivery this is (1 the first time).
    pub fn delivered(&self) -> i64 {
        self.msg.info().map(|i| i.delivered).unwrap_or(1)
    }

    /// The value of message header `name` (`traceparent`…), when the
    /// publisher set it as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.msg
            .headers
            .as_ref()?
            .get(name)
            .map(header::HeaderValue::as_str)
    }

    /// Tells the server the node is still running (its `ack_wait` starts
    /// again).
    pub async fn progress(&self) -> Result<()> {
        self.msg
            .ack_with(AckKind::Progress)
            .await
            .map_err(|e| nats_err("progress", e))
    }

    /// Journals the node's result, then acknowledges the delivery (and
    /// waits for the server to confirm): a worker that dies between the
    /// two leaves a journaled result and a redelivery, whose result is then
    /// not applied. Returns whether this result was the one applied.
    pub async fn complete(self, journal: &dyn Journal, outcome: &NodeOutcome) -> Result<bool> {
        let applied = journal.node_finished(&self.item.key, outcome).await?;
        self.msg
            .double_ack()
            .await
            .map_err(|e| nats_err("ack work", e))?;
        Ok(applied)
    }

    /// Hands the node back to be delivered again (after `delay`).
    pub async fn release(self, delay: Option<Duration>) -> Result<()> {
        self.msg
            .ack_with(AckKind::Nak(delay))
            .await
            .map_err(|e| nats_err("nak work", e))
    }
}

#[derive(Deserialize)]
struct Advisory {
    stream_seq: u64,
    #[serde(default)]
    deliveries: u64,
}

/// A node whose deliveries ran out.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadItem {
    /// The node.
    pub item: WorkItem,
    /// How often it was delivered.
    pub deliveries: u64,
}

impl DeadItem {
    /// The node's failure, to journal: [`WORKER_LOST`].
    pub fn outcome(&self) -> NodeOutcome {
        NodeOutcome::error(
            WORKER_LOST,
            format!(
                "`{}`: its worker stopped {} times without a result; not delivered again",
                self.item.key.node_id(),
                self.deliveries
            ),
        )
    }
}

/// The nodes whose deliveries ran out.
pub struct DeadLetters {
    messages: pull::Stream,
    work: stream::Stream,
    max_deliver: i64,
}

impl std::fmt::Debug for DeadLetters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeadLetters")
    }
}

impl DeadLetters {
    /// The next such node: read from the work stream and removed from it,
    /// its advisory acknowledged. Journal [`DeadItem::outcome`] for it (or
    /// [`DeadLetters::fail_in`] does).
    pub async fn next(&mut self) -> Option<Result<DeadItem>> {
        loop {
            let msg = match self.messages.next().await? {
                Ok(msg) => msg,
                Err(e) => return Some(Err(nats_err("pull dead", e))),
            };
            let advisory = serde_json::from_slice::<Advisory>(&msg.payload);
            let _ = msg.double_ack().await;
            let Ok(advisory) = advisory else { continue };
            let raw = match self.work.get_raw_message(advisory.stream_seq).await {
                Ok(raw) => raw,
                // Already removed (a late ack, or another coordinator).
                Err(_) => continue,
            };
            let _ = self.work.delete_message(advisory.stream_seq).await;
            let Ok(item) = serde_json::from_slice::<WorkItem>(&raw.payload) else {
                continue;
            };
            let deliveries = match advisory.deliveries {
                0 => u64::try_from(self.max_deliver).unwrap_or(0),
                n => n,
            };
            return Some(Ok(DeadItem { item, deliveries }));
        }
    }

    /// Journals the next dead node's failure; returns it.
    pub async fn fail_in(&mut self, journal: &dyn Journal) -> Option<Result<DeadItem>> {
        let dead = match self.next().await? {
            Ok(d) => d,
            Err(e) => return Some(Err(e)),
        };
        Some(
            journal
                .node_finished(&dead.item.key, &dead.outcome())
                .await
                .map(|_| dead),
        )
    }
}
