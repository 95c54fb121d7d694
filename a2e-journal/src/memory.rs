//! [`MemoryJournal`]: a journal held in the process's memory, for a host
//! whose durable journal is off that still shows its runs (the live view).
//! Nothing survives the process; finished runs are kept within bounds.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::sync::watch;

use crate::error::{JournalError, Result};
use crate::ids::{NodeKey, RunId};
use crate::journal::{Ack, Journal};
use crate::model::{
    Loaded, NewRun, NodeOutcome, NodeRecord, NodeStart, PruneReport, Retention, RunFilter, RunItem,
    RunState, RunStatus, RunSummary, StoredEvent, now_ms,
};

/// How much a [`MemoryJournal`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryOptions {
    /// Finished runs kept past their end (default: the newest 100 finished
    /// within the last hour). Running runs are always kept.
    pub retention: Retention,
    /// Events kept per run (default 10,000): later ones are dropped.
    pub max_events: usize,
}

impl Default for MemoryOptions {
    fn default() -> Self {
        Self {
            retention: Retention {
                max_age: Some(Duration::from_secs(3600)),
                max_runs: Some(100),
            },
            max_events: 10_000,
        }
    }
}

struct Run {
    summary: RunSummary,
    request: Value,
    nodes: BTreeMap<(String, u32), NodeRecord>,
    events: BTreeMap<u64, Value>,
    answer: Option<Value>,
    /// Order of creation (ties of `created_ms`).
    order: u64,
}

impl Run {
    fn state(&self) -> RunState {
        let mut summary = self.summary.clone();
        summary.next_seq = self.events.keys().next_back().map_or(0, |s| s + 1);
        RunState {
            summary,
            request: self.request.clone(),
            nodes: self.nodes.values().cloned().collect(),
            answer: self.answer.clone(),
        }
    }
}

#[derive(Default)]
struct State {
    runs: HashMap<RunId, Run>,
    /// Finished runs, in the order they finished.
    finished: VecDeque<RunId>,
    created: u64,
}

impl State {
    fn run(&mut self, run_id: &RunId) -> Result<&mut Run> {
        self.runs
            .get_mut(run_id)
            .ok_or_else(|| JournalError::UnknownRun(run_id.to_string()))
    }

    fn node(&mut self, key: &NodeKey) -> Result<&mut NodeRecord> {
        let run = self.run(key.run_id())?;
        Ok(run
            .nodes
            .entry((key.node_id().to_owned(), key.attempt()))
            .or_insert_with(|| NodeRecord {
                node_id: key.node_id().to_owned(),
                attempt: key.attempt(),
                started_ms: 0,
                finished_ms: None,
                outcome: None,
                start: None,
            }))
    }

    fn prune(&mut self, retention: &Retention) -> PruneReport {
        let mut removed = 0u64;
        let cutoff = retention
            .max_age
            .map(|age| now_ms().saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX)));
        while let Some(oldest) = self.finished.front() {
            let ended = self
                .runs
                .get(oldest)
                .and_then(|r| r.summary.finished_ms)
                .unwrap_or(0);
            let too_many = retention
                .max_runs
                .is_some_and(|max| self.finished.len() > max);
            let too_old = cutoff.is_some_and(|c| ended < c);
            if !too_many && !too_old {
                break;
            }
            if let Some(id) = self.finished.pop_front() {
                self.runs.remove(&id);
                removed += 1;
            }
        }
        PruneReport { runs: removed }
    }
}

/// A [`Journal`] in memory: every write is applied when called (its [`Ack`]
/// is ready at once), subscriptions are woken by each write. Bounded by
/// [`MemoryOptions`]: finished runs past the retention are dropped as runs
/// finish, and a run keeps its first [`MemoryOptions::max_events`] events.
/// Nothing survives the process, so a host never resumes from it.
#[derive(Clone)]
pub struct MemoryJournal {
    state: Arc<Mutex<State>>,
    changed: Arc<watch::Sender<u64>>,
    options: MemoryOptions,
}

impl std::fmt::Debug for MemoryJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryJournal")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryJournal {
    fn default() -> Self {
        Self::new(MemoryOptions::default())
    }
}

