//! What a run produces: per-task ends, the DAG status and its result.

use std::sync::Arc;

use crate::orchestrator::plan::Plan;
use crate::path::EvalError;
use crate::{AcmpError, Dag, ErrorCode, InvokeResult, Payload, TaskState};

/// A reference that does not resolve against the actual upstream output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    /// The `field` path found nothing.
    #[error("field of \"{source_task}\" output: {error}")]
    Path {
        /// The referenced task.
        source_task: String,
        /// Where the path failed.
        error: EvalError,
    },
    /// The referenced task has no output.
    #[error("task \"{source_task}\" has no output")]
    NoOutput {
        /// The referenced task.
        source_task: String,
    },
}

/// Why a task failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaskError {
    /// The provider answered with an `acmp/error`.
    #[error("provider error: {0}")]
    Provider(AcmpError),
    /// The provider panicked.
    #[error("provider panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },
    /// The task ran past its `timeout_ms`.
    #[error("timed out after {timeout_ms} ms")]
    TimedOut {
        /// The deadline.
        timeout_ms: u64,
    },
    /// No provider for the task's capability.
    #[error("no provider for capability \"{capability}\"")]
    NoProvider {
        /// The capability.
        capability: String,
    },
    /// The input reference did not resolve; the task was never invoked.
    #[error("input: {0}")]
    Input(ResolveError),
    /// The provider broke Layer 1 (wrong `task_id`, no output, stream without final chunk).
    #[error("protocol violation: {message}")]
    Protocol {
        /// What was wrong.
        message: String,
    },
}

impl TaskError {
    /// The ACMP error code this failure maps to.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Provider(e) => e.code,
            Self::TimedOut { .. } => ErrorCode::TIMEOUT,
            Self::NoProvider { .. } => ErrorCode::CAPABILITY_NOT_FOUND,
            Self::Panicked { .. } | Self::Input(_) | Self::Protocol { .. } => ErrorCode::INTERNAL,
        }
    }

    /// The failure as an `acmp/error` about `task_id`.
    pub fn to_acmp(&self, task_id: &str) -> AcmpError {
        match self {
            Self::Provider(e) => e.clone(),
            other => AcmpError::new(other.code(), task_id, other.to_string()),
        }
    }
}

/// Why a task was cancelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelReason {
    /// Cancelled by request ([`crate::RunControl::cancel_task`]).
    Requested,
    /// Downstream of a cancelled task.
    UpstreamCancelled {
        /// The task whose cancellation propagated here.
        task_id: Arc<str>,
    },
    /// Downstream of a failed task.
    UpstreamFailed {
        /// The failed task.
        task_id: Arc<str>,
    },
    /// Fail-fast policy: another task failed.
    FailFast {
        /// The failed task.
        failed: Arc<str>,
    },
    /// The whole run was cancelled ([`crate::RunControl::cancel`]).
    RunCancelled,
}

impl CancelReason {
    /// The reason as a wire value: `requested`, `upstream_cancelled`,
    /// `upstream_failed`, `fail_fast` or `run_cancelled`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Requested => "requested",
            Self::UpstreamCancelled { .. } => "upstream_cancelled",
            Self::UpstreamFailed { .. } => "upstream_failed",
            Self::FailFast { .. } => "fail_fast",
            Self::RunCancelled => "run_cancelled",
        }
    }

    /// The task whose end caused this one, when another task's did.
    pub fn cause(&self) -> Option<&str> {
        match self {
            Self::UpstreamCancelled { task_id } | Self::UpstreamFailed { task_id } => Some(task_id),
            Self::FailFast { failed } => Some(failed),
            Self::Requested | Self::RunCancelled => None,
        }
    }
}

impl std::fmt::Display for CancelReason {
    /// For a person: `upstream task "split" failed`, `cancelled by request`, ….
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Requested => f.write_str("cancelled by request"),
            Self::UpstreamCancelled { task_id } => {
                write!(f, "upstream task \"{task_id}\" was cancelled")
            }
            Self::UpstreamFailed { task_id } => write!(f, "upstream task \"{task_id}\" failed"),
            Self::FailFast { failed } => write!(f, "task \"{failed}\" failed (fail fast)"),
            Self::RunCancelled => f.write_str("the run was cancelled"),
        }
    }
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEnd {
    /// Completed. `output` is always present: a streamed output is assembled from its
    /// chunks (and `output_streamed` stays true).
    Completed(InvokeResult),
    /// Failed.
    Failed(TaskError),
    /// Cancelled.
    Cancelled(CancelReason),
}

/// One task's end.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOutcome {
    /// The task.
    pub task_id: Arc<str>,
    /// How it ended.
    pub end: TaskEnd,
}

impl TaskOutcome {
    /// The terminal state.
    pub fn state(&self) -> TaskState {
        match self.end {
            TaskEnd::Completed(_) => TaskState::Completed,
            TaskEnd::Failed(_) => TaskState::Failed,
            TaskEnd::Cancelled(_) => TaskState::Cancelled,
        }
    }

    /// The result, if completed.
    pub fn result(&self) -> Option<&InvokeResult> {
        match &self.end {
            TaskEnd::Completed(r) => Some(r),
            _ => None,
        }
    }

    /// The output, if completed.
    pub fn output(&self) -> Option<&Payload> {
        self.result().and_then(|r| r.output.as_ref())
    }

    /// The error, if failed.
    pub fn error(&self) -> Option<&TaskError> {
        match &self.end {
            TaskEnd::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// The reason, if cancelled.
    pub fn cancel_reason(&self) -> Option<&CancelReason> {
        match &self.end {
            TaskEnd::Cancelled(r) => Some(r),
            _ => None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DagStatus {
    /// Every task completed.
    Completed,
    /// At least one task failed.
    Failed,
    /// No task failed, and at least one was cancelled.
    Cancelled,
}

/// The end of a run.
#[derive(Debug, Clone)]
pub struct DagOutcome {
    /// How the run ended.
    pub status: DagStatus,
    /// Every task's end, in declaration order.
    pub tasks: Vec<TaskOutcome>,
    pub(crate) plan: Arc<Plan>,
}

impl DagOutcome {
    /// The DAG that ran.
    pub fn dag(&self) -> &Dag {
        self.plan.dag.dag()
    }

    /// One task's end.
    pub fn task(&self, task_id: &str) -> Option<&TaskOutcome> {
        self.plan
            .dag
            .task_index(task_id)
            .and_then(|i| self.tasks.get(i))
    }

    /// One task's terminal state.
    pub fn state(&self, task_id: &str) -> Option<TaskState> {
        self.task(task_id).map(TaskOutcome::state)
    }

    /// One task's output, if it completed.
    pub fn output(&self, task_id: &str) -> Option<&Payload> {
        self.task(task_id).and_then(TaskOutcome::output)
    }

    /// The DAG's result: the outputs of the leaf tasks, in declaration order (a leaf that
    /// did not complete is absent).
    pub fn result(&self) -> Vec<(&str, &Payload)> {
        self.tasks
            .iter()
            .enumerate()
            .filter(|&(i, _)| self.plan.dag.outs(i as u32).is_empty())
            .filter_map(|(_, t)| t.output().map(|o| (&*t.task_id, o)))
            .collect()
    }

    /// Sum of `cost_cu` over completed tasks.
    pub fn total_cost_cu(&self) -> f64 {
        self.tasks
            .iter()
            .filter_map(TaskOutcome::result)
            .map(|r| r.cost_cu)
            .sum()
    }
}
