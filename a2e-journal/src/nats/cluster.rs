//! One process's part in a cluster of hosts that share runs: the journal in
//! JetStream, the run leases, the work queue, the process's name, and the
//! runs it coordinates. What runs on it (workers, take-over, sending nodes
//! to workers) is the host's; this is the state they share, typed, so that a
//! host holds it as it holds its journal.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

use super::{Leases, NatsJournal, WorkQueue};
use crate::ids::RunId;

/// This process's membership of a cluster.
///
/// Dropping it fires [`Cluster::shutdown`]: whatever runs for the
/// membership (workers, take-over loops) stops with it.
pub struct Cluster {
    journal: NatsJournal,
    leases: Leases,
    queue: WorkQueue,
    name: String,
    /// The runs this process coordinates (never taken over by itself).
    coordinating: Mutex<HashSet<RunId>>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Cluster {
    /// The membership of the process named `name` (unique in the cluster:
    /// leases are held in its name).
    pub fn new(journal: NatsJournal, leases: Leases, queue: WorkQueue, name: String) -> Self {
        Self {
            journal,
            leases,
            queue,
            name,
            coordinating: Mutex::new(HashSet::new()),
            shutdown: CancellationToken::new(),
        }
    }

    /// This process's name in leases and node starts.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The journal in JetStream.
    pub fn journal(&self) -> &NatsJournal {
        &self.journal
    }

    /// The run leases.
    pub fn leases(&self) -> &Leases {
        &self.leases
    }

    /// The work queue of the cluster's nodes.
    pub fn queue(&self) -> &WorkQueue {
        &self.queue
    }

    /// Fires when the membership ends.
    pub fn shutdown(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// The runs this process coordinates.
    pub fn coordinating(&self) -> MutexGuard<'_, HashSet<RunId>> {
        self.coordinating
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
