//! The tasks running on this host: what fires a cancel at once, and the
//! events a stream or a subscriber of a task takes while it runs.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use a2a_proto::StreamResponse;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// How many events a slow subscriber may fall behind before it misses some
/// (it still gets the task's end: that is read from the journal).
const EVENTS_BEHIND: usize = 256;

/// One task running here.
#[derive(Debug, Clone)]
pub(crate) struct Running {
    /// Fires the task's call.
    pub cancel: CancellationToken,
    /// The task's events, as they happen.
    pub events: broadcast::Sender<StreamResponse>,
    /// Fires once the task's end is journaled.
    pub done: CancellationToken,
    /// Wakes the task's work when the client's answer was journaled here.
    pub wake: std::sync::Arc<tokio::sync::Notify>,
}

/// The tasks running on this host, by id.
#[derive(Debug, Default)]
pub(crate) struct Live {
    running: Mutex<HashMap<String, Running>>,
}

impl Live {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Task `id` starts here, fired by `cancel`.
    pub fn start(&self, id: &str, cancel: CancellationToken) -> Running {
        let (events, _) = broadcast::channel(EVENTS_BEHIND);
        let running = Running {
            cancel,
            events,
            done: CancellationToken::new(),
            wake: std::sync::Arc::default(),
        };
        self.lock().insert(id.to_owned(), running.clone());
        running
    }

    /// Task `id`, when it runs here.
    pub fn get(&self, id: &str) -> Option<Running> {
        self.lock().get(id).cloned()
    }

    /// Task `id` ended (its end is journaled).
    pub fn end(&self, id: &str) {
        if let Some(running) = self.lock().remove(id) {
            running.done.cancel();
        }
    }
}
