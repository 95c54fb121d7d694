//! [`NatsJournal`]: the [`Journal`] in JetStream streams and KV buckets.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use async_nats::header::{self, HeaderMap};
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::kv::{self, UpdateErrorKind};
use async_nats::jetstream::{self, stream};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, FuturesOrdered};
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::read::{self, NodeDoc, RunDoc};
use super::{Names, NatsOptions, nats_err};
use crate::error::{JournalError, Result};
use crate::ids::{NodeKey, RunId};
use crate::journal::{Ack, Journal};
use crate::model::{
    Loaded, NewRun, NodeOutcome, PruneReport, Retention, RunFilter, RunItem, RunState, RunStatus,
    RunSummary, StoredEvent, now_ms,
};

/// The header carrying an event's `seq`.
pub(crate) const SEQ_HEADER: &str = "A2E-Seq";

/// How often a subscription that hears nothing looks at the run's record
/// (for an end whose message a crash kept from being published).
const QUIET_CHECK: Duration = Duration::from_secs(1);

/// What a rejected compare-and-set means for a write.
#[derive(Clone, Copy)]
enum OnTaken {
    /// Nothing was expected (a plain put or publish).
    Error,
    /// `create_run`: the id is taken.
    DuplicateRun,
    /// `node_finished`: a result is already there; not applied.
    NotApplied,
}

enum Reply {
    Unit(oneshot::Sender<Result<()>>),
    Bool(oneshot::Sender<Result<bool>>),
}

enum Op {
    Publish {
        subject: String,
        headers: HeaderMap,
        payload: Bytes,
        on_taken: OnTaken,
        run: RunId,
        reply: Reply,
    },
    Finish {
        run: RunId,
        status: RunStatus,
        answer: Value,
        reply: oneshot::Sender<Result<()>>,
    },
    Cancel {
        run: RunId,
        reply: oneshot::Sender<Result<bool>>,
    },
    Flush {
        reply: oneshot::Sender<Result<()>>,
    },
}

struct Inner {
    tx: mpsc::UnboundedSender<Op>,
    client: async_nats::Client,
    js: jetstream::Context,
    names: Names,
    runs: kv::Store,
    cancel: kv::Store,
    runs_stream: stream::Stream,
    nodes_stream: stream::Stream,
    cancel_stream: stream::Stream,
    events: stream::Stream,
}

/// The [`Journal`] on NATS JetStream (layout in the [module
/// documentation](super)). Every host of a cluster opens it on the same
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
    inner: Arc<Inner>,
}

impl std::fmt::Debug for NatsJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsJournal")
            .field("names", &self.inner.names)
            .finish_non_exhaustive()
    }
}

/// Opens the bucket, creating it when missing.
///
/// The bucket's stream is created here, in the layout the KV API uses
/// (`KV_<bucket>`, subjects `$KV.<bucket>.>`, roll-ups allowed, deletes
/// denied, direct gets, one message per subject per history entry),
/// rather than with `create_key_value`: that asks for the account's
/// information first, whose answer from nats-server 2.9 lacks fields the
/// client requires (`reserved_memory`, `reserved_storage`).
pub(crate) async fn bucket(js: &jetstream::Context, config: kv::Config) -> Result<kv::Store> {
    let name = config.bucket.clone();
    if let Ok(store) = js.get_key_value(&name).await {
        return Ok(store);
    }
    js.get_or_create_stream(stream::Config {
        name: format!("KV_{name}"),
        subjects: vec![format!("$KV.{name}.>")],
        max_messages_per_subject: config.history.max(1),
        max_age: config.max_age,
        max_bytes: config.max_bytes,
        storage: config.storage,
        num_replicas: config.num_replicas.max(1),
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: stream::DiscardPolicy::New,
        ..Default::default()
    })
    .await
    .map_err(|e| nats_err(format!("create bucket {name}"), e))?;
    js.get_key_value(&name)
        .await
        .map_err(|e| nats_err(format!("open bucket {name}"), e))
}