impl MemoryJournal {
    /// An empty journal keeping what `options` say.
    pub fn new(options: MemoryOptions) -> Self {
        Self {
            state: Arc::default(),
            changed: Arc::new(watch::channel(0).0),
            options,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies `f` and wakes the subscriptions.
    fn write<T>(&self, f: impl FnOnce(&mut State) -> Result<T>) -> Ack<T> {
        let r = f(&mut self.lock());
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
        Ack::ready(r)
    }

    fn read<T: Send + 'static>(&self, f: impl FnOnce(&State) -> T) -> BoxFuture<'static, T> {
        let v = f(&self.lock());
        futures::future::ready(v).boxed()
    }
}

impl Journal for MemoryJournal {
    fn commits_in_order(&self) -> bool {
        true
    }

    fn create_run(&self, run: NewRun) -> Ack {
        self.write(|s| {
            if s.runs.contains_key(&run.run_id) {
                return Err(JournalError::DuplicateRun(run.run_id.to_string()));
            }
            s.created += 1;
            let summary = RunSummary {
                coordinator: None,
                run_id: run.run_id.clone(),
                kind: run.kind,
                agent: run.agent,
                status: RunStatus::Running,
                created_ms: now_ms(),
                finished_ms: None,
                cancel_requested: false,
                next_seq: 0,
            };
            let entry = Run {
                summary,
                request: run.request,
                nodes: BTreeMap::new(),
                events: BTreeMap::new(),
                answer: None,
                order: s.created,
            };
            s.runs.insert(run.run_id, entry);
            Ok(())
        })
    }

    fn node_started(&self, key: &NodeKey) -> Ack {
        self.node_started_with_opt(key, None)
    }

    fn node_started_with(&self, key: &NodeKey, start: &NodeStart) -> Ack {
        self.node_started_with_opt(key, Some(start.clone().bounded()))
    }

    fn node_traced(&self, key: &NodeKey, trace_id: &str, span_id: &str) -> Ack {
        self.write(|s| {
            let Some(rec) = s
                .runs
                .get_mut(key.run_id())
                .and_then(|r| r.nodes.get_mut(&(key.node_id().to_owned(), key.attempt())))
            else {
                return Ok(());
            };
            let mut start = rec.start.take().unwrap_or_default();
            start.trace_id = Some(trace_id.to_owned());
            start.span_id = Some(span_id.to_owned());
            rec.start = Some(start.bounded());
            Ok(())
        })
    }

    fn node_finished(&self, key: &NodeKey, outcome: &NodeOutcome) -> Ack<bool> {
        self.write(|s| {
            let rec = s.node(key)?;
            if rec.outcome.is_some() {
                return Ok(false);
            }
            rec.outcome = Some(outcome.clone());
            rec.finished_ms = Some(now_ms());
            Ok(true)
        })
    }

    fn append_event(&self, run_id: &RunId, seq: u64, event: &Value) -> Ack {
        let max = self.options.max_events;
        self.write(|s| {
            let run = s.run(run_id)?;
            if run.events.len() < max {
                run.events.entry(seq).or_insert_with(|| event.clone());
            }
            Ok(())
        })
    }

    fn finish_run(&self, run_id: &RunId, status: RunStatus, answer: &Value) -> Ack {
        let retention = self.options.retention;
        self.write(|s| {
            let run = s.run(run_id)?;
            let was_running = !run.summary.status.is_finished();
            run.summary.status = status;
            run.summary.finished_ms = Some(now_ms());
            run.answer = Some(answer.clone());
            if was_running {
                s.finished.push_back(run_id.clone());
            }
            s.prune(&retention);
            Ok(())
        })
    }

    fn request_cancel(&self, run_id: &RunId) -> Ack<bool> {
        self.write(|s| {
            Ok(match s.runs.get_mut(run_id) {
                Some(run) if !run.summary.status.is_finished() => {
                    run.summary.cancel_requested = true;
                    true
                }
                _ => false,
            })
        })
    }

    fn cancel_requested(&self, run_id: &RunId) -> BoxFuture<'static, Result<bool>> {
        self.read(|s| {
            Ok(s.runs
                .get(run_id)
                .is_some_and(|r| r.summary.cancel_requested))
        })
    }

    fn list_runs(&self, filter: &RunFilter) -> BoxFuture<'static, Result<Loaded<RunSummary>>> {
        let limit = match filter.limit {
            0 => 100,
            n => n,
        };
        self.read(|s| {
            let mut runs: Vec<&Run> = s
                .runs
                .values()
                .filter(|r| filter.agent.as_ref().is_none_or(|a| *a == r.summary.agent))
                .filter(|r| filter.status.is_none_or(|st| st == r.summary.status))
                .collect();
            runs.sort_by(|a, b| {
                (b.summary.created_ms, b.order).cmp(&(a.summary.created_ms, a.order))
            });
            Ok(Loaded {
                items: runs
                    .into_iter()
                    .take(limit)
                    .map(|r| r.state().summary)
                    .collect(),
                corrupt: Vec::new(),
            })
        })
    }

