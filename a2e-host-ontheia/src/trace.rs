//! The spans of an Ontheia run: the document's `invoke_workflow`, and under
//! it one `{step type} {step id}` span per step, opened at the step's `start`
//! event and ended at its `done`, `skip` or `error` (an error sets the span's
//! status). Nothing is kept when telemetry does not record.

use std::collections::HashMap;

use a2e_telemetry::{OpSpan, Parent, Telemetry};

/// The error code on a failed step's span.
const STEP_ERROR: &str = "step_error";

/// The open step spans of one run.
pub(super) struct StepSpans {
    telemetry: Telemetry,
    workflow: OpSpan,
    session_id: String,
    /// By agent depth and step id (a delegated agent's chain may reuse ids).
    open: HashMap<(usize, String), OpSpan>,
}

impl StepSpans {
    /// The step spans under `workflow` (none when it does not record).
    pub(super) fn new(telemetry: Telemetry, workflow: OpSpan, session_id: &str) -> Self {
        Self {
            telemetry,
            workflow,
            session_id: session_id.to_owned(),
            open: HashMap::new(),
        }
    }

    /// Opens or ends the span of the step `event` is about.
    pub(super) fn on_event(&mut self, event: &ontheia::Event<'_>) {
        if !self.workflow.is_recording() {
            return;
        }
        let key = (event.depth, event.step_id.to_owned());
        match event.kind {
            ontheia::EventKind::Start => {
                let span = self
                    .telemetry
                    .step(event.step_type.as_str(), event.step_id)
                    .session(&self.session_id)
                    .parent(Parent::Span(self.workflow.span()))
                    .start();
                self.open.insert(key, span);
            }
            ontheia::EventKind::Error => {
                if let Some(span) = self.open.remove(&key) {
                    span.error(STEP_ERROR, event.error.unwrap_or_default());
                }
            }
            ontheia::EventKind::Done | ontheia::EventKind::Skip => {
                self.open.remove(&key);
            }
            ontheia::EventKind::Message => {}
        }
    }
}
