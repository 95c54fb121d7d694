//! The spans of an ACMP DAG run: the DAG's `invoke_workflow` (named by its
//! `dag_id`), and under it one `acmp_task {task_id}` span per task, opened
//! when the task starts running and ended when it completes, fails or is
//! cancelled (a failure sets the span's status with the ACMP error's name).
//! Nothing is kept when telemetry does not record.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use a2e_telemetry::{OpSpan, Parent, Telemetry};
use acmp_dag::{Event, EventKind, TaskState, TransitionCause};

/// The step kind of a task's span.
const TASK: &str = "acmp_task";

/// The open task spans of one run (shared by the run's event sink).
#[derive(Clone)]
pub(super) struct TaskSpans {
    telemetry: Telemetry,
    workflow: OpSpan,
    open: Arc<Mutex<HashMap<Arc<str>, OpSpan>>>,
}

impl TaskSpans {
    /// The task spans under `workflow`.
    pub(super) fn new(telemetry: Telemetry, workflow: OpSpan) -> Self {
        Self {
            telemetry,
            workflow,
            open: Arc::default(),
        }
    }

    /// The span of running task `task_id`, when it records.
    pub(super) fn span_of(&self, task_id: &str) -> Option<tracing::Span> {
        let open = self.open.lock().ok()?;
        open.get(task_id).map(|s| s.span().clone())
    }

    /// Opens or ends the span of the task `event` is about.
    pub(super) fn on_event(&self, event: &Event) {
        if !self.workflow.is_recording() {
            return;
        }
        let EventKind::Transition {
            task_id, to, cause, ..
        } = &event.kind
        else {
            return;
        };
        let Ok(mut open) = self.open.lock() else {
            return;
        };
        match to {
            TaskState::Running => {
                let span = self
                    .telemetry
                    .step(TASK, task_id)
                    .parent(Parent::Span(self.workflow.span()))
                    .start();
                open.insert(task_id.clone(), span);
            }
            state if state.is_terminal() => {
                let span = open.remove(task_id);
                if let Some(span) = span {
                    match cause {
                        Some(TransitionCause::Failed(e)) => {
                            span.error(e.code().name().unwrap_or("failed"), &e.to_string());
                        }
                        Some(TransitionCause::Cancelled(_)) => span.error("cancelled", ""),
                        None => {}
                    }
                }
            }
            _ => {}
        }
    }
}
