//! Messages into a run's loop: from invocations, output sinks and run controls.

use crate::Payload;

#[derive(Debug)]
pub(crate) enum Msg {
    /// The deadline passed; the provider may still answer.
    TimedOut { idx: u32, timeout_ms: u64 },
    /// An output chunk.
    Chunk {
        idx: u32,
        chunk: Payload,
        last: bool,
    },
    /// A heartbeat.
    Heartbeat {
        idx: u32,
        progress: Option<f64>,
        detail: Option<String>,
    },
    /// Cancel a task and its dependents.
    Cancel { idx: u32 },
    /// Cancel the whole run.
    CancelAll,
}
