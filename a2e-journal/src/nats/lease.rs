//! Run leases: the host that schedules a run holds its lease, a KV entry
//! written with compare-and-set in a bucket whose `max_age` is the lease's
//! time to live. The holder renews it (a compare-and-set on the revision it
//! last wrote); when it dies, the entry ages out on the server (no host's
//! clock decides), and another host's `acquire` takes the run over.

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::streams::bucket;
use super::{Names, nats_err};
use crate::error::{JournalError, Result};
use crate::ids::RunId;
use crate::model::now_ms;

#[derive(Debug, Serialize, Deserialize)]
struct LeaseDoc {
    holder: String,
    renewed_ms: u64,
}

/// The leases of one host.
#[derive(Clone)]
pub struct Leases {
    kv: kv::Store,
    holder: String,
    ttl: Duration,
}

impl std::fmt::Debug for Leases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leases")
            .field("holder", &self.holder)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// A lease this host holds on a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    run: RunId,
    revision: u64,
}

impl Lease {
    /// The run.
    pub fn run_id(&self) -> &RunId {
        &self.run
    }
}

impl Leases {
    /// The leases bucket of `prefix` (created with `max_age` = `ttl` when
    /// missing; every host of a cluster must use the same `ttl`), for the
    /// host named `holder`.
    pub async fn open(
        js: &jetstream::Context,
        prefix: &str,
        holder: impl Into<String>,
        ttl: Duration,
    ) -> Result<Self> {
        let names = Names::new(prefix)?;
        let kv = bucket(
            js,
            kv::Config {
                bucket: names.leases_bucket(),
                history: 1,
                max_age: ttl,
                storage: jetstream::stream::StorageType::File,
                ..Default::default()
            },
        )
        .await?;
        Ok(Self {
            kv,
            holder: holder.into(),
            ttl,
        })
    }

    /// The lease's time to live.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn doc(&self) -> Result<Bytes> {
        Ok(Bytes::from(serde_json::to_vec(&LeaseDoc {
            holder: self.holder.clone(),
            renewed_ms: now_ms(),
        })?))
    }

    /// Takes the run's lease: refused with [`JournalError::Leased`] while
    /// another host holds it (renewed within the time to live). A lease
    /// this same holder left (it restarted) is taken back.
    pub async fn acquire(&self, run: &RunId) -> Result<Lease> {
        match self.kv.create(run.as_str(), self.doc()?).await {
            Ok(revision) => Ok(Lease {
                run: run.clone(),
                revision,
            }),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                let entry = self
                    .kv
                    .entry(run.as_str())
                    .await
                    .map_err(|e| nats_err(format!("read lease of {run}"), e))?;
                let Some(entry) = entry else {
                    // Aged out meanwhile: try once more.
                    return Box::pin(self.acquire(run)).await;
                };
                let holder = serde_json::from_slice::<LeaseDoc>(&entry.value)
                    .map(|d| d.holder)
                    .unwrap_or_else(|_| "?".into());
                if holder != self.holder {
                    return Err(JournalError::Leased {
                        run_id: run.to_string(),
                        holder,
                    });
                }
                let revision = self
                    .kv
                    .update(run.as_str(), self.doc()?, entry.revision)
                    .await
                    .map_err(|_| JournalError::Leased {
                        run_id: run.to_string(),
                        holder: "another host".into(),
                    })?;
                Ok(Lease {
                    run: run.clone(),
                    revision,
                })
            }
            Err(e) => Err(nats_err(format!("acquire lease of {run}"), e)),
        }
    }

    /// Renews the lease (compare-and-set on its revision): fails with
    /// [`JournalError::LeaseLost`] when it expired or another host took it.
    pub async fn renew(&self, lease: &mut Lease) -> Result<()> {
        match self
            .kv
            .update(lease.run.as_str(), self.doc()?, lease.revision)
            .await
        {
            Ok(revision) => {
                lease.revision = revision;
                Ok(())
            }
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                Err(JournalError::LeaseLost(lease.run.to_string()))
            }
            Err(e) => Err(nats_err(format!("renew lease of {}", lease.run), e)),
        }
    }

    /// Gives the lease up (only if still ours).
    pub async fn release(&self, lease: Lease) -> Result<()> {
        self.kv
            .purge_expect_revision(lease.run.as_str(), Some(lease.revision))
            .await
            .map_err(|_| JournalError::LeaseLost(lease.run.to_string()))
    }

    /// Who holds the run's lease, if anyone.
    pub async fn holder(&self, run: &RunId) -> Result<Option<String>> {
        let entry = self
            .kv
            .entry(run.as_str())
            .await
            .map_err(|e| nats_err(format!("read lease of {run}"), e))?;
        Ok(entry
            .filter(|e| e.operation == kv::Operation::Put)
            .and_then(|e| serde_json::from_slice::<LeaseDoc>(&e.value).ok())
            .map(|d| d.holder))
    }

    /// Renews `lease` every third of the time to live on a task, until the
    /// keeper is dropped or released, or the lease is lost.
    pub fn keep(&self, lease: Lease) -> LeaseKeeper {
        let (tx, rx) = watch::channel(Some(lease.clone()));
        let leases = self.clone();
        let every = (self.ttl / 3).max(Duration::from_millis(10));
        let task = tokio::spawn(async move {
            let mut lease = lease;
            loop {
                tokio::time::sleep(every).await;
                match leases.renew(&mut lease).await {
                    Ok(()) => {
                        let _ = tx.send(Some(lease.clone()));
                    }
                    Err(JournalError::LeaseLost(_)) => {
                        let _ = tx.send(None);
                        return;
                    }
                    // The server is unreachable: try again next time; the
                    // lease is lost only once another host took it or it
                    // aged out.
                    Err(e) => tracing::warn!(error = %e, "lease renewal failed"),
                }
            }
        });
        LeaseKeeper {
            leases: self.clone(),
            state: rx,
            task,
        }
    }
}

/// A lease renewed in the background; dropping it stops the renewals (the
/// lease then expires after its time to live).
#[derive(Debug)]
pub struct LeaseKeeper {
    leases: Leases,
    state: watch::Receiver<Option<Lease>>,
    task: JoinHandle<()>,
}

impl LeaseKeeper {
    /// Whether the lease was lost (another host may run the run now).
    pub fn is_lost(&self) -> bool {
        self.state.borrow().is_none()
    }

    /// Resolves when the lease is lost.
    pub async fn lost(&mut self) {
        let _ = self.state.wait_for(Option::is_none).await;
    }

    /// A future that resolves when the lease is lost, or when this keeper
    /// is gone (released or dropped): for a task that must stop then
    /// without holding the keeper.
    pub fn lost_signal(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut state = self.state.clone();
        async move {
            let _ = state.wait_for(Option::is_none).await;
        }
    }

    /// Stops renewing and gives the lease up.
    pub async fn release(self) -> Result<()> {
        self.task.abort();
        let lease = self.state.borrow().clone();
        match lease {
            Some(lease) => self.leases.release(lease).await,
            None => Ok(()),
        }
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}
