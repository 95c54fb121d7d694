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
//!   expired — unless a durable run of its own backs the task: a skill
//!   whose engine journals its run (an LLM skill, an Ontheia document) names
//!   that run in the task's (node `run`, its start input `{"run_id"}`,
//!   through the [`TaskLink`] in the call's extensions). That run resumes as
//!   every durable skill run does, and the task follows it: it ends when the
//!   backing run ends, its answer `{"run_answer": chain/resp}` (the skill's
//!   `chain/resp`), and a cancel of the task is a cancel of the backing run.

use std::sync::Arc;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use a2e_journal::{
    Journal, JournalError, NewRun, NodeKey, NodeStart, RunId, RunKind, RunState, RunStatus,
};
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

/// The node of a task's run that names the durable run backing it.
const BACKING_NODE: &str = "run";

/// How often a task whose host stopped looks at the run that backs it.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

/// How long a task whose host stopped follows its backing run at most (as
/// long as a client is told a task stays readable): then it fails, as a task
/// without one does.
const FOLLOW_LIMIT: Duration = Duration::from_secs(3600);

/// What a task's call carries in its extensions so that the durable run of
/// the skill the task calls becomes the task's backing run (see the module
/// docs). A durable run of another skill the call reaches (a chain skill's
/// LLM skill node) does not, nor a second one: the first run of the task's
/// own skill is named.
#[derive(Clone)]
pub struct TaskLink {
    journal: Arc<dyn Journal>,
    task: RunId,
    skill: Arc<str>,
    named: Arc<AtomicBool>,
}

impl std::fmt::Debug for TaskLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskLink")
            .field("task", &self.task)
            .finish()
    }
}

impl TaskLink {
    /// Names `run`, a durable run of `skill`, as the task's backing run
    /// (awaited: journaled before the run's engine starts), when `skill` is
    /// the task's and no run was named yet.
    pub async fn backed_by(&self, skill: &str, run: &RunId) {
        if skill != &*self.skill || self.named.swap(true, Ordering::SeqCst) {
            return;
        }
        let start = NodeStart {
            input: Some(json!({"run_id": run.to_string()})),
            ..NodeStart::default()
        };
        let key = NodeKey::new(self.task.clone(), BACKING_NODE, 1);
        let journaled = match key {
            Ok(key) => self.journal.node_started_with(&key, &start).await,
            Err(e) => Err(e),
        };
        if let Err(e) = journaled {
            tracing::warn!(task = %self.task, run = %run, "task run: its backing run not named: {e}");
        }
    }
}

/// The durable run that backs task `state`, if its call named one.
pub fn backing_run(state: &RunState) -> Option<RunId> {
    let record = state.latest(BACKING_NODE)?;
    let id = record
        .start
        .as_ref()?
        .input
        .as_ref()?
        .get("run_id")?
        .as_str()?;
    RunId::parse(id).ok()
}

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
    let request = json!({"tool": tool, "arguments": arguments});
    begin_as(host, RunKind::McpTask, agent, request).await
}

