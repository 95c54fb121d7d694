//! A2A tasks as the host's runs (kind `a2a_task`): what a task is from its
//! run, and the operations that read or cancel one on any host with the
//! journal.
//!
//! A task's run holds in its request `{"skill", "arguments", "context_id",
//! "message"}` (the message that started it) and, once it ended, in its
//! answer the skill's result (`{"result": SkillResult}`), the error it
//! ended with (`{"error": {"code", "message"}}`: its host stopped), or
//! `{"cancelled": true}`.

use a2a_proto::{
    A2aError, Artifact, ErrorKind, ListTasksRequest, ListTasksResponse, Message, Part, Role, Task,
    TaskState, TaskStatus,
};
use a2e_host_core::host::Host;
use a2e_journal::{RunFilter, RunId, RunKind, RunState, RunStatus};
use a2e_proto::SkillResult;
use serde_json::Value;

/// The id of the artifact that holds a skill's output.
pub(crate) const OUTPUT_ARTIFACT: &str = "output";

/// Most tasks a page lists (the specification's bound).
const MAX_PAGE: usize = a2a_proto::validate::MAX_PAGE_SIZE as usize;

/// A page's size when the client asks for none.
const DEFAULT_PAGE: usize = 50;

/// Most runs `ListTasks` looks through, newest first.
const LIST_WINDOW: usize = 1000;

