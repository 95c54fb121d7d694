//! The [`Journal`] trait: what a host asks of a run journal, whichever store
//! holds it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::{JournalError, Result};
use crate::ids::{NodeKey, RunId};
use crate::model::{
    Loaded, NewRun, NodeOutcome, NodeStart, PruneReport, Retention, RunFilter, RunItem, RunState,
    RunStatus, RunSummary, StoredEvent,
};

/// A run journal: the request of every run, each node's start and result,
/// the events with their `seq`, and the final answer.
///
/// **Writes are queued when the method is called**, in call order, and the
/// returned [`Ack`] resolves once the write is durable (what that means is
/// the store's: see [`crate::SqliteJournal`] and the JetStream store).
/// Awaiting the ack is how a host makes sure a node's result is in the
/// journal before anything downstream sees it; dropping it (or not polling
/// it yet) leaves the write queued (events, which need not hold up the run):
/// a store may then commit it later, with the next write somebody awaits,
/// so that it costs no commit of its own. Reads and subscriptions
/// return boxed futures and streams, so that a host holds any store as
/// `Arc<dyn Journal>` (the store is chosen by configuration: the embedded
/// SQLite file or a cluster's JetStream).
pub trait Journal: Send + Sync + 'static {
    /// Journals a new run (status `running`). Refused with
    /// [`JournalError::DuplicateRun`] if its id is taken.
    fn create_run(&self, run: NewRun) -> Ack;

    /// Whether writes are committed in the order they are asked, each commit
    /// holding every write asked before it: then a write need not be
    /// awaited when a later one is (its ack resolves no later). The embedded
    /// SQLite store does; a store whose writes are acknowledged one by one
    /// (JetStream) does not (the default).
    fn commits_in_order(&self) -> bool {
        false
    }

    /// A node's execution starts. Journaling the same key again (a resumed
    /// run running an interrupted node with its old key) is harmless.
    fn node_started(&self, key: &NodeKey) -> Ack;

    /// [`Journal::node_started`] with what the node started with (its
    /// input, its trace), kept with its record ([`crate::NodeRecord::start`])
    /// within bounds ([`NodeStart::bounded`]). A store that keeps no such
    /// detail journals the start alone (the default).
    fn node_started_with(&self, key: &NodeKey, start: &NodeStart) -> Ack {
        let _ = start;
        self.node_started(key)
    }

    /// The node's call opened its span: `trace_id` and `span_id` join the
    /// start journaled for `key` (nothing happens when there is none). Not
    /// worth awaiting: it only informs. The default keeps nothing.
    fn node_traced(&self, key: &NodeKey, trace_id: &str, span_id: &str) -> Ack {
        let _ = (key, trace_id, span_id);
        Ack::ready(Ok(()))
    }

    /// A node's execution ended. The first result journaled for a key wins:
    /// the ack says `true` when this one was applied, `false` when a result
    /// was already there (a duplicate from a redelivery).
    fn node_finished(&self, key: &NodeKey, outcome: &NodeOutcome) -> Ack<bool>;

    /// One event of the run; an event with a `seq` already journaled is
    /// ignored.
    fn append_event(&self, run_id: &RunId, seq: u64, event: &Value) -> Ack;

    /// The run ended, with its final answer.
    fn finish_run(&self, run_id: &RunId, status: RunStatus, answer: &Value) -> Ack;

    /// Marks the run for cancellation (its host sees it with
    /// [`Journal::cancel_requested`]); `false` when the run is unknown or
    /// has finished.
    fn request_cancel(&self, run_id: &RunId) -> Ack<bool>;

    /// Whether a cancel was asked for.
    fn cancel_requested(&self, run_id: &RunId) -> BoxFuture<'static, Result<bool>>;

    /// The runs that match, newest first.
    fn list_runs(&self, filter: &RunFilter) -> BoxFuture<'static, Result<Loaded<RunSummary>>>;

    /// One run with its nodes; `None` when unknown.
    fn show_run(&self, run_id: &RunId) -> BoxFuture<'static, Result<Option<RunState>>>;

    /// Every run that has not finished, with its nodes, oldest first: what a
    /// host resumes when it starts. A run whose records do not load is named
    /// in [`Loaded::corrupt`]; the others still load.
    fn load_unfinished(&self) -> BoxFuture<'static, Result<Loaded<RunState>>>;

    /// Journaled events of a run from `from_seq` on, at most `limit`.
    fn events(
        &self,
        run_id: &RunId,
        from_seq: u64,
        limit: usize,
    ) -> BoxFuture<'static, Result<Vec<StoredEvent>>>;

    /// A run's events from `from_seq` on: those journaled already, then the
    /// live ones as they are journaled, each `seq` once and in order, then
    /// [`RunItem::Finished`]. An unknown run yields
    /// [`JournalError::UnknownRun`] and ends.
    fn subscribe(&self, run_id: &RunId, from_seq: u64) -> BoxStream<'static, Result<RunItem>>;

    /// Removes finished runs (with their nodes and events) past the
    /// retention; unfinished runs stay.
    fn prune(&self, retention: &Retention) -> Ack<PruneReport>;

    /// Resolves once every write queued before it is durable.
    fn flush(&self) -> Ack;
}

