//! Coordination: the host that schedules a run holds its lease
//! ([`Coordination`]); every host looks, every half lease, for running runs
//! whose lease expired (their coordinator died) and takes them over
//! ([`start_takeover`]).

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use a2e_journal::nats::LeaseKeeper;
use a2e_journal::{Journal, JournalError, RunId, RunItem, RunKind};
use a2e_proto::ChainResponse;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{Cluster, alive};
use crate::host::Host;

/// A run this host coordinates: its lease, renewed in the background.
pub(crate) struct Coordination {
    cluster: Arc<Cluster>,
    /// `None` once given up.
    keeper: Option<LeaseKeeper>,
    run: RunId,
}

impl Drop for Coordination {
    fn drop(&mut self) {
        // Dropped without release: the renewals stop, the lease expires.
        self.cluster.coordinating().remove(&self.run);
    }
}

impl Coordination {
    /// Takes run `run`'s lease for this host; `Err` when another host holds
    /// it or the server cannot be reached.
    pub(crate) async fn acquire(cluster: &Arc<Cluster>, run: &RunId) -> Result<Self, JournalError> {
        let lease = cluster.leases().acquire(run).await?;
        cluster.coordinating().insert(run.clone());
        Ok(Self {
            cluster: cluster.clone(),
            keeper: Some(cluster.leases().keep(lease)),
            run: run.clone(),
        })
    }

    /// Runs `fut` while the lease holds: `None` when the lease was lost
    /// (another host took the run over; `fut` is dropped).
    pub(crate) async fn guard(
        &mut self,
        fut: impl Future<Output = ChainResponse>,
    ) -> Option<ChainResponse> {
        let keeper = self.keeper.as_mut()?;
        tokio::select! {
            resp = fut => Some(resp),
            () = keeper.lost() => {
                tracing::warn!(run = %self.run, "cluster: the run's lease was lost; another host runs it");
                None
            }
        }
    }

    /// Resolves when the lease is lost (or given up); pending forever when
    /// it is held no more already.
    pub(crate) fn lost_signal(&self) -> futures::future::BoxFuture<'static, ()> {
        match &self.keeper {
            Some(keeper) => Box::pin(keeper.lost_signal()),
            None => Box::pin(futures::future::pending()),
        }
    }

    /// Whether the lease was lost.
    pub(crate) fn is_lost(&self) -> bool {
        self.keeper.as_ref().is_none_or(LeaseKeeper::is_lost)
    }

    /// Gives the lease up (the run finished).
    pub(crate) async fn release(mut self) {
        if let Some(keeper) = self.keeper.take()
            && let Err(e) = keeper.release().await
        {
            tracing::debug!(run = %self.run, "cluster: lease release: {e}");
        }
    }

    /// The run's answer once whoever runs it now journals it (this host
    /// lost the lease).
    pub(crate) async fn answer_elsewhere(self, journal: &dyn Journal) -> Option<ChainResponse> {
        let run = self.run.clone();
        drop(self);
        let mut items = journal.subscribe(&run, u64::MAX);
        while let Some(item) = items.next().await {
            match item {
                Ok(RunItem::Finished { answer, .. }) => return serde_json::from_value(answer).ok(),
                Ok(RunItem::Event(_)) => {}
                Err(e) => {
                    tracing::warn!(run = %run, "cluster: {e}");
                    return None;
                }
            }
        }
        None
    }
}

/// Starts this host's take-over loop (once at once, then every half lease):
/// running chain runs with no lease are taken over and resumed from the
/// journal. Ends with the cluster.
pub fn start_takeover(host: &Arc<Host>) {
    let Some(cluster) = host.cluster() else {
        return;
    };
    let every = (cluster.leases().ttl() / 2).max(Duration::from_millis(200));
    let stop = cluster.shutdown();
    tokio::spawn(takeover(Arc::downgrade(host), every, stop));
}

async fn takeover(host: Weak<Host>, every: Duration, stop: CancellationToken) {
    loop {
        {
            let Some(host) = alive(&host) else { return };
            scan(&host, &stop).await;
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}

/// One look for runs to take over.
async fn scan(host: &Arc<Host>, stop: &CancellationToken) {
    let (Some(cluster), Some(journal)) = (host.cluster(), host.journal().cloned()) else {
        return;
    };
    let loaded = match journal.load_unfinished().await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!("cluster: cannot load the unfinished runs: {e}");
            return;
        }
    };
    for bad in &loaded.corrupt {
        tracing::error!(run = %bad.run_id, "run journal: not taken over: {}", bad.message);
    }
    for state in loaded.items {
        let run = state.summary.run_id.clone();
        if !taken_over(state.summary.kind) || cluster.coordinating().contains(&run) {
            continue;
        }
        match cluster.leases().holder(&run).await {
            Ok(None) => {}
            Ok(Some(_)) => continue,
            Err(e) => {
                tracing::warn!(run = %run, "cluster: {e}");
                continue;
            }
        }
        let coordination = match Coordination::acquire(&cluster, &run).await {
            Ok(c) => c,
            Err(JournalError::Leased { .. }) => continue,
            Err(e) => {
                tracing::warn!(run = %run, "cluster: {e}");
                continue;
            }
        };
        tracing::info!(run = %run, host = cluster.name(), "cluster: taking the run over");
        let host = host.clone();
        let journal = journal.clone();
        let token = stop.child_token();
        let c = Some(coordination);
        match state.summary.kind {
            #[cfg(feature = "acmp")]
            RunKind::AcmpDag => {
                tokio::spawn(async move {
                    crate::dag::resume_run(&host, journal, state, token, c).await;
                });
            }
            RunKind::Ontheia | RunKind::LlmSkill => {
                tokio::spawn(async move {
                    crate::skill_run::resume_run(&host, journal, state, token, c).await;
                });
            }
            RunKind::McpTask | RunKind::A2aTask => {
                tokio::spawn(async move {
                    crate::task_run::end_orphan(journal, state, c, token).await;
                });
            }
            RunKind::Approval => {
                tokio::spawn(async move {
                    crate::approval_run::end_orphan(journal, state, c).await;
                });
            }
            _ => {
                tokio::spawn(async move {
                    crate::resume_run(&host, journal, state, token, c).await;
                });
            }
        }
    }
}

/// Kinds of runs a host of the cluster takes over.
fn taken_over(kind: RunKind) -> bool {
    match kind {
        RunKind::Chain
        | RunKind::Ontheia
        | RunKind::LlmSkill
        | RunKind::McpTask
        | RunKind::A2aTask
        | RunKind::Approval => true,
        RunKind::AcmpDag => cfg!(feature = "acmp"),
    }
}
