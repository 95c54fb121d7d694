//! MCP tasks (the `io.modelcontextprotocol/tasks` extension) as the host's
//! durable runs: a `tools/call` that becomes a task is a run of kind
//! `mcp_task` (`a2e_host_runs::task_run`), journaled before the client gets
//! its id; `tasks/get` reads the journal (so the host answers it after a
//! restart, and any host of a cluster answers it), `tasks/cancel` journals
//! a cancel (which the host running the task sees) and fires the task here
//! when it runs here.
//!
//! Which calls run as tasks: a tool or a skill whose definition carries the
//! tag `task` (a task when the client declared the extension, a plain call
//! otherwise) or `task:required` (only as a task: a client that did not
//! declare the extension is refused with -32021); with `task:gather` as well,
//! a 2026-07-28 client's call asks its questions in `input_required` rounds
//! first and becomes a task on the round that brings the answers (MRTR
//! composed with tasks, SEP-2663). Served when the host has a run journal.
//!
//! A task's state from its run: running → `working`; an answer holding the
//! MCP result of the call → `completed` with it inlined (the tool ran,
//! whether it succeeded or reported an error of its own: `isError`); an
//! answer holding an error → `failed` with it (the call panicked, or its
//! host stopped before it ended); cancelled → `cancelled`. A session's client
//! (2025-11-25, the extension declared at `initialize`) is told each change
//! (`notifications/tasks`); a 2026-07-28 client polls.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use a2e_host_runs::task_run::{self, INTERNAL_ERROR};
use a2e_journal::{RunId, RunKind, RunStatus};
use a2e_mcp::rmcp::model::{
    DetailedTask, ErrorData, InputResponses, JsonObject, Task, TaskPayload, TaskStatus,
};
use a2e_mcp::server::{ClientLink, TaskInbox, unknown_task};
use a2e_proto::{ErrorCode, ToolResult};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::host::Host;
use crate::task_questions::{Mirror, WATCH_EVERY, answer_here, answer_in, open_in};

/// How long a task stays readable after it was created: the journal keeps
/// finished runs for days (`[journal] keep_days`); a client is told an hour.
pub const TASK_TTL_MS: u64 = 3_600_000;

/// How long a status notification may take to reach its client.
const NOTIFY_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How often a client is asked to poll `tasks/get`.
pub const POLL_INTERVAL_MS: u64 = 500;

/// The tag of a tool that runs as a task when the client takes tasks.
pub const TASK_TAG: &str = "task";

/// The tag of a tool that runs only as a task.
pub const TASK_REQUIRED_TAG: &str = "task:required";

/// The tag of a task tool that asks for its input before its work: a
/// 2026-07-28 client's call gathers the answers in `input_required` rounds,
/// and the round that brings them starts the task, which finds them.
pub const TASK_GATHER_TAG: &str = "task:gather";

/// One task running on this host: what fires it, where its questions wait.
#[derive(Debug)]
struct Running {
    cancel: CancellationToken,
    inbox: Option<Arc<TaskInbox>>,
}

/// The tasks running on this host, by id: what `tasks/cancel` fires at once
/// (a cancel journaled elsewhere reaches them through the journal) and
/// where `tasks/update` puts its answers.
#[derive(Debug, Default)]
pub struct Tasks {
    running: Mutex<HashMap<String, Running>>,
}

impl Tasks {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A task started here.
    pub(crate) fn started(
        &self,
        id: &str,
        cancel: CancellationToken,
        inbox: Option<Arc<TaskInbox>>,
    ) {
        self.running()
            .insert(id.to_owned(), Running { cancel, inbox });
    }

    /// A task started here ended.
    pub(crate) fn ended(&self, id: &str) {
        self.running().remove(id);
    }

    /// Fires the task `id` when it runs here.
    fn cancel_here(&self, id: &str) {
        if let Some(task) = self.running().get(id) {
            task.cancel.cancel();
        }
    }

