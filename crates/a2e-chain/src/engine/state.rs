//! Per-run state: one slot per node, one record per running map.

use a2e_proto::ChainPhase;
use jmespath::Rcvar;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::NodeError;
use crate::events::{Event, EventSink, Progress};

/// Where a node is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Waiting for its dependencies.
    Waiting,
    /// Started, result not in yet.
    Running,
    /// Failed; its fallback runs and will stand in.
    Failed,
    /// Settled with an output (possibly `null` after a skipped error).
    Done,
    /// Settled without running.
    Skipped,
    /// Running when the chain stopped.
    Cancelled,
}

/// One node's run state.
#[derive(Debug)]
pub(crate) struct Slot {
    pub status: Status,
    /// Dependencies not settled yet.
    pub pending: u32,
    /// Settled control edges that are live.
    pub ctrl_live: u32,
    /// Settled data edges that are live.
    pub data_live: u32,
    /// The output, once done.
    pub output: Value,
    /// The error recorded when the node failed but the chain went on.
    pub error: Option<Box<NodeError>>,
    /// The node's context entry as a jmespath value, made on first use.
    pub var: Option<Rcvar>,
}

impl Slot {
    pub(crate) fn new(pending: u32) -> Self {
        Self {
            status: Status::Waiting,
            pending,
            ctrl_live: 0,
            data_live: 0,
            output: Value::Null,
            error: None,
            var: None,
        }
    }
}

/// One map item's state.
#[derive(Debug)]
pub(crate) enum Item {
    /// Not started.
    Waiting,
    /// Started.
    Running,
    /// Finished (the output, or `null` after a skipped error).
    Done(Value),
}

/// A map node whose items are running.
#[derive(Debug)]
pub(crate) struct MapRun {
    /// The list.
    pub items: Vec<Value>,
    /// Each item's state.
    pub results: Vec<Item>,
    /// Next item to start.
    pub next: usize,
    /// Items in flight.
    pub running: usize,
    /// Items finished.
    pub done: usize,
    /// Whether a `MapItems` work entry is queued.
    pub queued: bool,
    /// Cancels this map's items.
    pub cancel: CancellationToken,
}

/// Numbers events and hands them to the sink.
pub(crate) struct Emitter<S> {
    pub sink: S,
    pub seq: u64,
    pub progress: Progress,
}

impl<S: EventSink> Emitter<S> {
    /// Emits one event.
    pub(crate) fn emit(
        &mut self,
        node_id: &str,
        item: Option<usize>,
        phase: ChainPhase,
        output: Option<&Value>,
        error: Option<&str>,
    ) {
        let event = Event {
            seq: self.seq,
            node_id,
            item,
            phase,
            output,
            error,
            progress: self.progress,
        };
        self.seq += 1;
        self.sink.event(&event);
    }
}
