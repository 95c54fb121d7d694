//! Durable runs: a run that picks up what an earlier run of the same DAG
//! finished ([`DagResume`]), and an observer told of each provider call's
//! start and result before the run acts on it ([`TaskObserver`]). The
//! orchestrator journals nothing itself; the host does, through the
//! observer. Semantics: `docs/semantics.md`, "Durable runs".

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::events::{Event, EventKind};
use crate::{AcmpError, InvokeParams, InvokeResult, TaskError};

/// One provider call, as an observer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCall {
    /// The task.
    pub task_id: Arc<str>,
    /// The attempt, from 1 (see [`crate::Invocation::attempt`]).
    pub attempt: u32,
}

/// A boxed observer future; an `Err` fails the task with it.
pub type ObserveFuture = BoxFuture<'static, Result<(), AcmpError>>;

/// Told of every provider call of one run, inside the call's future:
///
/// - [`started`](TaskObserver::started) before the provider is invoked (its
///   invocation is made only after this resolved); an `Err` fails the task
///   with that error, and the provider is not invoked.
/// - [`finished`](TaskObserver::finished) after the provider returned and
///   **before the run sees the result**: no dependent starts, and no
///   transition is reported, until it resolved. An `Err` replaces the
///   result.
/// - [`failed`](TaskObserver::failed) (not awaited) when the run itself
///   fails a task it invoked: its deadline passed, or its result broke the
///   protocol. A provider that answers later is still observed through
///   `finished`; a journal that keeps the first result of a call applies
///   the failure.
///
/// Tasks whose result a [`DagResume`] gives in are not observed.
pub trait TaskObserver: Send + Sync + 'static {
    /// The call is about to be made with `params`.
    fn started(&self, call: &TaskCall, params: &InvokeParams) -> ObserveFuture;

    /// The provider answered.
    fn finished(&self, call: &TaskCall, result: &Result<InvokeResult, AcmpError>) -> ObserveFuture;

    /// The run failed the call itself.
    fn failed(&self, call: &TaskCall, error: &TaskError) {
        let _ = (call, error);
    }
}

/// What a DAG run resumed after its host stopped starts from: the results
/// of tasks whose provider answered, the attempts of tasks that were
/// running, the events already delivered, and the `seq` the next event
/// takes. The DAG must be the one the earlier run ran.
#[derive(Debug, Default)]
pub struct DagResume {
    pub(crate) tasks: HashMap<Box<str>, Prior>,
    pub(crate) reported: HashSet<String>,
    pub(crate) next_seq: u64,
}

/// What an earlier run left of one task.
#[derive(Debug)]
pub(crate) struct Prior {
    pub attempt: u32,
    pub result: Option<Result<InvokeResult, AcmpError>>,
}

impl DagResume {
    /// Nothing finished yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Task `task_id`'s provider answered `result` in attempt `attempt`: it
    /// is not invoked again; the run takes `result` as its answer (an error
    /// fails the task, as a provider's error would: this is how a host
    /// fails, with its `interrupted` error, a task that may have run and
    /// must not be repeated).
    pub fn finished(
        &mut self,
        task_id: &str,
        attempt: u32,
        result: Result<InvokeResult, AcmpError>,
    ) -> &mut Self {
        self.tasks.insert(
            task_id.into(),
            Prior {
                attempt,
                result: Some(result),
            },
        );
        self
    }

    /// Task `task_id` was invoked in attempt `attempt` and left no answer:
    /// it is invoked again with the same attempt.
    pub fn interrupted(&mut self, task_id: &str, attempt: u32) -> &mut Self {
        self.tasks.insert(
            task_id.into(),
            Prior {
                attempt,
                result: None,
            },
        );
        self
    }

    /// The event with this [`Event::identity`] was delivered already: the
    /// resumed run does not emit it again.
    pub fn reported(&mut self, identity: impl Into<String>) -> &mut Self {
        self.reported.insert(identity.into());
        self
    }

    /// The `seq` of the resumed run's first event.
    pub fn next_seq(&mut self, seq: u64) -> &mut Self {
        self.next_seq = seq;
        self
    }

    /// Whether an event of this kind was delivered already.
    pub(crate) fn was_reported(&self, kind: &EventKind) -> bool {
        !self.reported.is_empty() && identity(kind).is_some_and(|id| self.reported.contains(&id))
    }
}

/// How one run is made durable. The default is a fresh run, unobserved.
#[derive(Default)]
pub struct DagRunOptions {
    /// What an earlier run finished.
    pub resume: Option<DagResume>,
    /// Told of each provider call's start and answer. With an observer, no
    /// edge streams (`FallbackReason::Durable`): a streamed output would
    /// reach its dependents before the journal holds it.
    pub observer: Option<Arc<dyn TaskObserver>>,
}

impl std::fmt::Debug for DagRunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DagRunOptions")
            .field("resume", &self.resume)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

/// An event's identity within its run: the same for the event a resumed
/// run would emit again. `None` for heartbeats, which are never repeated
/// as such.
fn identity(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::DagStarted { .. } => "dag:started".to_owned(),
        EventKind::StreamFallback { from, to, .. } => format!("fallback:{from}>{to}"),
        EventKind::Transition { task_id, to, .. } => format!("task:{task_id}:{to}"),
        EventKind::Heartbeat { .. } => return None,
        EventKind::DagFinished { .. } => "dag:finished".to_owned(),
    })
}

impl Event {
    /// The event's identity within its run (see [`DagResume::reported`]):
    /// `dag:started`, `fallback:<from>><to>`, `task:<id>:<state entered>`,
    /// `dag:finished`; `None` for a heartbeat.
    pub fn identity(&self) -> Option<String> {
        identity(&self.kind)
    }
}
