//! Progress events: what the engine reports while a chain runs, and where it
//! reports it ([`ChainEventSink`]).

use a2e_proto::{ChainEvent, ChainEventRef, ChainPhase};
use serde_json::Value;

/// How far a chain has got: declared nodes settled (done, failed or skipped)
/// out of the nodes that settle on their own (map templates excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// Nodes settled so far.
    pub settled: usize,
    /// Nodes that will settle in a complete run.
    pub total: usize,
}

/// One phase change of a node or of a map item, borrowed from the engine's
/// state. Turn it into a wire message with [`Event::to_wire`].
#[derive(Debug, Clone)]
pub struct Event<'a> {
    /// 0, 1, 2, … within the chain run.
    pub seq: u64,
    /// The node (for a map item: the template node).
    pub node_id: &'a str,
    /// For a map item: its index.
    pub item: Option<usize>,
    /// `start`, `done`, `skip` or `error`.
    pub phase: ChainPhase,
    /// The output, with `done`.
    pub output: Option<&'a Value>,
    /// The error message, with `error`.
    pub error: Option<&'a str>,
    /// Progress after this event.
    pub progress: Progress,
}

impl Event<'_> {
    /// The id on the wire: the node id, or `template[index]` for a map item.
    pub fn wire_node_id(&self) -> String {
        match self.item {
            Some(i) => format!("{}[{i}]", self.node_id),
            None => self.node_id.to_owned(),
        }
    }

    /// This event as a `chain/event` message answering request `req_id`.
    pub fn to_wire(&self, req_id: &str) -> ChainEvent {
        ChainEvent {
            req_id: req_id.to_owned(),
            node_id: self.wire_node_id(),
            phase: self.phase.clone(),
            output: self.output.cloned().unwrap_or(Value::Null),
            error: self.error.unwrap_or_default().to_owned(),
            seq: self.seq,
            ..ChainEvent::default()
        }
    }
}

impl Event<'_> {
    /// This event as a borrowed `chain/event` answering request `req_id`,
    /// handed to `f`: the message [`Event::to_wire`] makes, without copying
    /// the output (for a sink that encodes each event where it happens).
    pub fn with_wire<R>(&self, req_id: &str, f: impl FnOnce(&ChainEventRef<'_>) -> R) -> R {
        let item_id;
        let node_id = match self.item {
            Some(_) => {
                item_id = self.wire_node_id();
                item_id.as_str()
            }
            None => self.node_id,
        };
        let mut id = [0u8; 32];
        let id = a2e_proto::new_id_in(&mut id);
        let wire = ChainEventRef {
            output: self.output.unwrap_or(&Value::Null),
            error: self.error.unwrap_or_default(),
            seq: self.seq,
            ..ChainEventRef::new(id, req_id, node_id, &self.phase)
        };
        f(&wire)
    }
}

/// Receives events, synchronously and in `seq` order, on the task that runs
/// the chain. Must not block: forward to a channel to do slow work elsewhere.
pub trait ChainEventSink: Send {
    /// One event.
    fn event(&mut self, event: &Event<'_>);

    /// The engine is about to wait (for a node in flight, or to yield its
    /// thread): a sink that batches events should hand them on now. Events
    /// between two flushes come from one stretch of the engine's own work,
    /// at most a few thousand node launches. Does nothing by default.
    fn flush(&mut self) {}

    /// Whether the sink handed events to another task since it was last
    /// asked. The engine then lets other tasks run before it goes on: a
    /// task woken from the engine's thread (a transport's writer) is queued
    /// on that thread, and would otherwise wait for the whole run of nodes
    /// that finish without waiting. False by default.
    fn handed_on(&mut self) -> bool {
        false
    }
}

/// Drops every event.
impl ChainEventSink for () {
    fn event(&mut self, _: &Event<'_>) {}
}

impl<F: FnMut(&Event<'_>) + Send> ChainEventSink for F {
    fn event(&mut self, event: &Event<'_>) {
        self(event)
    }
}

/// Turns events into `chain/event` messages for one request and hands them
/// to a callback (e.g. a channel's `send`).
pub struct WireEvents<F> {
    req_id: String,
    deliver: F,
}

impl<F: FnMut(ChainEvent) + Send> WireEvents<F> {
    /// Events for request `req_id`, delivered to `deliver`.
    pub fn new(req_id: impl Into<String>, deliver: F) -> Self {
        Self {
            req_id: req_id.into(),
            deliver,
        }
    }
}

impl<F: FnMut(ChainEvent) + Send> ChainEventSink for WireEvents<F> {
    fn event(&mut self, event: &Event<'_>) {
        (self.deliver)(event.to_wire(&self.req_id));
    }
}

/// A sink that sends wire events into a tokio channel; dropped silently when
/// the receiver is gone.
pub fn channel_sink(
    req_id: impl Into<String>,
    tx: tokio::sync::mpsc::UnboundedSender<ChainEvent>,
) -> impl ChainEventSink {
    WireEvents::new(req_id, move |ev| {
        let _ = tx.send(ev);
    })
}