/// The acknowledgement of a journal write: resolves once the write is
/// durable (or failed). The write was queued when the method returned, so
/// dropping an `Ack` does not undo it.
#[must_use = "an Ack says when (and whether) the write is durable"]
pub struct Ack<T = ()>(AckInner<T>);

enum AckInner<T> {
    Ready(Option<Result<T>>),
    Channel(oneshot::Receiver<Result<T>>),
    /// The receiver, and what to kick (with the write's ticket) the first
    /// time the ack would wait.
    Kicked(
        oneshot::Receiver<Result<T>>,
        Option<(std::sync::Arc<dyn Kick>, u64)>,
    ),
    Boxed(BoxFuture<'static, Result<T>>),
}

/// What an ack asks, the first time it would wait, to make its write durable
/// now: somebody awaits it. A store that groups writes commits the ones
/// nobody awaits later (with the next awaited one), and an awaited one at
/// once — on the awaiting thread when it can, so that the ack resolves
/// without a hand-off to another thread and back.
pub(crate) trait Kick: Send + Sync {
    /// The write with `ticket` (its place in the store's queue) is awaited.
    fn kick(&self, ticket: u64);
}

impl<T> Ack<T> {
    /// An ack that is already resolved.
    pub fn ready(result: Result<T>) -> Self {
        Self(AckInner::Ready(Some(result)))
    }

    /// An ack resolved by whoever holds the sender (a dropped sender means
    /// the writer stopped: [`JournalError::Closed`]).
    pub fn channel() -> (oneshot::Sender<Result<T>>, Self) {
        let (tx, rx) = oneshot::channel();
        (tx, Self(AckInner::Channel(rx)))
    }

    /// An ack resolved through `rx`, that tells `kick` its write (queued
    /// as `ticket`) is awaited before it first waits.
    pub(crate) fn kicked(
        rx: oneshot::Receiver<Result<T>>,
        kick: std::sync::Arc<dyn Kick>,
        ticket: u64,
    ) -> Self {
        Self(AckInner::Kicked(rx, Some((kick, ticket))))
    }

    /// An ack resolved by a future.
    pub fn from_future(fut: impl Future<Output = Result<T>> + Send + 'static) -> Self {
        Self(AckInner::Boxed(Box::pin(fut)))
    }
}

impl<T> std::fmt::Debug for Ack<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ack")
    }
}

impl<T: Unpin> Future for Ack<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        match &mut self.0 {
            AckInner::Ready(r) => Poll::Ready(r.take().unwrap_or(Err(JournalError::Closed))),
            AckInner::Channel(rx) => Pin::new(rx)
                .poll(cx)
                .map(|r| r.unwrap_or(Err(JournalError::Closed))),
            AckInner::Kicked(rx, kick) => {
                if let Some((k, ticket)) = kick.take() {
                    if let Poll::Ready(r) = Pin::new(&mut *rx).poll(cx) {
                        return Poll::Ready(r.unwrap_or(Err(JournalError::Closed)));
                    }
                    k.kick(ticket);
                }
                Pin::new(rx)
                    .poll(cx)
                    .map(|r| r.unwrap_or(Err(JournalError::Closed)))
            }
            AckInner::Boxed(f) => f.as_mut().poll(cx),
        }
    }
}
