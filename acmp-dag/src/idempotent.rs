//! A provider wrapper that never runs a `task_id` twice (Layer 1 idempotency).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{AcmpError, Invocation, InvokeResult, Provider, ProviderFeatures};

type Outcome = Result<InvokeResult, AcmpError>;

enum Slot {
    Running {
        done: watch::Receiver<Option<Outcome>>,
        cancel: CancellationToken,
    },
    Done(Box<Outcome>),
}

/// Wraps a provider so that a `task_id` runs at most once: a duplicate invoke gets the stored
/// outcome (result or error) if the first has finished, or joins the running one and gets its
/// outcome when it ends.
///
/// A cancel on a joined duplicate cancels the one run (`acmp/cancel` names the task, not the
/// request). A duplicate receives neither the output stream nor heartbeats: only the
/// outcome. Outcomes are kept until [`Idempotent::forget`]; retrying a task needs a new
/// `task_id`.
pub struct Idempotent<P> {
    inner: P,
    slots: Mutex<HashMap<String, Slot>>,
}

impl<P> std::fmt::Debug for Idempotent<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idempotent")
            .field("tasks", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl<P> Idempotent<P> {
    /// Wraps `inner`.
    pub fn new(inner: P) -> Self {
        Self {
            inner,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Number of task ids seen (running or finished).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no task id was seen.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The stored outcome of a finished task.
    pub fn outcome(&self, task_id: &str) -> Option<Result<InvokeResult, AcmpError>> {
        match self.lock().get(task_id) {
            Some(Slot::Done(outcome)) => Some((**outcome).clone()),
            _ => None,
        }
    }

    /// Drops the stored outcome of a finished task; returns whether there was one.
    pub fn forget(&self, task_id: &str) -> bool {
        let mut slots = self.lock();
        if matches!(slots.get(task_id), Some(Slot::Done(_))) {
            slots.remove(task_id);
            true
        } else {
            false
        }
    }
}

/// Publishes the outcome of the one run, also when its future is dropped or panics.
struct Publish<'a, P> {
    owner: &'a Idempotent<P>,
    task_id: String,
    tx: Option<watch::Sender<Option<Outcome>>>,
}

impl<P> Publish<'_, P> {
    fn publish(&mut self, outcome: Outcome) {
        if let Some(tx) = self.tx.take() {
            self.owner
                .lock()
                .insert(self.task_id.clone(), Slot::Done(Box::new(outcome.clone())));
            tx.send_replace(Some(outcome));
        }
    }
}

impl<P> Drop for Publish<'_, P> {
    fn drop(&mut self) {
        let outcome = if std::thread::panicking() {
            AcmpError::internal(self.task_id.clone(), "provider panicked")
        } else {
            AcmpError::cancelled(self.task_id.clone())
        };
        self.publish(Err(outcome));
    }
}

async fn joined(task_id: &str, done: &mut watch::Receiver<Option<Outcome>>) -> Outcome {
    match done.wait_for(Option::is_some).await {
        Ok(outcome) => outcome
            .clone()
            .unwrap_or_else(|| Err(AcmpError::internal(task_id, "no outcome"))),
        Err(_) => Err(AcmpError::internal(
            task_id,
            "the running invocation vanished",
        )),
    }
}

enum Role {
    Run(watch::Sender<Option<Outcome>>),
    Join(watch::Receiver<Option<Outcome>>, CancellationToken),
    Done(Box<Outcome>),
}

impl<P: Provider> Provider for Idempotent<P> {
    fn features(&self) -> ProviderFeatures {
        self.inner.features()
    }

    async fn invoke(&self, mut invocation: Invocation) -> Result<InvokeResult, AcmpError> {
        let task_id = invocation.params.task_id.clone();
        let role = {
            let mut slots = self.lock();
            match slots.get(&task_id) {
                Some(Slot::Done(outcome)) => Role::Done(outcome.clone()),
                Some(Slot::Running { done, cancel }) => Role::Join(done.clone(), cancel.clone()),
                None => {
                    let (tx, done) = watch::channel(None);
                    let cancel = invocation.cancel.child_token();
                    invocation.cancel = cancel.clone();
                    slots.insert(task_id.clone(), Slot::Running { done, cancel });
                    Role::Run(tx)
                }
            }
        };
        match role {
            Role::Done(outcome) => *outcome,
            Role::Join(mut done, run_cancel) => {
                let early = tokio::select! {
                    outcome = joined(&task_id, &mut done) => Some(outcome),
                    () = invocation.cancel.cancelled() => None,
                };
                match early {
                    Some(outcome) => outcome,
                    None => {
                        run_cancel.cancel();
                        joined(&task_id, &mut done).await
                    }
                }
            }
            Role::Run(tx) => {
                let mut publish = Publish {
                    owner: self,
                    task_id,
                    tx: Some(tx),
                };
                let outcome = self.inner.invoke(invocation).await;
                publish.publish(outcome.clone());
                outcome
            }
        }
    }
}
