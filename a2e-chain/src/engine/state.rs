//! Per-run state: one slot per node, one record per running map.

use a2e_proto::ChainPhase;
use jmespath::Rcvar;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::NodeError;
use crate::events::{ChainEventSink, Event, Progress};
use crate::resume::Resume;

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

/// One node's scheduling state: small, so that the counters of many nodes
/// share cache lines. Outputs live apart, in [`Out`].
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub status: Status,
    /// The node is a branch (its output says which side it took).
    pub branch: bool,
    /// The node is some node's fallback.
    pub fallback: bool,
    /// The node failed and its error is recorded (skip or fallback).
    pub failed: bool,
    /// Dependencies not settled yet.
    pub pending: u32,
    /// Settled control edges that are live.
    pub ctrl_live: u32,
    /// Settled data edges that are live.
    pub data_live: u32,
    /// Control edges in (from the plan).
    pub ctrl_in: u32,
    /// Data edges in (from the plan).
    pub data_in: u32,
}

impl Slot {
    pub(crate) fn new(node: &crate::graph::Node<'_>) -> Self {
        Self {
            status: Status::Waiting,
            branch: matches!(node.spec, crate::graph::Spec::Branch(_)),
            fallback: node.role == crate::graph::Role::Fallback,
            failed: false,
            pending: node.pending,
            ctrl_live: 0,
            data_live: 0,
            ctrl_in: node.ctrl_in,
            data_in: node.data_in,
        }
    }
}

/// One node's results.
#[derive(Debug, Default)]
pub(crate) struct Out {
    /// The output, once done.
    pub output: Value,
    /// The error recorded when the node failed but the chain went on.
    pub error: Option<Box<NodeError>>,
    /// The node's context entry as a jmespath value, made on first use.
    pub var: Option<Rcvar>,
    /// The node is `Done` or `Failed`: expressions see its entry (kept
    /// here so that reading an upstream output touches one record).
    pub readable: bool,
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
    pub cancel: std::sync::Arc<CancellationToken>,
}

/// Numbers events and hands them to the sink.
pub(crate) struct Emitter<S> {
    pub sink: S,
    pub seq: u64,
    pub progress: Progress,
    /// A resumed run: what the earlier run finished and reported.
    pub resume: Option<Box<Resume>>,
}

impl<S: ChainEventSink> Emitter<S> {
    /// Emits one event.
    pub(crate) fn emit(
        &mut self,
        node_id: &str,
        item: Option<usize>,
        phase: ChainPhase,
        output: Option<&Value>,
        error: Option<&str>,
    ) {
        if let Some(resume) = &self.resume
            && resume.was_reported(node_id, item, &phase)
        {
            return;
        }
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