/// `ms` since the Unix epoch as RFC 3339 (UTC, milliseconds).
pub(crate) fn timestamp(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// An agent message of the task (a status's message).
pub(crate) fn agent_message(task: &str, context: &str, suffix: &str, parts: Vec<Part>) -> Message {
    Message {
        task_id: task.to_owned(),
        context_id: context.to_owned(),
        ..Message::new(format!("{task}-{suffix}"), Role::Agent, parts)
    }
}

/// A skill's output as the task's artifact: its data (a text part when it
/// is a string, a data part else) and its summary when it has one.
pub(crate) fn output_artifact(skill: &str, result: &SkillResult) -> Artifact {
    let mut parts = Vec::new();
    match &result.data {
        Value::Null => {}
        Value::String(text) => parts.push(Part::text(text.clone())),
        data => parts.push(Part::data(data.clone())),
    }
    if let Some(summary) = result.summary.as_str().filter(|s| !s.is_empty()) {
        parts.push(Part::text(summary));
    }
    Artifact {
        artifact_id: OUTPUT_ARTIFACT.into(),
        name: skill.to_owned(),
        parts,
        ..Artifact::default()
    }
}

/// The skill's result from the `chain/resp` its durable run ended with (a
/// task whose host stopped, followed to the end of the run backing it).
fn from_run_answer(resp: &Value) -> SkillResult {
    let output = |field: &str| {
        resp.get("final_output")
            .and_then(|o| o.get(field))
            .cloned()
            .unwrap_or(Value::Null)
    };
    if resp.get("success").and_then(Value::as_bool) == Some(true) {
        let mut result = SkillResult::ok(output("data"));
        result.summary = output("summary");
        return result;
    }
    let message = resp
        .get("error")
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("the skill's run failed");
    SkillResult::failed(a2e_proto::ErrorCode::SKILL_ERROR, message)
}

/// The task of run `state`, `None` when the run is no A2A task.
pub fn task_of(state: &RunState) -> Option<Task> {
    if state.summary.kind != RunKind::A2aTask {
        return None;
    }
    let id = state.summary.run_id.to_string();
    let request = &state.request;
    let context = request
        .get("context_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let skill = request
        .get("skill")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let answer = state.answer.as_ref();
    let result = match (
        answer.and_then(|a| a.get("result")),
        answer.and_then(|a| a.get("run_answer")),
    ) {
        (Some(result), _) => serde_json::from_value::<SkillResult>(result.clone()).ok(),
        (None, Some(resp)) => Some(from_run_answer(resp)),
        (None, None) => None,
    };
    let mut direct = None;
    let turn = result
        .as_ref()
        .map(|r| crate::reply::turn(skill, r, &id, context));
    let (task_state, message, artifacts) = match (state.summary.status, turn) {
        (RunStatus::Running, _) => match crate::input::open_questions(state).first() {
            Some(open) => {
                let question = crate::input::asking(&id, context, open);
                (TaskState::InputRequired, Some(question), Vec::new())
            }
            None => (TaskState::Working, None, Vec::new()),
        },
        (RunStatus::Cancelled, _) => (TaskState::Canceled, None, Vec::new()),
        (_, Some(turn)) if turn.direct => {
            direct = turn.message;
            (TaskState::Completed, None, Vec::new())
        }
        (_, Some(turn)) => (turn.state, turn.message, turn.artifacts),
        (RunStatus::Succeeded, None) => (TaskState::Completed, None, Vec::new()),
        // Ended without a result: its host stopped.
        (RunStatus::Failed, None) => {
            let error = answer
                .and_then(|a| a.get("error"))
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("the task failed");
            let message = agent_message(&id, context, "status", vec![Part::text(error)]);
            (TaskState::Failed, Some(message), Vec::new())
        }
    };
    let updated = state
        .summary
        .finished_ms
        .unwrap_or(state.summary.created_ms);
    let mut history: Vec<Message> = request
        .get("message")
        .and_then(|m| serde_json::from_value::<Message>(m.clone()).ok())
        .map(|mut message| {
            message.task_id.clone_from(&id);
            message
        })
        .into_iter()
        .collect();
    history.extend(crate::input::exchanged(state, &id, context));
    history.extend(direct);
    Some(Task {
        artifacts,
        history,
        ..Task::new(
            id,
            context,
            TaskStatus {
                state: task_state,
                message,
                timestamp: Some(timestamp(updated)),
            },
        )
    })
}

/// Keeps the last `length` messages of `task`'s history (all when `None`,
/// none at 0).
pub(crate) fn cut_history(mut task: Task, length: Option<i32>) -> Task {
    if let Some(length) = length {
        let keep = usize::try_from(length.max(0)).unwrap_or(0);
        let drop = task.history.len().saturating_sub(keep);
        task.history.drain(..drop);
    }
    task
}

/// The run of task `id`: [`ErrorKind::TaskNotFound`] when there is none.
pub(crate) async fn find(host: &Host, id: &str) -> Result<RunState, A2aError> {
    let not_found = || A2aError::new(ErrorKind::TaskNotFound, format!("task `{id}` not found"));
    let journal = host.journal().ok_or_else(not_found)?;
    let run = RunId::parse(id).map_err(|_| not_found())?;
    let state = journal
        .show_run(&run)
        .await
        .map_err(|e| A2aError::new(ErrorKind::Internal, format!("run journal: {e}")))?;
    state
        .filter(|s| s.summary.kind == RunKind::A2aTask)
        .ok_or_else(not_found)
}

/// The task of run `state` as it is now: [`task_of`], and a task whose
/// questions were all decided elsewhere (by an operator) working again.
pub(crate) async fn task_now(host: &Host, state: &RunState) -> Result<Task, A2aError> {
    let mut task = task_of(state).ok_or_else(|| A2aError::of(ErrorKind::TaskNotFound))?;
    if task.status.state == TaskState::InputRequired
        && let Some(journal) = host.journal()
    {
        match crate::input::still_open(journal.as_ref(), state)
            .await?
            .first()
        {
            Some(open) => {
                task.status.message = Some(crate::input::asking(&task.id, &task.context_id, open));
            }
            None => {
                task.status.state = TaskState::Working;
                task.status.message = None;
            }
        }
    }
    Ok(task)
}

/// `GetTask`.
pub(crate) async fn get(host: &Host, id: &str, history: Option<i32>) -> Result<Task, A2aError> {
    let state = find(host, id).await?;
    Ok(cut_history(task_now(host, &state).await?, history))
}

/// The run status a task state filter asks for (`None`: a state no run
/// of this host is in, so nothing matches).
fn run_status(state: TaskState) -> Option<RunStatus> {
    match state {
        TaskState::Working | TaskState::InputRequired => Some(RunStatus::Running),
        TaskState::Completed => Some(RunStatus::Succeeded),
        TaskState::Failed => Some(RunStatus::Failed),
        TaskState::Canceled => Some(RunStatus::Cancelled),
        _ => None,
    }
}

/// Where the page a list's `pageToken` names starts (the token is the
/// position of the page's first item; none is the first page).
pub(crate) fn page_start(token: &str) -> Result<usize, A2aError> {
    if token.is_empty() {
        return Ok(0);
    }
    token.parse::<usize>().map_err(|_| {
        A2aError::new(
            ErrorKind::InvalidParams,
            "pageToken is not one this agent gave",
        )
    })
}

/// `ListTasks`: newest first, filtered by context and state, paged (the
/// page token is the position of the page's first task).
pub(crate) async fn list(
    host: &Host,
    req: &ListTasksRequest,
) -> Result<ListTasksResponse, A2aError> {
    let page_size = match req.page_size {
        None | Some(0) => DEFAULT_PAGE,
        Some(n) if n < 0 || n as usize > MAX_PAGE => {
            return Err(A2aError::new(
                ErrorKind::InvalidParams,
                format!("pageSize must be between 1 and {MAX_PAGE}"),
            ));
        }
        Some(n) => n as usize,
    };
    let start = page_start(&req.page_token)?;
    let after = match &req.status_timestamp_after {
        Some(ts) => Some(
            chrono::DateTime::parse_from_rfc3339(ts)
                .map_err(|e| {
                    A2aError::new(
                        ErrorKind::InvalidParams,
                        format!("statusTimestampAfter is no RFC 3339 time: {e}"),
                    )
                })?
                .timestamp_millis(),
        ),
        None => None,
    };
    let Some(journal) = host.journal() else {
        return Ok(ListTasksResponse {
            page_size: page_size as i32,
            ..ListTasksResponse::default()
        });
    };
    let wanted = req.status.filter(|s| *s != TaskState::Unspecified);
    let status = match req.status {
        None | Some(TaskState::Unspecified) => None,
        Some(state) => match run_status(state) {
            Some(status) => Some(status),
            None => {
                return Ok(ListTasksResponse {
                    page_size: page_size as i32,
                    ..ListTasksResponse::default()
                });
            }
        },
    };
    let filter = RunFilter {
        status,
        limit: LIST_WINDOW,
        ..RunFilter::default()
    };
    let summaries = journal
        .list_runs(&filter)
        .await
        .map_err(|e| A2aError::new(ErrorKind::Internal, format!("run journal: {e}")))?;
    let mut tasks = Vec::new();
    for summary in summaries
        .items
        .iter()
        .filter(|s| s.kind == RunKind::A2aTask)
    {
        let updated = summary.finished_ms.unwrap_or(summary.created_ms);
        if after.is_some_and(|after| (updated as i64) <= after) {
            continue;
        }
        let Ok(Some(state)) = journal.show_run(&summary.run_id).await else {
            continue;
        };
        let Ok(mut task) = task_now(host, &state).await else {
            continue;
        };
        if !req.context_id.is_empty() && task.context_id != req.context_id {
            continue;
        }
        if wanted.is_some_and(|wanted| task.status.state != wanted) {
            continue;
        }
        if req.include_artifacts != Some(true) {
            task.artifacts.clear();
        }
        tasks.push(cut_history(task, req.history_length));
    }
    let total = tasks.len();
    let page: Vec<Task> = tasks.into_iter().skip(start).take(page_size).collect();
    let next = start + page.len();
    Ok(ListTasksResponse {
        next_page_token: if next < total {
            next.to_string()
        } else {
            String::new()
        },
        page_size: page_size as i32,
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
        tasks: page,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2e_journal::RunSummary;
    use serde_json::json;

    fn state(status: RunStatus, answer: Option<Value>) -> RunState {
        RunState {
            summary: RunSummary {
                run_id: RunId::generate(),
                kind: RunKind::A2aTask,
                agent: "a2a".into(),
                status,
                created_ms: 1_700_000_000_000,
                finished_ms: (status != RunStatus::Running).then_some(1_700_000_000_123),
                cancel_requested: false,
                next_seq: 0,
                coordinator: None,
            },
            request: json!({"skill": "wc", "arguments": {"text": "a b"}, "context_id": "c1",
                            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "a b"}]}}),
            nodes: Vec::new(),
            answer,
        }
    }

    #[test]
    fn a_run_is_a_task_in_the_state_its_status_says() {
        let running = task_of(&state(RunStatus::Running, None)).unwrap();
        assert_eq!(running.status.state, TaskState::Working);
        assert_eq!(running.context_id, "c1");
        assert_eq!(running.history[0].message_id, "m1");
        assert_eq!(running.history[0].task_id, running.id);
        let result =
            json!({"success": true, "data": {"words": 2}, "summary": "2 words", "duration_ms": 3});
        let done = task_of(&state(
            RunStatus::Succeeded,
            Some(json!({"result": result})),
        ))
        .unwrap();
        assert_eq!(done.status.state, TaskState::Completed);
        assert_eq!(
            done.status.timestamp.as_deref(),
            Some("2023-11-14T22:13:20.123Z")
        );
        let parts = serde_json::to_value(&done.artifacts[0].parts).unwrap();
        assert_eq!(parts, json!([{"data": {"words": 2}}, {"text": "2 words"}]));
        let failed =
            json!({"success": false, "data": null, "error": "no such file", "duration_ms": 1});
        let failed = task_of(&state(RunStatus::Failed, Some(json!({"result": failed})))).unwrap();
        assert_eq!(failed.status.state, TaskState::Failed);
        let message = failed.status.message.unwrap();
        assert_eq!(message.parts[0].as_text(), Some("no such file"));
        assert_eq!(message.role, Role::Agent);
        let orphan = json!({"error": {"code": -32603, "message": "the host stopped"}});
        let orphan = task_of(&state(RunStatus::Failed, Some(orphan))).unwrap();
        assert_eq!(
            orphan.status.message.unwrap().parts[0].as_text(),
            Some("the host stopped")
        );
        let resumed = json!({"run_answer": {"success": false,
            "error": {"code": "interrupted", "message": "b: not idempotent"}}});
        let resumed = task_of(&state(RunStatus::Failed, Some(resumed))).unwrap();
        assert_eq!(
            resumed.status.message.unwrap().parts[0].as_text(),
            Some("b: not idempotent")
        );
        let resumed = json!({"run_answer": {"success": true,
            "final_output": {"data": {"n": 1}, "summary": "one"}}});
        let resumed = task_of(&state(RunStatus::Succeeded, Some(resumed))).unwrap();
        let parts = serde_json::to_value(&resumed.artifacts[0].parts).unwrap();
        assert_eq!(parts, json!([{"data": {"n": 1}}, {"text": "one"}]));
        let cancelled = task_of(&state(
            RunStatus::Cancelled,
            Some(json!({"cancelled": true})),
        ));
        assert_eq!(cancelled.unwrap().status.state, TaskState::Canceled);
        let mut other = state(RunStatus::Running, None);
        other.summary.kind = RunKind::McpTask;
        assert!(task_of(&other).is_none());
    }

    #[test]
    fn history_is_cut_to_its_last_messages() {
        let task = task_of(&state(RunStatus::Running, None)).unwrap();
        assert_eq!(cut_history(task.clone(), None).history.len(), 1);
        assert_eq!(cut_history(task.clone(), Some(0)).history.len(), 0);
        assert_eq!(cut_history(task, Some(5)).history.len(), 1);
    }
}
