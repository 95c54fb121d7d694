//! Durable runs: a run that picks up what an earlier run of the same request
//! finished ([`Resume`]), and an observer told of each runner call's start
//! and result before the engine acts on it ([`CallObserver`]). The engine
//! journals nothing itself; the host does, through the observer.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use a2e_proto::ChainPhase;

use crate::error::NodeError;
use crate::runner::{CallKey, NodeCall, NodeResult, wire_id};

/// A boxed observer future.
pub type ObserveFuture = Pin<Box<dyn Future<Output = Result<(), NodeError>> + Send + 'static>>;

/// Told of every runner call of one run (`tool`, `skill`, `proc` nodes and
/// map items; `branch` and `map` are the engine's own and are computed again
/// on resume). Both futures are awaited in the call's own future, off the
/// scheduler:
///
/// - [`started`](CallObserver::started) before the runner is called: a host
///   journals the start there, so that a call that may have run is known
///   after a crash. An `Err` fails the call with that error; the runner is
///   not called.
/// - [`finished`](CallObserver::finished) after the runner returned (or
///   timed out, or panicked) and **before the engine sees the result**: no
///   dependent starts, and no event reports the result, until it resolved.
///   An `Err` replaces the result (the call fails with it).
///
/// Calls whose result a [`Resume`] gives in are not observed.
pub trait CallObserver: Send + Sync + 'static {
    /// The call is about to run.
    fn started(&self, call: &NodeCall) -> ObserveFuture;

    /// The call ended with `result`.
    fn finished(&self, call: &CallKey, result: &NodeResult) -> ObserveFuture;
}

/// What a run resumed after its host stopped starts from: the results of
/// calls that finished, the attempts of calls that were running, the events
/// already delivered, and the `seq` the next event takes.
///
/// Call ids are wire ids (see [`wire_id`]). The request must be the one the
/// earlier run ran: the engine computes branches, maps and inputs again and
/// relies on them coming out the same.
#[derive(Debug, Default)]
pub struct Resume {
    pub(crate) calls: HashMap<Box<str>, Prior>,
    pub(crate) starts: HashSet<Box<str>>,
    pub(crate) ends: HashSet<Box<str>>,
    pub(crate) next_seq: u64,
}

/// What an earlier run left of one call.
#[derive(Debug)]
pub(crate) struct Prior {
    pub attempt: u32,
    pub result: Option<NodeResult>,
}

impl Resume {
    /// Nothing finished yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Call `wire_id` finished with `result` in attempt `attempt`: the
    /// runner is not called again; the engine takes `result` as the call's.
    /// (An error the host chose for a call that may have run but must not
    /// be repeated, `interrupted`, is given here too; the node's `on_error`
    /// applies to it.)
    pub fn finished(&mut self, wire_id: &str, attempt: u32, result: NodeResult) -> &mut Self {
        self.calls.insert(
            wire_id.into(),
            Prior {
                attempt,
                result: Some(result),
            },
        );
        self
    }

    /// Call `wire_id` started in attempt `attempt` and left no result: it
    /// runs again with the same attempt, so that the runner sees the same
    /// idempotency key.
    pub fn interrupted(&mut self, wire_id: &str, attempt: u32) -> &mut Self {
        self.calls.insert(
            wire_id.into(),
            Prior {
                attempt,
                result: None,
            },
        );
        self
    }

    /// The event of `wire_id` in `phase` was delivered already (it is in the
    /// journal): the resumed run does not emit it again. A `start` stands
    /// for the call's start event; `done`, `error` and `skip` for its end.
    pub fn reported(&mut self, wire_id: &str, phase: &ChainPhase) -> &mut Self {
        if *phase == ChainPhase::START {
            self.starts.insert(wire_id.into());
        } else {
            self.ends.insert(wire_id.into());
        }
        self
    }

    /// The `seq` of the resumed run's first event (the number of events
    /// journaled).
    pub fn next_seq(&mut self, seq: u64) -> &mut Self {
        self.next_seq = seq;
        self
    }

    /// Whether an event is one the journal has (see [`Resume::reported`]).
    pub(crate) fn was_reported(
        &self,
        node_id: &str,
        item: Option<usize>,
        phase: &ChainPhase,
    ) -> bool {
        let set = if *phase == ChainPhase::START {
            &self.starts
        } else {
            &self.ends
        };
        if set.is_empty() {
            return false;
        }
        match item {
            None => set.contains(node_id),
            Some(i) => set.contains(wire_id(node_id, Some(i)).as_str()),
        }
    }
}

/// How one run is made durable: what it resumes from, and who observes its
/// calls. The default is a fresh run, unobserved.
#[derive(Default)]
pub struct RunOptions {
    /// What an earlier run finished.
    pub resume: Option<Resume>,
    /// Told of each call's start and result.
    pub observer: Option<Arc<dyn CallObserver>>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("resume", &self.resume)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}
