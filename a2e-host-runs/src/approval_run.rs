//! A call outside any run that waited for a person's decision
//! ([`RunKind::Approval`]) when its host stopped: its caller went with the
//! host, so the run ends as failed, its decision (if any) kept in its
//! records.

use std::sync::Arc;

use a2e_journal::{Journal, RunState, RunStatus};
use serde_json::json;

use crate::cluster::Coordination;

/// Ends `state`, an approval run its host left unfinished.
pub(crate) async fn end_orphan(
    journal: Arc<dyn Journal>,
    state: RunState,
    coordination: Option<Coordination>,
) {
    let run = state.summary.run_id.clone();
    let answer = json!({"error": {
        "code": a2e_journal::INTERRUPTED,
        "message": "the host that held this call stopped while it waited for approval; \
                    its caller is gone, so the call was not run",
    }});
    if let Err(e) = journal.finish_run(&run, RunStatus::Failed, &answer).await {
        tracing::error!(run = %run, "approval run: not ended: {e}");
    }
    if let Some(coordination) = coordination {
        coordination.release().await;
    }
}