pub(crate) async fn get_stream(
    js: &jetstream::Context,
    config: stream::Config,
) -> Result<stream::Stream> {
    let name = config.name.clone();
    js.get_or_create_stream(config)
        .await
        .map_err(|e| nats_err(format!("create stream {name}"), e))
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
        drop(nodes);
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
                nodes_stream,
                cancel_stream,
                events,
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

    fn send(&self, op: Op) {
        // A failed send drops the op and with it its reply sender: its ack
        // resolves to `Closed`.
        let _ = self.inner.tx.send(op);
    }

    fn publish(
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

    /// Reads every run document.
    async fn docs(&self) -> Result<Loaded<(RunDoc, RunSummary)>> {
        let bucket = self.inner.names.runs_bucket();
        let prefix = format!("$KV.{bucket}.");
        let msgs = read::read_all(
            &self.inner.runs_stream,
            format!("{prefix}>"),
            true,
            usize::MAX,
        )
        .await?;
        let mut loaded = Loaded::default();
        for msg in &msgs {
            if read::is_tombstone(msg) {
                continue;
            }
            let id = read::after_prefix(msg.subject.as_str(), &prefix).unwrap_or_default();
            match read::decode_run(id, &msg.payload) {
                Ok(pair) => loaded.items.push(pair),
                Err(c) => loaded.corrupt.push(c),
            }
        }
        Ok(loaded)
    }

    /// The runs marked for cancellation.
    async fn cancelled(&self) -> Result<HashSet<String>> {
        let prefix = format!("$KV.{}.", self.inner.names.cancel_bucket());
        let msgs = read::read_all(
            &self.inner.cancel_stream,
            format!("{prefix}>"),
            true,
            usize::MAX,
        )
        .await?;
        Ok(msgs
            .iter()
            .filter(|m| !read::is_tombstone(m))
            .filter_map(|m| read::after_prefix(m.subject.as_str(), &prefix).map(str::to_owned))
            .collect())
    }

    /// The `seq` a run's next event takes.
    async fn next_seq(&self, run: &RunId) -> Result<u64> {
        let subject = self.inner.names.run_subject(run, "ev");
        match self
            .inner
            .events
            .get_last_raw_message_by_subject(&subject)
            .await
        {
            Ok(msg) => Ok(msg
                .headers
                .get(SEQ_HEADER)
                .and_then(|v| v.as_str().parse::<u64>().ok())
                .map_or(0, |s| s.saturating_add(1))),
            Err(e) if read::not_found(&e) => Ok(0),
            Err(e) => Err(nats_err(format!("last event of {run}"), e)),
        }
    }

    async fn nodes_of(
        &self,
        run: &RunId,
    ) -> Result<Result<Vec<crate::model::NodeRecord>, crate::model::CorruptRun>> {
        let prefix = format!("$KV.{}.", self.inner.names.nodes_bucket());
        let msgs = read::read_all(
            &self.inner.nodes_stream,
            self.inner.names.nodes_filter(run),
            true,
            usize::MAX,
        )
        .await?;
        Ok(read::decode_nodes(run.as_str(), &prefix, &msgs))
    }

    async fn full_state(
        &self,
        doc: RunDoc,
        mut summary: RunSummary,
        cancelled: &HashSet<String>,
    ) -> Result<Result<RunState, crate::model::CorruptRun>> {
        summary.cancel_requested = cancelled.contains(summary.run_id.as_str());
        summary.next_seq = self.next_seq(&summary.run_id).await?;
        let run = summary.run_id.clone();
        Ok(self
            .nodes_of(&run)
            .await?
            .map(|nodes| read::state(doc, summary, nodes)))
    }

    async fn show(&self, run: RunId) -> Result<Option<RunState>> {
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
        let cancelled = self.cancelled().await?;
        self.full_state(doc, summary, &cancelled)
            .await?
            .map(Some)
            .map_err(read::journal_corrupt)
    }

    async fn list(&self, filter: RunFilter) -> Result<Loaded<RunSummary>> {
        let docs = self.docs().await?;
        let cancelled = self.cancelled().await?;
        let mut items: Vec<RunSummary> = docs
            .items
            .into_iter()
            .map(|(_, s)| s)
            .filter(|s| filter.agent.as_ref().is_none_or(|a| *a == s.agent))
            .filter(|s| filter.status.is_none_or(|st| st == s.status))
            .collect();
        items.sort_by(|a, b| (b.created_ms, &b.run_id).cmp(&(a.created_ms, &a.run_id)));
        items.truncate(match filter.limit {
            0 => 100,
            n => n,
        });
        for s in &mut items {
            s.cancel_requested = cancelled.contains(s.run_id.as_str());
            s.next_seq = self.next_seq(&s.run_id).await?;
        }
        Ok(Loaded {
            items,
            corrupt: docs.corrupt,
        })
    }

    async fn unfinished(&self) -> Result<Loaded<RunState>> {
        let docs = self.docs().await?;
        let cancelled = self.cancelled().await?;
        let mut loaded = Loaded {
            items: Vec::new(),
            corrupt: docs.corrupt,
        };
        let mut running: Vec<_> = docs
            .items
            .into_iter()
            .filter(|(_, s)| s.status == RunStatus::Running)
            .collect();
        running.sort_by(|a, b| (a.1.created_ms, &a.1.run_id).cmp(&(b.1.created_ms, &b.1.run_id)));
        for (doc, summary) in running {
            match self.full_state(doc, summary, &cancelled).await? {
                Ok(s) => loaded.items.push(s),
                Err(c) => loaded.corrupt.push(c),
            }
        }
        Ok(loaded)
    }

    async fn read_events(&self, run: RunId, from: u64, limit: usize) -> Result<Vec<StoredEvent>> {
        let msgs = read::read_all(
            &self.inner.events,
            self.inner.names.run_subject(&run, "ev"),
            false,
            usize::MAX,
        )
        .await?;
        let mut out = Vec::new();
        for msg in msgs {
            let Some(seq) = read::seq_of(&msg) else {
                continue;
            };
            if seq < from || out.iter().any(|e: &StoredEvent| e.seq == seq) {
                continue;
            }
            let event =
                serde_json::from_slice(&msg.payload).map_err(|e| JournalError::Corrupt {
                    run_id: run.to_string(),
                    message: format!("event seq {seq}: {e}"),
                })?;
            out.push(StoredEvent { seq, event });
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    async fn prune_runs(&self, retention: Retention) -> Result<PruneReport> {
        let docs = self.docs().await?;
        let mut finished: Vec<RunSummary> = docs
            .items
            .into_iter()
            .map(|(_, s)| s)
            .filter(|s| s.status.is_finished())
            .collect();
        finished.sort_by(|a, b| (b.finished_ms, &b.run_id).cmp(&(a.finished_ms, &a.run_id)));
        let cutoff = retention
            .max_age
            .map(|age| now_ms().saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX)));
        let names = &self.inner.names;
        let mut removed = 0;
        for (i, s) in finished.iter().enumerate() {
            let too_old = cutoff.is_some_and(|c| s.finished_ms.unwrap_or(0) < c);
            let too_many = retention.max_runs.is_some_and(|m| i >= m);
            if !(too_old || too_many) {
                continue;
            }
            let run = &s.run_id;
            let purges = [
                (&self.inner.events, names.run_filter(run)),
                (&self.inner.nodes_stream, names.nodes_filter(run)),
                (
                    &self.inner.cancel_stream,
                    Names::kv_subject(&names.cancel_bucket(), run.as_str()),
                ),
                (
                    &self.inner.runs_stream,
                    Names::kv_subject(&names.runs_bucket(), run.as_str()),
                ),
            ];
            for (stream, filter) in purges {
                stream
                    .purge()
                    .filter(filter.clone())
                    .await
                    .map_err(|e| nats_err(format!("purge {filter}"), e))?;
            }
            removed += 1;
        }
        Ok(PruneReport { runs: removed })
    }
}

async fn stream_of(js: &jetstream::Context, bucket: &str) -> Result<stream::Stream> {
    js.get_stream(format!("KV_{bucket}"))
        .await
        .map_err(|e| nats_err(format!("open stream KV_{bucket}"), e))
}

fn json_bytes(v: &impl serde::Serialize) -> Result<Bytes> {
    Ok(Bytes::from(serde_json::to_vec(v)?))
}

fn expect_new() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, "0");
    h
}

