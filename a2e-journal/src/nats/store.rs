//! [`NatsJournal`]: the [`Journal`] in JetStream streams and KV buckets.

use std::sync::Arc;
use std::time::Duration;

use async_nats::header::{self, HeaderMap};
use async_nats::jetstream::{self, kv, stream};
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::read;
use super::streams::{bucket, get_stream, stream_of};
use super::writer::{OnTaken, Op, Reply, writer};
use super::{Names, NatsOptions, nats_err};
use crate::error::Result;
use crate::ids::RunId;
use crate::journal::Ack;
use crate::model::RunStatus;

/// How often a subscription that hears nothing looks at the run's record
/// (for an end whose message a crash kept from being published).
const QUIET_CHECK: Duration = Duration::from_secs(1);

/// What every clone of a [`NatsJournal`] shares.
pub(super) struct Inner {
    pub(super) tx: mpsc::UnboundedSender<Op>,
    pub(super) client: async_nats::Client,
    pub(super) js: jetstream::Context,
    pub(super) names: Names,
    pub(super) runs: kv::Store,
    pub(super) cancel: kv::Store,
    pub(super) runs_stream: stream::Stream,
    pub(super) nodes: kv::Store,
    pub(super) nodes_stream: stream::Stream,
    pub(super) cancel_stream: stream::Stream,
    pub(super) events: stream::Stream,
    /// This host's name, recorded as a run's coordinator; `None`: unnamed.
    pub(super) host: Option<String>,
}

/// The [`Journal`](crate::Journal) on NATS JetStream (layout in the [module
/// documentation](crate::nats)). Every host of a cluster opens it on the same
/// server (or JetStream cluster) and prefix.
///
/// - **Durable before downstream**: a write's [`Ack`] resolves once the
///   server acknowledged it, i.e. the stream stored it (on a quorum of
///   replicas in a JetStream cluster; JetStream syncs its files every two
///   minutes by default, so a power cut of a single server may lose the
///   last writes, as for [`crate::Durability::ProcessCrash`]).
/// - **In order**: writes are published in call order from one task on one
///   connection, with their acknowledgements awaited in a pipeline.
/// - The store does not check that a run exists on node and event writes
///   (that would cost a round trip per write).
#[derive(Clone)]
pub struct NatsJournal {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for NatsJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsJournal")
            .field("names", &self.inner.names)
            .finish_non_exhaustive()
    }
}

impl NatsJournal {
    /// Connects to `url` and opens the journal (see [`NatsJournal::open`]).
    pub async fn connect(url: &str, options: NatsOptions) -> Result<Self> {
        let client = async_nats::connect(url)
            .await
            .map_err(|e| nats_err(format!("connect {url}"), e))?;
        Self::open(client, options).await
    }

    /// Opens the journal on `client`'s server, creating the streams and
    /// buckets that are missing. Must be called within a tokio runtime (the
    /// writer is a task; it ends when the last clone is dropped, after the
    /// writes queued before).
    pub async fn open(client: async_nats::Client, options: NatsOptions) -> Result<Self> {
        let names = Names::new(&options.prefix)?;
        let mut js = jetstream::new(client.clone());
        js.set_timeout(options.ack_timeout);
        let kv_config = |bucket: String| kv::Config {
            bucket,
            history: 1,
            num_replicas: options.replicas,
            storage: stream::StorageType::File,
            ..Default::default()
        };
        let runs = bucket(&js, kv_config(names.runs_bucket())).await?;
        let nodes = bucket(&js, kv_config(names.nodes_bucket())).await?;
        let cancel = bucket(&js, kv_config(names.cancel_bucket())).await?;
        let events = get_stream(
            &js,
            stream::Config {
                name: names.events_stream(),
                subjects: vec![names.events_subjects()],
                max_bytes: options.max_event_bytes,
                discard: stream::DiscardPolicy::Old,
                duplicate_window: options.duplicate_window,
                num_replicas: options.replicas,
                storage: stream::StorageType::File,
                allow_direct: true,
                ..Default::default()
            },
        )
        .await?;
        let runs_stream = stream_of(&js, &names.runs_bucket()).await?;
        let nodes_stream = stream_of(&js, &names.nodes_bucket()).await?;
        let cancel_stream = stream_of(&js, &names.cancel_bucket()).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(writer(
            rx,
            js.clone(),
            names.clone(),
            runs.clone(),
            cancel.clone(),
        ));
        Ok(Self {
            inner: Arc::new(Inner {
                tx,
                client,
                js,
                names,
                runs,
                cancel,
                runs_stream,
                nodes,
                nodes_stream,
                cancel_stream,
                events,
                host: Some(options.host.clone()).filter(|h| !h.is_empty()),
            }),
        })
    }

    /// The connection.
    pub fn client(&self) -> &async_nats::Client {
        &self.inner.client
    }

    /// The JetStream context (for [`super::Leases`] and [`super::WorkQueue`]
    /// on the same connection).
    pub fn jetstream(&self) -> &jetstream::Context {
        &self.inner.js
    }

    pub(super) fn send(&self, op: Op) {
        // A failed send drops the op and with it its reply sender: its ack
        // resolves to `Closed`.
        let _ = self.inner.tx.send(op);
    }

    pub(super) fn publish(
        &self,
        run: &RunId,
        subject: String,
        headers: HeaderMap,
        payload: Bytes,
        on_taken: OnTaken,
    ) -> Ack {
        let (reply, ack) = Ack::channel();
        self.send(Op::Publish {
            subject,
            headers,
            payload,
            on_taken,
            run: run.clone(),
            reply: Reply::Unit(reply),
        });
        ack
    }
}

pub(super) fn expect_new() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, "0");
    h
}

// --- following a run ---------------------------------------------------------

impl NatsJournal {
    pub(crate) fn names(&self) -> &Names {
        &self.inner.names
    }

    pub(crate) fn events_stream(&self) -> &stream::Stream {
        &self.inner.events
    }

    /// The run's status and answer from its record; `None` when unknown.
    pub(crate) async fn status(&self, run: &RunId) -> Result<Option<(RunStatus, Option<Value>)>> {
        let entry = self
            .inner
            .runs
            .entry(run.as_str())
            .await
            .map_err(|e| nats_err(format!("read run {run}"), e))?;
        let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
            return Ok(None);
        };
        let (doc, summary) =
            read::decode_run(run.as_str(), &entry.value).map_err(read::journal_corrupt)?;
        Ok(Some((summary.status, doc.answer)))
    }

    pub(crate) fn quiet_check() -> Duration {
        QUIET_CHECK
    }
}
