//! Events of a DAG run: every state transition, heartbeats, streaming fallbacks.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::{CancelReason, DagStatus, TaskError, TaskState};

/// One event of a run. `seq` starts at 0 and increases by 1 per event of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Position in the run's event sequence.
    pub seq: u64,
    /// The DAG.
    pub dag_id: Arc<str>,
    /// What happened.
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EventKind {
    /// The run started (first event).
    DagStarted {
        /// Number of tasks.
        tasks: usize,
    },
    /// A `stream_eligible` edge runs in non-streaming mode (before any task starts).
    StreamFallback {
        /// Upstream task.
        from: Arc<str>,
        /// Downstream task.
        to: Arc<str>,
        /// Why.
        reason: FallbackReason,
    },
    /// A task changed state.
    Transition {
        /// The task.
        task_id: Arc<str>,
        /// The state left.
        from: TaskState,
        /// The state entered.
        to: TaskState,
        /// Why, for `failed` and `cancelled`.
        cause: Option<TransitionCause>,
    },
    /// A running task's provider sent an `acmp/heartbeat`.
    Heartbeat {
        /// The task.
        task_id: Arc<str>,
        /// Progress, 0.0–1.0.
        progress: Option<f64>,
        /// Free-form detail.
        detail: Option<String>,
    },
    /// The run ended (last event).
    DagFinished {
        /// How.
        status: DagStatus,
    },
}

/// Why a task failed or was cancelled.
#[derive(Debug, Clone, PartialEq)]
pub enum TransitionCause {
    /// The task failed.
    Failed(TaskError),
    /// The task was cancelled.
    Cancelled(CancelReason),
}

/// Why a `stream_eligible` edge does not stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackReason {
    /// The upstream provider did not advertise `output_streaming`.
    NoOutputStreaming,
    /// The downstream provider did not advertise `input_streaming`.
    NoInputStreaming,
    /// One of the two tasks has no provider.
    NoProvider,
    /// The run is journaled (an observer is set): a streamed output would
    /// reach its dependents before the journal holds it.
    Durable,
}

/// Receives the events of a run, synchronously and in order, from the orchestrator's loop:
/// keep `emit` cheap (forward to a channel for slow work).
pub trait DagEventSink: Send + Sync + 'static {
    /// One event.
    fn emit(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync + 'static> DagEventSink for F {
    fn emit(&self, event: &Event) {
        self(event);
    }
}

impl DagEventSink for mpsc::UnboundedSender<Event> {
    fn emit(&self, event: &Event) {
        let _ = self.send(event.clone());
    }
}