impl Journal for NatsJournal {
    fn create_run(&self, run: NewRun) -> Ack {
        let doc = RunDoc {
            kind: run.kind.as_str().to_owned(),
            agent: run.agent,
            status: RunStatus::Running.as_str().to_owned(),
            created_ms: now_ms(),
            finished_ms: None,
            request: run.request,
            answer: None,
        };
        let payload = match json_bytes(&doc) {
            Ok(p) => p,
            Err(e) => return Ack::ready(Err(e)),
        };
        let subject = Names::kv_subject(&self.inner.names.runs_bucket(), run.run_id.as_str());
        self.publish(
            &run.run_id,
            subject,
            expect_new(),
            payload,
            OnTaken::DuplicateRun,
        )
    }

    fn node_started(&self, key: &NodeKey) -> Ack {
        let payload = match json_bytes(&NodeDoc {
            at_ms: now_ms(),
            outcome: None,
        }) {
            Ok(p) => p,
            Err(e) => return Ack::ready(Err(e)),
        };
        let subject =
            Names::kv_subject(&self.inner.names.nodes_bucket(), &Names::node_key(key, "s"));
        self.publish(
            key.run_id(),
            subject,
            HeaderMap::new(),
            payload,
            OnTaken::Error,
        )
    }

    fn node_finished(&self, key: &NodeKey, outcome: &NodeOutcome) -> Ack<bool> {
        let payload = match json_bytes(&NodeDoc {
            at_ms: now_ms(),
            outcome: Some(outcome.clone()),
        }) {
            Ok(p) => p,
            Err(e) => return Ack::ready(Err(e)),
        };
        let subject =
            Names::kv_subject(&self.inner.names.nodes_bucket(), &Names::node_key(key, "r"));
        let (reply, ack) = Ack::channel();
        self.send(Op::Publish {
            subject,
            headers: expect_new(),
            payload,
            on_taken: OnTaken::NotApplied,
            run: key.run_id().clone(),
            reply: Reply::Bool(reply),
        });
        ack
    }