    fn show_run(&self, run_id: &RunId) -> BoxFuture<'static, Result<Option<RunState>>> {
        self.read(|s| Ok(s.runs.get(run_id).map(Run::state)))
    }

    fn load_unfinished(&self) -> BoxFuture<'static, Result<Loaded<RunState>>> {
        self.read(|s| {
            let mut runs: Vec<&Run> = s
                .runs
                .values()
                .filter(|r| !r.summary.status.is_finished())
                .collect();
            runs.sort_by_key(|r| r.order);
            Ok(Loaded {
                items: runs.into_iter().map(Run::state).collect(),
                corrupt: Vec::new(),
            })
        })
    }

    fn events(
        &self,
        run_id: &RunId,
        from_seq: u64,
        limit: usize,
    ) -> BoxFuture<'static, Result<Vec<StoredEvent>>> {
        self.read(|s| Ok(events_of(s, run_id, from_seq, limit)))
    }

    fn subscribe(&self, run_id: &RunId, from_seq: u64) -> BoxStream<'static, Result<RunItem>> {
        let me = self.clone();
        let rx = self.changed.subscribe();
        let start = (me, rx, run_id.clone(), from_seq, VecDeque::new(), false);
        futures::stream::unfold(
            start,
            |(me, mut rx, run, mut next, mut ready, done)| async move {
                if done {
                    return None;
                }
                loop {
                    if let Some(e) = ready.pop_front() {
                        return Some((Ok(RunItem::Event(e)), (me, rx, run, next, ready, false)));
                    }
                    rx.mark_unchanged();
                    let Some((events, end)) = me.look(&run, next) else {
                        let e = JournalError::UnknownRun(run.to_string());
                        return Some((Err(e), (me, rx, run, next, ready, true)));
                    };
                    if let Some(last) = events.last() {
                        next = last.seq + 1;
                        ready.extend(events);
                        continue;
                    }
                    if let Some((status, answer)) = end {
                        let item = RunItem::Finished { status, answer };
                        return Some((Ok(item), (me, rx, run, next, ready, true)));
                    }
                    if rx.changed().await.is_err() {
                        return None;
                    }
                }
            },
        )
        .boxed()
    }

    fn prune(&self, retention: &Retention) -> Ack<PruneReport> {
        self.write(|s| Ok(s.prune(retention)))
    }

    fn flush(&self) -> Ack {
        Ack::ready(Ok(()))
    }
}

impl MemoryJournal {
    /// A subscription's look at `run`: its events from `next` on (a batch),
    /// and its end once finished; `None` when the run is unknown.
    #[allow(clippy::type_complexity)]
    fn look(
        &self,
        run: &RunId,
        next: u64,
    ) -> Option<(Vec<StoredEvent>, Option<(RunStatus, Value)>)> {
        let s = self.lock();
        let r = s.runs.get(run)?;
        let end = r
            .summary
            .status
            .is_finished()
            .then(|| (r.summary.status, r.answer.clone().unwrap_or(Value::Null)));
        Some((events_of(&s, run, next, 256), end))
    }

    fn node_started_with_opt(&self, key: &NodeKey, start: Option<NodeStart>) -> Ack {
        self.write(|s| {
            let rec = s.node(key)?;
            if rec.outcome.is_none() {
                rec.started_ms = now_ms();
                if start.is_some() {
                    rec.start = start;
                }
            }
            Ok(())
        })
    }
}

fn events_of(s: &State, run_id: &RunId, from: u64, limit: usize) -> Vec<StoredEvent> {
    s.runs.get(run_id).map_or_else(Vec::new, |r| {
        r.events
            .range(from..)
            .take(limit)
            .map(|(seq, event)| StoredEvent {
                seq: *seq,
                event: event.clone(),
            })
            .collect()
    })
}