    /// The questions task `id` waits on, when it runs here.
    fn inbox(&self, id: &str) -> Option<Arc<TaskInbox>> {
        self.running().get(id).and_then(|t| t.inbox.clone())
    }
}

/// `ms` since the Unix epoch as an ISO 8601 time (UTC, milliseconds).
fn iso8601(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The base state of a task created at `created_ms`, last changed at `updated_ms`.
pub(crate) fn task(id: &str, status: TaskStatus, created_ms: u64, updated_ms: u64) -> Task {
    Task::new(id, status, iso8601(created_ms), iso8601(updated_ms))
        .with_ttl_ms(TASK_TTL_MS)
        .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// Milliseconds since the Unix epoch now.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How a task's call ended, as its run's status and answer (see the module
/// docs): `result` is the call's MCP result.
pub(crate) fn outcome(
    result: &ToolResult,
    mcp_result: Value,
    cancelled: bool,
) -> (RunStatus, Value) {
    if cancelled || result.error_code == Some(ErrorCode::CANCELLED) {
        return (RunStatus::Cancelled, json!({"cancelled": true}));
    }
    if result.success {
        return (RunStatus::Succeeded, json!({"result": mcp_result}));
    }
    // The host's call pipeline names a call that panicked so (`calls::caught`).
    let message = result.error.clone().unwrap_or_default();
    if message.contains(" panicked: ") {
        let error = json!({"code": INTERNAL_ERROR, "message": message});
        return (RunStatus::Failed, json!({"error": error}));
    }
    (RunStatus::Failed, json!({"result": mcp_result}))
}

/// The call's result from the `chain/resp` its backing skill run ended with
/// (a task whose host stopped, followed to the end of its backing run): the
/// skill's `{data, summary}`, or its error, as the call would have answered.
fn from_run_answer(tool: &str, resp: &Value) -> ToolResult {
    let output = |field: &str| {
        resp.get("final_output")
            .and_then(|o| o.get(field))
            .cloned()
            .unwrap_or(Value::Null)
    };
    if resp.get("success").and_then(Value::as_bool) == Some(true) {
        let mut result = ToolResult::ok(tool, output("data"));
        result.summary = output("summary");
        return result;
    }
    let error = resp.get("error");
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(|c| serde_json::from_value::<ErrorCode>(c.clone()).ok())
        .unwrap_or(ErrorCode::TOOL_ERROR);
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("the skill's run failed");
    ToolResult::failed(tool, code, message)
}

/// The run of task `id`: `-32602` when there is none (or it is no task).
async fn task_run(host: &Host, id: &str) -> Result<a2e_journal::RunState, ErrorData> {
    let journal = host.journal().ok_or_else(|| unknown_task(id))?;
    let run = RunId::parse(id).map_err(|_| unknown_task(id))?;
    let state = journal
        .show_run(&run)
        .await
        .map_err(|e| ErrorData::internal_error(format!("run journal: {e}"), None))?;
    state
        .filter(|s| s.summary.kind == RunKind::McpTask)
        .ok_or_else(|| unknown_task(id))
}

fn object(value: Option<&Value>) -> JsonObject {
    value
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `tasks/get` of task `id` on `host`: `input_required` with the open
/// questions while a task running here waits on them.
pub(crate) async fn get(host: &Host, tasks: &Tasks, id: &str) -> Result<DetailedTask, ErrorData> {
    let state = task_run(host, id).await?;
    let summary = &state.summary;
    let updated = summary.finished_ms.unwrap_or(summary.created_ms);
    let answer = state.answer.as_ref();
    // Running here: the inbox; elsewhere: the questions its run holds.
    let open = match tasks.inbox(id) {
        Some(inbox) => inbox.questions(),
        None => open_in(&state),
    };
    let payload = match summary.status {
        RunStatus::Running if !open.is_empty() => TaskPayload::InputRequired {
            input_requests: open,
        },
        RunStatus::Running => TaskPayload::Working,
        RunStatus::Cancelled => TaskPayload::Cancelled,
        _ => match (
            answer.and_then(|a| a.get("error")),
            answer.and_then(|a| a.get("run_answer")),
        ) {
            (Some(error), _) => TaskPayload::Failed {
                error: object(Some(error)),
            },
            (None, Some(resp)) => {
                let tool = state.request.get("tool").and_then(Value::as_str);
                let result = from_run_answer(tool.unwrap_or_default(), resp);
                let mcp = serde_json::to_value(a2e_mcp::to_mcp_result(&result));
                TaskPayload::Completed {
                    result: object(mcp.ok().as_ref()),
                }
            }
            (None, None) => TaskPayload::Completed {
                result: object(answer.and_then(|a| a.get("result"))),
            },
        },
    };
    let base = task(id, payload.status(), summary.created_ms, updated);
    Ok(DetailedTask::new(base, payload))
}

/// `tasks/cancel` of task `id` on `host`: a cancel journaled for a task
/// still running (and the task fired when it runs here); a task that ended
/// is left as it is.
pub(crate) async fn cancel(host: &Host, tasks: &Arc<Tasks>, id: &str) -> Result<(), ErrorData> {
    let state = task_run(host, id).await?;
    if state.summary.status != RunStatus::Running {
        return Ok(());
    }
    tasks.cancel_here(id);
    if let Some(journal) = host.journal() {
        journal
            .request_cancel(&state.summary.run_id)
            .await
            .map_err(|e| ErrorData::internal_error(format!("run journal: {e}"), None))?;
    }
    Ok(())
}

/// `tasks/update` of task `id`: `responses` to the questions it waits on
/// (ignored when they answer none; a task that ended takes none), on any
/// host with the journal (see `task_questions`).
pub(crate) async fn update(
    host: &Host,
    tasks: &Tasks,
    id: &str,
    responses: InputResponses,
) -> Result<(), ErrorData> {
    let state = task_run(host, id).await?;
    if state.summary.status != RunStatus::Running {
        return Ok(());
    }
    match (tasks.inbox(id), host.journal()) {
        // Running here: an answer the journal takes first (another host may
        // have answered the same question) goes to the waiting call.
        (Some(inbox), Some(journal)) => {
            let taken = answer_here(&**journal, &state, &inbox, responses).await;
            inbox.answer(taken);
        }
        (Some(inbox), None) => inbox.answer(responses),
        // Another host runs it: it takes the answers from the task's run.
        (None, Some(journal)) => answer_in(&**journal, &state, responses).await,
        (None, None) => {}
    }
    Ok(())
}

/// Runs task `run`'s `call` to its end and journals how it ended; a
/// session's client is told each change of the task's state
/// (`notifications/tasks`): a question asked or answered, and the end.
pub(crate) async fn drive(
    host: &Host,
    tasks: &Tasks,
    run: task_run::TaskRun,
    link: &ClientLink,
    call: impl Future<Output = ToolResult>,
) {
    let id = run.run_id().to_string();
    let inbox = link.task_inbox().cloned();
    let journal = host.journal().cloned();
    let mut changes = inbox.as_ref().map(|inbox| inbox.changes());
    let mut mirror = Mirror::default();
    // The call runs on its own and may have asked before `changes` began to
    // watch: what is open now is journaled (and told) at once.
    if let (Some(journal), Some(inbox)) = (&journal, &inbox)
        && !inbox.questions().is_empty()
    {
        mirror.sync(&**journal, run.run_id(), inbox).await;
        tell(host, tasks, &id, link).await;
    }
    let mut call = std::pin::pin!(call);
    let result = loop {
        let change = async {
            match changes.as_mut() {
                Some(questions) => questions.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        let waiting = mirror.waiting();
        tokio::select! {
            result = &mut call => break result,
            more = change => {
                if !more {
                    changes = None;
                    continue;
                }
                if let (Some(journal), Some(inbox)) = (&journal, &inbox) {
                    mirror.sync(&**journal, run.run_id(), inbox).await;
                }
                tell(host, tasks, &id, link).await;
            }
            () = tokio::time::sleep(WATCH_EVERY), if waiting => {
                if let (Some(journal), Some(inbox)) = (&journal, &inbox) {
                    mirror.take_answers(&**journal, run.run_id(), inbox).await;
                }
            }
        }
    };
    let mcp = serde_json::to_value(a2e_mcp::to_mcp_result(&result)).unwrap_or_default();
    let (status, answer) = outcome(&result, mcp, run.cancelled().is_cancelled());
    run.finish(status, answer).await;
    tasks.ended(&id);
    tell(host, tasks, &id, link).await;
}

/// Tells `link`'s client (a session's) the state of task `id`.
async fn tell(host: &Host, tasks: &Tasks, id: &str, link: &ClientLink) {
    if !link.hears_task_status() {
        return;
    }
    if let Ok(task) = get(host, tasks, id).await {
        // A client that does not take it in time misses this one.
        let _ = tokio::time::timeout(NOTIFY_LIMIT, link.notify_task(task)).await;
    }
}

/// A task of `agent` calling `tool` with `arguments` that ended before it
/// began, with `result` (see `ToolBackend::ended_task`): journaled as a run
/// that started and ended, its state as `tasks/get` gives it.
pub(crate) async fn ended(
    host: &Host,
    tasks: &Tasks,
    (agent, tool): (&str, &str),
    arguments: &Value,
    result: &ToolResult,
) -> Result<Task, ErrorData> {
    let run = begin(host, agent, tool, arguments).await?;
    let id = run.run_id().to_string();
    let mcp = serde_json::to_value(a2e_mcp::to_mcp_result(result)).unwrap_or_default();
    let (status, answer) = outcome(result, mcp, false);
    run.finish(status, answer).await;
    Ok(get(host, tasks, &id).await?.task)
}

/// Starts a task's run: `None` when the host journals no runs.
pub(crate) async fn begin(
    host: &Host,
    agent: &str,
    tool: &str,
    arguments: &Value,
) -> Result<task_run::TaskRun, ErrorData> {
    match task_run::begin(host, agent, tool, arguments).await {
        Ok(Some(run)) => Ok(run),
        Ok(None) => Err(ErrorData::internal_error(
            "this host journals no runs: no tasks",
            None,
        )),
        Err(e) => Err(ErrorData::internal_error(format!("run journal: {e}"), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backing_runs_answer_is_the_calls_result() {
        let ok = json!({"success": true, "final_output": {"data": {"n": 1}, "summary": "one"}});
        let result = from_run_answer("skill__x", &ok);
        assert!(result.success);
        assert_eq!(
            (result.data, result.summary),
            (json!({"n": 1}), json!("one"))
        );
        let failed = json!({"success": false, "error": {"code": "interrupted", "message": "c: not idempotent"}});
        let result = from_run_answer("skill__x", &failed);
        assert!(!result.success);
        assert_eq!(result.error.as_deref(), Some("c: not idempotent"));
        assert_eq!(
            result.error_code.map(|c| c.to_string()),
            Some("interrupted".into())
        );
    }

    #[test]
    fn times_are_iso_8601_in_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn a_tool_error_completes_a_panic_fails_a_cancel_cancels() {
        let mcp = json!({"content": [], "isError": true});
        let failed = ToolResult::failed("t", ErrorCode::TOOL_ERROR, "no");
        assert_eq!(
            outcome(&failed, mcp.clone(), false),
            (RunStatus::Failed, json!({"result": mcp}))
        );
        let panicked = ToolResult::failed("t", ErrorCode::TOOL_ERROR, "tool panicked: boom");
        let (status, answer) = outcome(&panicked, json!({}), false);
        assert_eq!(status, RunStatus::Failed);
        assert_eq!(answer["error"]["code"], INTERNAL_ERROR);
        let ok = ToolResult::ok("t", json!(1));
        assert_eq!(outcome(&ok, json!({}), true).0, RunStatus::Cancelled);
        assert_eq!(
            outcome(&ok, json!({"x": 1}), false),
            (RunStatus::Succeeded, json!({"result": {"x": 1}}))
        );
    }
}