/// As [`begin`], for a task of another protocol: a run of `kind` with
/// `request` (an A2A task is a run of kind `a2a_task`, docs/a2a.md); it
/// ends as a task run does, its host's death included.
pub async fn begin_as(
    host: &Host,
    kind: RunKind,
    agent: &str,
    request: Value,
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
            kind,
            agent: agent.to_owned(),
            request,
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

    /// What the task's call of `skill` carries so that the skill's durable
    /// run backs the task.
    pub fn link(&self, skill: &str) -> TaskLink {
        TaskLink {
            journal: self.journal.clone(),
            task: self.run.clone(),
            skill: Arc::from(skill),
            named: Arc::default(),
        }
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

/// Ends a task run that a host left unfinished (see the module docs): as
/// its backing run ends, when one backs it (for at most [`FOLLOW_LIMIT`]),
/// else at once, failed. Left running when `stop` fires or, in a cluster,
/// the task's lease is lost: another execution ends it then.
pub(crate) async fn end_orphan(
    journal: Arc<dyn Journal>,
    state: RunState,
    coordination: Option<Coordination>,
    stop: CancellationToken,
) {
    let run = state.summary.run_id.clone();
    let backing = backing_run(&state);
    let orphaned = || {
        let error = json!({"code": INTERNAL_ERROR, "message": ORPHANED});
        (RunStatus::Failed, json!({"error": error}))
    };
    let (status, answer) = match backing {
        Some(backing) if !state.summary.cancel_requested => {
            let lost = match &coordination {
                Some(c) => c.lost_signal(),
                None => Box::pin(futures::future::pending()),
            };
            let followed = tokio::time::timeout(FOLLOW_LIMIT, follow(&*journal, &run, &backing));
            tokio::select! {
                () = stop.cancelled() => return,
                () = lost => return,
                ended = followed => ended.unwrap_or_else(|_| orphaned()),
            }
        }
        _ if state.summary.cancel_requested => {
            if let Some(backing) = &backing
                && let Err(e) = journal.request_cancel(backing).await
            {
                tracing::warn!(run = %backing, "task run: cancel not passed on: {e}");
            }
            (RunStatus::Cancelled, json!({"cancelled": true}))
        }
        _ => orphaned(),
    };
    if let Err(e) = journal.finish_run(&run, status, &answer).await {
        tracing::error!(run = %run, "task run: not ended: {e}");
    }
    if let Some(coordination) = coordination {
        coordination.release().await;
    }
}

/// Waits for `backing` to end (it resumes as durable skill runs do): the
/// task's status and answer then. A cancel journaled for the task meanwhile
/// is passed on to the backing run.
async fn follow(journal: &dyn Journal, task: &RunId, backing: &RunId) -> (RunStatus, Value) {
    let mut passed_on = false;
    loop {
        match journal.show_run(backing).await {
            Ok(Some(state)) if state.summary.status != RunStatus::Running => {
                let answer = state.answer.unwrap_or(Value::Null);
                return (state.summary.status, json!({"run_answer": answer}));
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                let error = json!({"code": INTERNAL_ERROR, "message": ORPHANED});
                return (RunStatus::Failed, json!({"error": error}));
            }
            Err(e) => tracing::warn!(run = %backing, "task run: its backing run unread: {e}"),
        }
        if !passed_on && journal.cancel_requested(task).await.unwrap_or(false) {
            passed_on = true;
            if let Err(e) = journal.request_cancel(backing).await {
                tracing::warn!(run = %backing, "task run: cancel not passed on: {e}");
            }
        }
        tokio::time::sleep(FOLLOW_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2e_journal::{SqliteJournal, SqliteOptions};

    #[tokio::test]
    async fn the_tasks_own_skill_names_its_backing_run_once_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let journal: Arc<dyn Journal> = Arc::new(
            SqliteJournal::open_in(dir.path(), SqliteOptions::default())
                .await
                .unwrap(),
        );
        let task = RunId::generate();
        journal
            .create_run(NewRun {
                run_id: task.clone(),
                kind: RunKind::McpTask,
                agent: "mcp".into(),
                request: json!({"tool": "skill__outer", "arguments": {}}),
            })
            .await
            .unwrap();
        let link = TaskLink {
            journal: journal.clone(),
            task: task.clone(),
            skill: Arc::from("outer"),
            named: Arc::default(),
        };
        let (nested, own, again) = (RunId::generate(), RunId::generate(), RunId::generate());
        // A durable run of another skill the call reaches comes first: not it.
        link.backed_by("inner", &nested).await;
        link.backed_by("outer", &own).await;
        link.backed_by("outer", &again).await;
        let state = journal.show_run(&task).await.unwrap().unwrap();
        assert_eq!(backing_run(&state), Some(own));
    }
}
