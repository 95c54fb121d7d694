//! A tool call an MCP client asked to run as a task (the
//! `io.modelcontextprotocol/tasks` extension) is a run of kind `mcp_task`:
//! journaled before the client hears of it, its answer journaled when it
//! ends, so that any process with the journal answers `tasks/get` — the host
//! that ran it after it restarted, another host of the cluster — and
//! `a2e runs` lists it.
//!
//! - The run's request is `{"tool", "arguments"}` (the MCP name called and
//!   its arguments); its answer is the call's MCP result (`{"result":
//!   CallToolResult}`: the tool ran, with or without an error of its own),
//!   or the protocol error it ended with (`{"error": {"code", "message"}}`),
//!   or, when cancelled, `{"cancelled": true}`.
//! - A cancel journaled for the run (`tasks/cancel` on any host, `a2e runs
//!   cancel`) fires the run's token on the host that runs it.
//! - A tool call cannot be resumed: a run a host left unfinished (it was
//!   killed) ends as failed with [`ORPHANED`] when the host starts again, or,
//!   in a cluster, when another host takes the run over after its lease
//!   expired.

use std::sync::Arc;

use a2e_journal::{Journal, JournalError, NewRun, RunId, RunKind, RunState, RunStatus};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::cluster::Coordination;
use super::watch_cancel;
use crate::host::Host;

/// The message of a task whose host stopped before it ended.
pub const ORPHANED: &str = "the host running the task stopped before the task ended";

/// The JSON-RPC code of an internal error, which a task that failed at the
/// protocol level carries.
pub const INTERNAL_ERROR: i64 = -32603;

/// One task's run, while it runs on this host.
pub struct TaskRun {
    journal: Arc<dyn Journal>,
    run: RunId,
    cancel: CancellationToken,
    done: CancellationToken,
    coordination: Option<Coordination>,
}

impl std::fmt::Debug for TaskRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRun").field("run", &self.run).finish()
    }
}

/// Journals a new task of agent `agent` calling `tool` with `arguments`:
/// the run exists (and `tasks/get` finds it) once this returns. In a
/// cluster this host holds the run's lease while it runs. `None` when the
/// host journals no runs.
pub async fn begin(
    host: &Host,
    agent: &str,
    tool: &str,
    arguments: &Value,
) -> Result<Option<TaskRun>, JournalError> {
    let Some(journal) = host.journal().cloned() else {
        return Ok(None);
    };
    let run = RunId::generate();
    let coordination = match host.cluster() {
        Some(cluster) => Some(Coordination::acquire(&cluster, &run).await?),
        None => None,
    };
    journal
        .create_run(NewRun {
            run_id: run.clone(),
            kind: RunKind::McpTask,
            agent: agent.to_owned(),
            request: json!({"tool": tool, "arguments": arguments}),
        })
        .await?;
    let cancel = CancellationToken::new();
    let done = CancellationToken::new();
    watch_cancel(journal.clone(), run.clone(), cancel.clone(), done.clone());
    Ok(Some(TaskRun {
        journal,
        run,
        cancel,
        done,
        coordination,
    }))
}

impl TaskRun {
    /// The run's id: the task's.
    pub fn run_id(&self) -> &RunId {
        &self.run
    }

    /// Fires when a cancel of the task is journaled (from any process).
    pub fn cancelled(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// The task ended: its status and answer (see the module docs) are
    /// journaled, the lease given up.
    pub async fn finish(self, status: RunStatus, answer: Value) {
        if let Err(e) = self.journal.finish_run(&self.run, status, &answer).await {
            tracing::error!(run = %self.run, "task run: the answer was not journaled: {e}");
        }
        self.done.cancel();
        if let Some(coordination) = self.coordination {
            coordination.release().await;
        }
    }
}

/// Ends a task run that a host left unfinished (see the module docs).
pub(crate) async fn end_orphan(
    journal: Arc<dyn Journal>,
    state: RunState,
    coordination: Option<Coordination>,
) {
    let run = state.summary.run_id;
    let (status, answer) = if state.summary.cancel_requested {
        (RunStatus::Cancelled, json!({"cancelled": true}))
    } else {
        let error = json!({"code": INTERNAL_ERROR, "message": ORPHANED});
        (RunStatus::Failed, json!({"error": error}))
    };
    if let Err(e) = journal.finish_run(&run, status, &answer).await {
        tracing::error!(run = %run, "task run: not ended: {e}");
    }
    if let Some(coordination) = coordination {
        coordination.release().await;
    }
}
