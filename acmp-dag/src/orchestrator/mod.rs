//! The buyer-side orchestrator: walks a validated DAG, invoking each task through the
//! provider its router picks, the moment the task's inputs are resolved.

pub(crate) mod durable;
mod ends;
mod invoke;
pub(crate) mod msg;
pub(crate) mod outcome;
pub(crate) mod plan;
mod resolve;
mod run;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use self::durable::DagRunOptions;
use self::msg::Msg;
use self::outcome::DagOutcome;
use self::plan::Plan;
use self::run::RunLoop;
use crate::events::DagEventSink;
use crate::{Dag, Router, ValidatedDag, ValidationLimits, ValidationReport};

/// What happens to the rest of the DAG when a task fails. Either way the failed task's
/// dependents are cancelled and completed results stay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Cancel every task that is not terminal yet.
    FailFast,
    /// Let independent branches go on.
    #[default]
    BestEffort,
}

/// Orchestrator settings.
#[derive(Debug, Clone)]
pub struct OrchestratorConfig {
    /// Fail-fast or best-effort; best-effort by default.
    pub failure_policy: FailurePolicy,
    /// Limits applied by [`Orchestrator::run`] and [`Orchestrator::validate`].
    pub limits: ValidationLimits,
    /// Deadline of tasks that set no `timeout_ms`; Layer 1's 30 s by default, `None` for
    /// none.
    pub default_timeout: Option<Duration>,
    /// After every task is terminal, how long to wait for the providers of cancelled or
    /// timed-out tasks to return before aborting them; 2 s by default.
    pub cancel_grace: Duration,
}

impl Default for OrchestratorConfig {
    fn default() -> Self {
        Self {
            failure_policy: FailurePolicy::default(),
            limits: ValidationLimits::default(),
            default_timeout: Some(Duration::from_millis(crate::layer1::DEFAULT_TIMEOUT_MS)),
            cancel_grace: Duration::from_secs(2),
        }
    }
}

/// Runs DAGs over the providers its [`Router`] picks.
#[derive(Clone)]
pub struct Orchestrator {
    router: Arc<dyn Router>,
    config: OrchestratorConfig,
    events: Option<Arc<dyn DagEventSink>>,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("config", &self.config)
            .field("events", &self.events.is_some())
            .finish_non_exhaustive()
    }
}

impl Orchestrator {
    /// An orchestrator with the default configuration.
    pub fn new(router: impl Router) -> Self {
        Self {
            router: Arc::new(router),
            config: OrchestratorConfig::default(),
            events: None,
        }
    }

    /// Replaces the configuration.
    #[must_use]
    pub fn with_config(mut self, config: OrchestratorConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets the failure policy.
    #[must_use]
    pub fn with_failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.config.failure_policy = policy;
        self
    }

    /// Receives every event of every run.
    #[must_use]
    pub fn with_event_sink(mut self, sink: impl DagEventSink) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// The configuration.
    pub fn config(&self) -> &OrchestratorConfig {
        &self.config
    }

    /// Validates a DAG with the configured limits.
    pub fn validate(&self, dag: Dag) -> Result<ValidatedDag, ValidationReport> {
        ValidatedDag::new(dag, &self.config.limits)
    }

    /// Validates and runs a DAG to its end, in the calling task.
    pub async fn run(&self, dag: Dag) -> Result<DagOutcome, ValidationReport> {
        let dag = self.validate(dag)?;
        Ok(self.execute(dag).await)
    }

    /// Runs a validated DAG to its end, in the calling task: invocations are futures polled
    /// by this one. Needs a tokio runtime with the time driver (deadlines). Dropping the
    /// future cancels the run.
    pub async fn execute(&self, dag: ValidatedDag) -> DagOutcome {
        self.execute_with(dag, DagRunOptions::default()).await
    }

    /// Runs a validated DAG durably, in the calling task: resumed from what
    /// an earlier run of it finished, its provider calls observed (see
    /// [`DagRunOptions`]).
    pub async fn execute_with(&self, dag: ValidatedDag, options: DagRunOptions) -> DagOutcome {
        let (run, _control) = self.prepare(dag, options);
        run.run().await
    }

    /// Starts a validated DAG in a task of its own, returning a handle to cancel tasks and
    /// await the outcome. Must be called within a tokio runtime (it spawns the run).
    pub fn start(&self, dag: ValidatedDag) -> DagRun {
        self.start_with(dag, DagRunOptions::default())
    }

    /// [`Orchestrator::start`] for a durable run (see [`DagRunOptions`]).
    pub fn start_with(&self, dag: ValidatedDag, options: DagRunOptions) -> DagRun {
        let (run, control) = self.prepare(dag, options);
        DagRun {
            control,
            handle: Some(tokio::spawn(run.run())),
        }
    }

    fn prepare(&self, dag: ValidatedDag, options: DagRunOptions) -> (RunLoop, RunControl) {
        let plan = Arc::new(Plan::new(dag, &*self.router, options.observer.is_some()));
        let (tx, rx) = mpsc::unbounded_channel();
        let control = RunControl {
            tx: tx.clone(),
            plan: Arc::clone(&plan),
        };
        let run = RunLoop::new(plan, &self.config, self.events.clone(), tx, rx, options);
        (run, control)
    }
}

/// The task is not in the DAG.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown task \"{0}\"")]
pub struct UnknownTask(pub String);

/// The run's task ended without an outcome (it panicked or was aborted).
#[derive(Debug, thiserror::Error)]
#[error("the run ended without an outcome: {0}")]
pub struct RunError(String);

/// Cancels tasks of a running DAG; cheap to clone.
#[derive(Debug, Clone)]
pub struct RunControl {
    tx: mpsc::UnboundedSender<Msg>,
    plan: Arc<Plan>,
}

impl RunControl {
    /// Cancels a task and, breadth first, every task downstream of it; in-flight providers
    /// see their token fire. A task already terminal is left as it is (completed upstream
    /// results stay). No effect once the run has ended.
    pub fn cancel_task(&self, task_id: &str) -> Result<(), UnknownTask> {
        let idx = self
            .plan
            .dag
            .task_index(task_id)
            .ok_or_else(|| UnknownTask(task_id.to_owned()))?;
        let _ = self.tx.send(Msg::Cancel { idx: idx as u32 });
        Ok(())
    }

    /// Cancels every task that is not terminal.
    pub fn cancel(&self) {
        let _ = self.tx.send(Msg::CancelAll);
    }
}

/// A DAG running in its own task. Dropping it cancels the run.
#[derive(Debug)]
pub struct DagRun {
    control: RunControl,
    handle: Option<JoinHandle<DagOutcome>>,
}

impl DagRun {
    /// A handle to cancel tasks.
    pub fn control(&self) -> RunControl {
        self.control.clone()
    }

    /// See [`RunControl::cancel_task`].
    pub fn cancel_task(&self, task_id: &str) -> Result<(), UnknownTask> {
        self.control.cancel_task(task_id)
    }

    /// See [`RunControl::cancel`].
    pub fn cancel(&self) {
        self.control.cancel();
    }

    /// Waits for the end of the run.
    pub async fn outcome(mut self) -> Result<DagOutcome, RunError> {
        // `handle` is only taken here and in `drop`.
        let handle = self
            .handle
            .take()
            .ok_or_else(|| RunError("already awaited".to_owned()))?;
        handle.await.map_err(|e| RunError(e.to_string()))
    }
}

impl Drop for DagRun {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abort();
        }
    }
}
