//! Who commits the queue, and when: group commit.
//!
//! Writes are queued in call order, each with a ticket (its place in the
//! queue). Whoever commits takes everything queued (up to [`MAX_BATCH`]) into
//! one transaction:
//!
//! - a write somebody **awaits** (its ack was polled and found it not yet
//!   committed: [`Kick`]) is committed at once, with everything queued before
//!   and with it. With `synchronous=NORMAL` (no sync per commit) the
//!   awaiting thread commits when the connection is free — cheaper than a
//!   hand-off to another thread and a wake-up back; otherwise, and always
//!   with `synchronous=FULL` (whose syncs stay off the async threads), the
//!   writer thread does;
//! - a write **nobody awaits** (an event, a span id, a result a run defers
//!   to its next start, an unawaited start) waits for the next awaited
//!   commit to ride in, at most [`lazy_delay`]; then the writer thread
//!   commits it. So with `synchronous=FULL` an awaited write costs at most
//!   one sync and what is not awaited none, as long as writes are awaited
//!   more often than that delay;
//! - writes queued while a commit runs (and syncs) go together in the next
//!   one: runs that await at once share their syncs.
//!
//! The writer thread also copies the WAL into the file (a checkpoint) when
//! [`Writer::checkpoint_due`]: the connection's own checkpoints are off, so
//! that no commit on an async thread runs one and so that they are counted.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use super::writer::{MAX_BATCH, Op, Stats, Writer};
use crate::journal::Kick;

/// How long a write nobody awaits stays queued, waiting for an awaited one
/// to commit it with, before the writer thread commits it alone. Without a
/// sync per commit (`inline`) a commit is cheap: a millisecond keeps what a
/// follower of the run reads close to the run. With one, a lone commit
/// costs a disk flush: fifty milliseconds bound such flushes to twenty a
/// second, a small share of even a slow disk's time.
pub(super) fn lazy_delay(inline: bool) -> Duration {
    if inline {
        Duration::from_millis(1)
    } else {
        Duration::from_millis(50)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The queue and what the writer thread has to do.
#[derive(Default)]
struct Queue {
    ops: Vec<Op>,
    /// Writes ever queued: the ticket of the latest.
    pushed: u64,
    /// Writes ever taken into a transaction: tickets up to this one are
    /// committed or being committed.
    taken: u64,
    /// When the oldest write still queued was queued (`None` when empty).
    since: Option<Instant>,
    /// Somebody awaits a write still queued.
    awaited: bool,
    /// A checkpoint is due (the writer thread runs it).
    checkpoint: bool,
    /// The journal was dropped: commit what is queued and stop.
    closed: bool,
}

/// The queue and the writer, shared by the writer thread and the acks.
pub(super) struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the writer thread: a write queued into an empty queue, one
    /// awaited, a checkpoint due, the journal closed.
    wake: Condvar,
    writer: Mutex<Writer>,
    /// Acks may commit on their own thread (no sync per commit).
    pub inline: bool,
    lazy: Duration,
    stats: Arc<Stats>,
}

impl Shared {
    pub(super) fn new(writer: Writer, inline: bool) -> Self {
        Self {
            queue: Mutex::new(Queue {
                ops: Vec::with_capacity(64),
                ..Queue::default()
            }),
            wake: Condvar::new(),
            stats: Arc::clone(&writer.stats),
            writer: Mutex::new(writer),
            inline,
            lazy: lazy_delay(inline),
        }
    }

    /// What the writer counts.
    pub(super) fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Queues `op`; its ticket, or `None` when the journal is closed (the
    /// op, and its ack's sender, are dropped).
    pub(super) fn push(&self, op: Op) -> Option<u64> {
        let mut q = lock(&self.queue);
        if q.closed {
            return None;
        }
        q.ops.push(op);
        q.pushed += 1;
        let ticket = q.pushed;
        let first = q.since.is_none();
        if first {
            q.since = Some(Instant::now());
        }
        drop(q);
        if first {
            // The writer thread starts the delay of this write.
            self.wake.notify_one();
        }
        Some(ticket)
    }

    /// Closes the queue: the writer thread commits what is queued and
    /// returns.
    pub(super) fn close(&self) {
        lock(&self.queue).closed = true;
        self.wake.notify_one();
    }

    /// Commits what is queued, in transactions of at most [`MAX_BATCH`]
    /// writes, as long as somebody awaits a write still queued (or the
    /// journal is closing); what nobody awaits and was queued meanwhile is
    /// left for the next commit.
    fn drain(&self, w: &mut Writer) {
        loop {
            let batch = {
                let mut q = lock(&self.queue);
                if q.ops.is_empty() {
                    q.awaited = false;
                    return;
                }
                let batch: Vec<Op> = if q.ops.len() <= MAX_BATCH {
                    q.since = None;
                    q.awaited = false;
                    std::mem::replace(&mut q.ops, Vec::with_capacity(64))
                } else {
                    q.ops.drain(..MAX_BATCH).collect()
                };
                q.taken += batch.len() as u64;
                batch
            };
            w.commit_batch(batch);
            let mut q = lock(&self.queue);
            let checkpoint = !q.checkpoint && w.checkpoint_due();
            q.checkpoint |= checkpoint;
            let again = q.awaited || q.closed;
            drop(q);
            if checkpoint {
                self.wake.notify_one();
            }
            if !again {
                return;
            }
        }
    }

    /// Commits what is queued, waiting for the connection if it is busy.
    fn commit_queued(&self) {
        self.drain(&mut lock(&self.writer));
    }
}

impl Kick for Shared {
    /// Commits the queue now: on this thread when acks may commit inline
    /// and the connection is free; else by whoever holds the connection
    /// (it sees `awaited` once its commit is done) or the writer thread.
    fn kick(&self, ticket: u64) {
        {
            let mut q = lock(&self.queue);
            if ticket <= q.taken {
                // Its transaction is under way.
                return;
            }
            q.awaited = true;
        }
        if self.inline {
            match self.writer.try_lock() {
                Ok(mut w) => return self.drain(&mut w),
                Err(TryLockError::Poisoned(p)) => return self.drain(&mut p.into_inner()),
                Err(TryLockError::WouldBlock) => {}
            }
        }
        // The holder may have looked at `awaited` already: the writer
        // thread commits it then.
        self.wake.notify_one();
    }
}

/// The writer thread: commits a queue somebody awaits (unless an ack did),
/// a queue whose oldest write has waited [`lazy_delay`], and everything once
/// the journal is closed; runs the checkpoints.
pub(super) fn run(shared: &Shared) {
    let mut q = lock(&shared.queue);
    loop {
        if q.checkpoint {
            q.checkpoint = false;
            drop(q);
            lock(&shared.writer).checkpoint();
            q = lock(&shared.queue);
            continue;
        }
        let now = Instant::now();
        let due = if q.ops.is_empty() {
            None
        } else {
            Some(q.since.unwrap_or(now) + shared.lazy)
        };
        match due {
            None if q.closed => return,
            None => q = shared.wake.wait(q).unwrap_or_else(PoisonError::into_inner),
            Some(at) if q.awaited || q.closed || at <= now => {
                drop(q);
                shared.commit_queued();
                q = lock(&shared.queue);
            }
            Some(at) => {
                q = match shared.wake.wait_timeout(q, at - now) {
                    Ok((q, _)) => q,
                    Err(p) => p.into_inner().0,
                }
            }
        }
    }
}
