//! The table of a manager's processes: each session's spawned processes
//! and `run_to_exit` runs, and how they are stopped and forgotten.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use a2e_proto::ProcState;
use nix::sys::signal::Signal;
use tokio::process::ChildStdin;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::process;

/// Finished processes a session keeps for `status` before the oldest are forgotten.
const FINISHED_KEPT: usize = 64;

/// One spawned process.
pub(super) struct Proc {
    pub(super) id: String,
    pub(super) pid: u32,
    pub(super) stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pub(super) status: Mutex<ProcStatus>,
    /// Fired by `end_session`: the supervisor kills the group and finishes.
    pub(super) cancel: CancellationToken,
    /// Becomes `true` once the process has ended and its state is final.
    pub(super) done: watch::Sender<bool>,
}

pub(super) struct ProcStatus {
    pub(super) state: ProcState,
    pub(super) kill_requested: bool,
}

impl Proc {
    pub(super) fn status(&self) -> MutexGuard<'_, ProcStatus> {
        self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn state(&self) -> ProcState {
        self.status().state.clone()
    }

    pub(super) fn is_running(&self) -> bool {
        self.status().state == ProcState::RUNNING
    }

    pub(super) async fn finished(&self) {
        let mut rx = self.done.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// Kills the group if it still runs (session end, manager dropped).
    pub(super) fn stop(&self) {
        {
            let mut status = self.status();
            if status.state != ProcState::RUNNING {
                return;
            }
            status.kill_requested = true;
        }
        if let Err(e) = process::kill_group(self.pid, Signal::SIGKILL) {
            tracing::warn!(proc_id = %self.id, error = %e, "cannot kill process group");
        }
        self.cancel.cancel();
    }
}

/// A `run_to_exit` in progress.
pub(super) struct Run {
    pub(super) pgid: u32,
    pub(super) cancel: CancellationToken,
}

#[derive(Default)]
pub(super) struct SessionProcs {
    pub(super) procs: Vec<Arc<Proc>>,
    pub(super) runs: HashMap<u64, Run>,
}

impl SessionProcs {
    pub(super) fn live(&self) -> usize {
        self.procs.iter().filter(|p| p.is_running()).count() + self.runs.len()
    }

    /// Forgets the oldest finished processes beyond [`FINISHED_KEPT`].
    pub(super) fn prune(&mut self) {
        let mut finished = self.procs.iter().filter(|p| !p.is_running()).count();
        if finished <= FINISHED_KEPT {
            return;
        }
        self.procs.retain(|p| {
            if finished > FINISHED_KEPT && !p.is_running() {
                finished -= 1;
                false
            } else {
                true
            }
        });
    }

    pub(super) fn stop_all(self) {
        for p in &self.procs {
            p.stop();
        }
        for run in self.runs.values() {
            if let Err(e) = process::kill_group(run.pgid, Signal::SIGKILL) {
                tracing::warn!(pgid = run.pgid, error = %e, "cannot kill process group");
            }
            run.cancel.cancel();
        }
    }
}

#[derive(Default)]
pub(super) struct Table {
    pub(super) sessions: HashMap<String, SessionProcs>,
}

pub(super) type SharedTable = Arc<Mutex<Table>>;

pub(super) fn lock(table: &SharedTable) -> MutexGuard<'_, Table> {
    table.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Removes a `run_to_exit` from its session's table when the run ends or is dropped.
pub(super) struct RunRegistration {
    pub(super) table: SharedTable,
    pub(super) session: String,
    pub(super) id: u64,
}

impl Drop for RunRegistration {
    fn drop(&mut self) {
        if let Some(s) = lock(&self.table).sessions.get_mut(&self.session) {
            s.runs.remove(&self.id);
        }
    }
}
