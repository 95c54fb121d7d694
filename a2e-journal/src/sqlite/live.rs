//! Following a run: journaled events first, then each new one once the
//! writer committed it, then the final answer.
//!
//! The writer bumps a per-run counter after each commit that touched a run
//! somebody follows; a follower reads the store from the `seq` it needs next
//! whenever the counter moved (or every poll interval, for writes made by
//! another process on the same file). Reading from the store, never from a
//! copy handed over in memory, is what makes the order and the
//! each-`seq`-once rule hold across a lagging follower and a restart.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};
use tokio::sync::watch;

use super::{Reader, read};
use crate::error::{JournalError, Result};
use crate::ids::RunId;
use crate::model::RunItem;

/// Events read per round trip to the store.
const PAGE: usize = 512;

/// The runs somebody follows.
#[derive(Default)]
pub(super) struct Live {
    runs: Mutex<HashMap<RunId, (watch::Sender<u64>, usize)>>,
    followers: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Live {
    /// The writer committed writes to these runs.
    pub(super) fn notify(&self, runs: &[RunId]) {
        if runs.is_empty() || self.followers.load(Ordering::Acquire) == 0 {
            return;
        }
        let map = lock(&self.runs);
        for run in runs {
            if let Some((tx, _)) = map.get(run) {
                tx.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    fn follow(self: &Arc<Self>, run: &RunId) -> Follower {
        let mut map = lock(&self.runs);
        let (tx, count) = map
            .entry(run.clone())
            .or_insert_with(|| (watch::channel(0).0, 0));
        *count += 1;
        self.followers.fetch_add(1, Ordering::AcqRel);
        Follower {
            rx: tx.subscribe(),
            live: Arc::clone(self),
            run: run.clone(),
        }
    }
}

/// One follower's registration; leaving drops the run's entry once nobody
/// follows it.
struct Follower {
    rx: watch::Receiver<u64>,
    live: Arc<Live>,
    run: RunId,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.live.followers.fetch_sub(1, Ordering::AcqRel);
        let mut map = lock(&self.live.runs);
        if let Some((_, count)) = map.get_mut(&self.run) {
            *count -= 1;
            if *count == 0 {
                map.remove(&self.run);
            }
        }
    }
}

struct State {
    reader: Arc<Reader>,
    follower: Follower,
    run: RunId,
    next: u64,
    poll: Duration,
    queue: VecDeque<Result<RunItem>>,
    done: bool,
}

/// A run's items from `from` on (see the module documentation).
pub(super) fn subscribe(
    live: &Arc<Live>,
    reader: Arc<Reader>,
    run: RunId,
    from: u64,
    poll: Duration,
) -> BoxStream<'static, Result<RunItem>> {
    let state = State {
        follower: live.follow(&run),
        reader,
        run,
        next: from,
        poll,
        queue: VecDeque::new(),
        done: false,
    };
    stream::unfold(state, |mut st| async move {
        let item = st.next_item().await?;
        Some((item, st))
    })
    .boxed()
}

impl State {
    async fn next_item(&mut self) -> Option<Result<RunItem>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            // Seen before reading: a commit after this read moves it again.
            self.follower.rx.borrow_and_update();
            if let Err(e) = self.fill().await {
                self.done = true;
                return Some(Err(e));
            }
            if !self.queue.is_empty() || self.done {
                continue;
            }
            // Nothing new: wait for a commit, or poll.
            let _ = tokio::time::timeout(self.poll, self.follower.rx.changed()).await;
        }
    }

    /// Reads what follows `next`; queues it, and the answer once the run has
    /// finished and every event before it is out.
    async fn fill(&mut self) -> Result<()> {
        let (run, from) = (self.run.clone(), self.next);
        let (status, events) = self
            .reader
            .with(move |conn| {
                // Status first: events journaled before the answer are read
                // after it, so none is missed.
                let status = read::status(conn, &run)?;
                let events = read::events(conn, &run, from, PAGE)?;
                Ok((status, events))
            })
            .await?;
        let Some((status, answer, _)) = status else {
            self.done = true;
            self.queue
                .push_back(Err(JournalError::UnknownRun(self.run.to_string())));
            return Ok(());
        };
        let full_page = events.len() == PAGE;
        for (seq, event) in events {
            if seq < self.next {
                continue;
            }
            self.next = seq.saturating_add(1);
            self.queue.push_back(event.map(RunItem::Event));
        }
        if status.is_finished() && !full_page {
            self.done = true;
            self.queue.push_back(Ok(RunItem::Finished {
                status,
                answer: answer.unwrap_or_default(),
            }));
        }
        Ok(())
    }
}