    fn append_event(&self, run_id: &RunId, seq: u64, event: &Value) -> Ack {
        let payload = match json_bytes(event) {
            Ok(p) => p,
            Err(e) => return Ack::ready(Err(e)),
        };
        let mut headers = HeaderMap::new();
        headers.insert(header::NATS_MESSAGE_ID, format!("{run_id}:{seq}").as_str());
        headers.insert(SEQ_HEADER, seq.to_string().as_str());
        let subject = self.inner.names.run_subject(run_id, "ev");
        self.publish(run_id, subject, headers, payload, OnTaken::Error)
    }

    fn finish_run(&self, run_id: &RunId, status: RunStatus, answer: &Value) -> Ack {
        let (reply, ack) = Ack::channel();
        self.send(Op::Finish {
            run: run_id.clone(),
            status,
            answer: answer.clone(),
            reply,
        });
        ack
    }

    fn request_cancel(&self, run_id: &RunId) -> Ack<bool> {
        let (reply, ack) = Ack::channel();
        self.send(Op::Cancel {
            run: run_id.clone(),
            reply,
        });
        ack
    }

    fn cancel_requested(&self, run_id: &RunId) -> BoxFuture<'static, Result<bool>> {
        let cancel = self.inner.cancel.clone();
        let run = run_id.clone();
        async move {
            let entry = cancel
                .entry(run.as_str())
                .await
                .map_err(|e| nats_err(format!("read cancel marker of {run}"), e))?;
            Ok(entry.is_some_and(|e| e.operation == kv::Operation::Put))
        }
        .boxed()
    }

    fn list_runs(&self, filter: &RunFilter) -> BoxFuture<'static, Result<Loaded<RunSummary>>> {
        let me = self.clone();
        let filter = filter.clone();
        async move { me.list(filter).await }.boxed()
    }

    fn show_run(&self, run_id: &RunId) -> BoxFuture<'static, Result<Option<RunState>>> {
        let me = self.clone();
        let run = run_id.clone();
        async move { me.show(run).await }.boxed()
    }

    fn load_unfinished(&self) -> BoxFuture<'static, Result<Loaded<RunState>>> {
        let me = self.clone();
        async move { me.unfinished().await }.boxed()
    }

    fn events(
        &self,
        run_id: &RunId,
        from_seq: u64,
        limit: usize,
    ) -> BoxFuture<'static, Result<Vec<StoredEvent>>> {
        let me = self.clone();
        let run = run_id.clone();
        async move { me.read_events(run, from_seq, limit).await }.boxed()
    }

    fn subscribe(&self, run_id: &RunId, from_seq: u64) -> BoxStream<'static, Result<RunItem>> {
        super::follow::follow(self.clone(), run_id.clone(), from_seq)
    }

    fn prune(&self, retention: &Retention) -> Ack<PruneReport> {
        let me = self.clone();
        let retention = *retention;
        Ack::from_future(async move { me.prune_runs(retention).await })
    }

    fn flush(&self) -> Ack {
        let (reply, ack) = Ack::channel();
        self.send(Op::Flush { reply });
        ack
    }
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

// --- the writer task ---------------------------------------------------------

type Done = BoxFuture<'static, Box<dyn FnOnce() + Send>>;

