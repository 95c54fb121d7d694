//! Progress events: what the engine reports while a chain runs.

use crate::doc::StepType;

/// What happened to a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// It starts (its `when` held).
    Start,
    /// It succeeded; `output` holds its (bounded) output.
    Done,
    /// Its `when` did not hold.
    Skip,
    /// It failed; `error` says why.
    Error,
    /// A non-silent `llm`, `agent` or `transform` answer for the chat
    /// stream (bounded like every event output).
    Message,
}

impl EventKind {
    /// `start`, `done`, `skip`, `error` or `message`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Start => "start",
            EventKind::Done => "done",
            EventKind::Skip => "skip",
            EventKind::Error => "error",
            EventKind::Message => "message",
        }
    }
}

/// One event, borrowed from the engine.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    /// 0, 1, 2, … within the run (sub-chains of agents included).
    pub seq: u64,
    /// The step's place in the run: its id under the loop iterations
    /// (`loop#2/`), retry attempts (`retry@3/`) and agent delegations
    /// (`agent>`) it runs in; the step id at the top level.
    pub key: &'a str,
    /// The step.
    pub step_id: &'a str,
    /// Its type.
    pub step_type: StepType,
    /// What happened.
    pub kind: EventKind,
    /// The output as text, truncated to the configured event size.
    pub output: Option<&'a str>,
    /// The error, with [`EventKind::Error`].
    pub error: Option<&'a str>,
    /// Agent delegation depth (0 for the top chain).
    pub depth: usize,
}

/// Receives events in order, on the task that runs the chain. Must not
/// block: forward to a channel for slow work.
pub trait OntheiaEventSink: Send {
    /// One event.
    fn event(&mut self, event: &Event<'_>);
}

/// Drops every event.
impl OntheiaEventSink for () {
    fn event(&mut self, _: &Event<'_>) {}
}

impl<F: FnMut(&Event<'_>) + Send> OntheiaEventSink for F {
    fn event(&mut self, event: &Event<'_>) {
        self(event)
    }
}