async fn writer(
    mut rx: mpsc::UnboundedReceiver<Op>,
    js: jetstream::Context,
    names: Names,
    runs: kv::Store,
    cancel: kv::Store,
) {
    let mut pending: FuturesOrdered<Done> = FuturesOrdered::new();
    let mut open = true;
    loop {
        tokio::select! {
            op = rx.recv(), if open => match op {
                None => open = false,
                Some(Op::Publish { subject, headers, payload, on_taken, run, reply }) => {
                    match js.publish_with_headers(subject, headers, payload).await {
                        Ok(ack) => pending.push_back(Box::pin(async move {
                            let result = ack.await;
                            Box::new(move || answer(reply, result, on_taken, &run)) as Box<dyn FnOnce() + Send>
                        })),
                        Err(e) => {
                            let e = nats_err("publish", e);
                            match reply {
                                Reply::Unit(tx) => drop(tx.send(Err(e))),
                                Reply::Bool(tx) => drop(tx.send(Err(e))),
                            }
                        }
                    }
                }
                Some(Op::Flush { reply }) => pending.push_back(Box::pin(async move {
                    Box::new(move || drop(reply.send(Ok(())))) as Box<dyn FnOnce() + Send>
                })),
                Some(Op::Finish { run, status, answer, reply }) => {
                    drain(&mut pending).await;
                    let r = finish(&js, &names, &runs, &run, status, answer).await;
                    let _ = reply.send(r);
                }
                Some(Op::Cancel { run, reply }) => {
                    drain(&mut pending).await;
                    let r = mark_cancel(&runs, &cancel, &run).await;
                    let _ = reply.send(r);
                }
            },
            Some(done) = pending.next(), if !pending.is_empty() => done(),
            else => break,
        }
    }
}

async fn drain(pending: &mut FuturesOrdered<Done>) {
    while let Some(done) = pending.next().await {
        done();
    }
}

fn answer(
    reply: Reply,
    result: Result<jetstream::publish::PublishAck, jetstream::context::PublishError>,
    on_taken: OnTaken,
    run: &RunId,
) {
    let taken = matches!(&result, Err(e) if e.kind() == PublishErrorKind::WrongLastSequence);
    let outcome: Result<bool> = match (result, on_taken) {
        (Ok(_), _) => Ok(true),
        (Err(_), OnTaken::NotApplied) if taken => Ok(false),
        (Err(_), OnTaken::DuplicateRun) if taken => {
            Err(JournalError::DuplicateRun(run.to_string()))
        }
        (Err(e), _) => Err(nats_err("publish", e)),
    };
    match reply {
        Reply::Unit(tx) => drop(tx.send(outcome.map(|_| ()))),
        Reply::Bool(tx) => drop(tx.send(outcome)),
    }
}

/// The run's record says it finished (compare-and-set, so that a concurrent
/// writer is not overwritten), then its end goes out on its subject.
async fn finish(
    js: &jetstream::Context,
    names: &Names,
    runs: &kv::Store,
    run: &RunId,
    status: RunStatus,
    answer: Value,
) -> Result<()> {
    let at = now_ms();
    let mut tries = 0;
    loop {
        tries += 1;
        let entry = runs
            .entry(run.as_str())
            .await
            .map_err(|e| nats_err(format!("read run {run}"), e))?
            .filter(|e| e.operation == kv::Operation::Put)
            .ok_or_else(|| JournalError::UnknownRun(run.to_string()))?;
        let (mut doc, _) =
            read::decode_run(run.as_str(), &entry.value).map_err(read::journal_corrupt)?;
        doc.status = status.as_str().to_owned();
        doc.finished_ms = Some(at);
        doc.answer = Some(answer.clone());
        match runs
            .update(run.as_str(), json_bytes(&doc)?, entry.revision)
            .await
        {
            Ok(_) => break,
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision && tries < 10 => continue,
            Err(e) => return Err(nats_err(format!("update run {run}"), e)),
        }
    }
    let mut headers = HeaderMap::new();
    headers.insert(header::NATS_MESSAGE_ID, format!("{run}:end").as_str());
    let payload = json_bytes(&json!({"status": status.as_str(), "answer": answer}))?;
    js.publish_with_headers(names.run_subject(run, "end"), headers, payload)
        .await
        .map_err(|e| nats_err("publish end", e))?
        .await
        .map_err(|e| nats_err("publish end", e))?;
    Ok(())
}

async fn mark_cancel(runs: &kv::Store, cancel: &kv::Store, run: &RunId) -> Result<bool> {
    let entry = runs
        .entry(run.as_str())
        .await
        .map_err(|e| nats_err(format!("read run {run}"), e))?;
    let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
        return Ok(false);
    };
    let (_, summary) =
        read::decode_run(run.as_str(), &entry.value).map_err(read::journal_corrupt)?;
    if summary.status.is_finished() {
        return Ok(false);
    }
    cancel
        .put(run.as_str(), Bytes::from_static(b"1"))
        .await
        .map_err(|e| nats_err(format!("mark {run} cancelled"), e))?;
    Ok(true)
}
