//! `input-required`: a call of a task that waits for a person's approval
//! (docs/approvals.md) puts the task in `TASK_STATE_INPUT_REQUIRED`, its
//! status message a question that shows the call; the client's next message
//! to the task (its `taskId`) is the decision, journaled as any decider's.
//!
//! The task's run keeps both sides, so any host with the journal answers
//! them: `@input` (attempt `n`: the `n`th question) started with the notice
//! of the waiting call and finished once the wait ended, and `@reply`
//! (attempt `n`) with the client's answer to it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use a2a_proto::{
    A2aError, ErrorKind, Message, Part, PartContent, StreamResponse, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2e_host_approvals::{DecideError, Verdict};
use a2e_host_core::WatchWaits;
use a2e_host_core::config::Decider;
use a2e_journal::{Journal, NodeKey, NodeOutcome, NodeStart, RunId, RunState};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::send::now_ms;
use crate::tasks::{agent_message, timestamp};

/// The node of a task's run that holds its questions.
const INPUT_NODE: &str = "@input";

/// The node of a task's run that holds the client's answers.
const REPLY_NODE: &str = "@reply";

/// Who a decision by an A2A client is recorded as.
const DECIDER: &str = "client:a2a";

/// A task's questions: its skill's, and its calls' approvals (as the
/// [`WaitWatch`](a2e_host_core::WaitWatch) its calls carry, told when a call
/// waits and when the wait ended).
pub(crate) struct TaskWaits {
    journal: Arc<dyn Journal>,
    task: RunId,
    context: String,
    events: broadcast::Sender<StreamResponse>,
    asked: AtomicU32,
    /// The question of each waiting call: its run and node, and `n`.
    open: std::sync::Mutex<Vec<(String, String, u32)>>,
}

/// How the wait for the client's answer to a skill's question ended.
#[derive(Debug)]
pub(crate) enum Answered {
    /// With the client's message.
    Yes(Box<Message>),
    /// The task was cancelled.
    Cancelled,
    /// Nobody answered in time.
    TimedOut,
}

/// How often a task whose skill asked looks in the journal for the answer
/// (an answer given on this host wakes it at once).
const ANSWER_POLL: std::time::Duration = std::time::Duration::from_millis(200);

impl TaskWaits {
    /// The questions of task `task` (of `context`), whose events go to
    /// `events`; as a [`WaitWatch`] it hears of its calls' approvals.
    pub(crate) fn new(
        journal: Arc<dyn Journal>,
        task: RunId,
        context: String,
        events: broadcast::Sender<StreamResponse>,
    ) -> Arc<Self> {
        Arc::new(Self {
            journal,
            task,
            context,
            events,
            asked: AtomicU32::new(0),
            open: std::sync::Mutex::default(),
        })
    }

    /// The task's skill asks `question`: journaled as the next question,
    /// told as the task's input-required status. Its number.
    pub(crate) async fn ask(&self, question: &Message) -> u32 {
        let n = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        let mut question = question.clone();
        question.message_id = format!("{}-input-{n}", self.task);
        let record = json!({"asked_by": "skill", "message": question});
        if let Some(key) = self.key(n)
            && let Err(e) = self
                .journal
                .node_started_with(&key, &NodeStart::with_input(record))
                .await
        {
            tracing::warn!(task = %self.task, "a2a: the question was not journaled: {e}");
        }
        self.status(TaskState::InputRequired, question);
        n
    }

    /// The client's answer to question `n`, once journaled (from any host;
    /// `wake` is notified when it was here), or why there is none.
    pub(crate) async fn answer(
        &self,
        n: u32,
        wake: &tokio::sync::Notify,
        cancel: &tokio_util::sync::CancellationToken,
        limit: std::time::Duration,
    ) -> Answered {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Ok(Some(state)) = self.journal.show_run(&self.task).await
                && let Some(reply) = reply_to(&state, n)
            {
                if let Some(key) = self.key(n) {
                    let outcome = NodeOutcome::output(json!({"answered": true}));
                    let _ = self.journal.node_finished(&key, &outcome).await;
                }
                return Answered::Yes(Box::new(reply));
            }
            tokio::select! {
                () = tokio::time::sleep(ANSWER_POLL) => {}
                () = wake.notified() => {}
                () = cancel.cancelled() => return Answered::Cancelled,
                () = tokio::time::sleep_until(deadline) => return Answered::TimedOut,
            }
        }
    }

    fn status(&self, state: TaskState, message: Message) {
        let update = TaskStatusUpdateEvent {
            task_id: self.task.to_string(),
            context_id: self.context.clone(),
            status: TaskStatus {
                state,
                message: Some(message),
                timestamp: Some(timestamp(now_ms())),
            },
            metadata: None,
        };
        let _ = self.events.send(StreamResponse::StatusUpdate(update));
    }

    fn key(&self, n: u32) -> Option<NodeKey> {
        NodeKey::new(self.task.clone(), INPUT_NODE, n).ok()
    }
}

/// The run and node a notice of a waiting call names.
fn place_of(notice: &Value) -> (String, String) {
    let field = |name: &str| {
        notice
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (field("run_id"), field("node_id"))
}

impl WatchWaits for TaskWaits {
    fn waiting<'a>(&'a self, notice: &'a Map<String, Value>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let n = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
            let notice = Value::Object(notice.clone());
            let (run, node) = place_of(&notice);
            self.open
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((run, node, n));
            // Journaled before the client hears of it: the task it then
            // reads waits for input.
            if let Some(key) = self.key(n)
                && let Err(e) = self
                    .journal
                    .node_started_with(&key, &NodeStart::with_input(notice.clone()))
                    .await
            {
                tracing::warn!(task = %self.task, "a2a: the question was not journaled: {e}");
            }
            let question = question(self.task.as_str(), &self.context, n, &notice);
            self.status(TaskState::InputRequired, question);
        })
    }

    fn ended<'a>(
        &'a self,
        notice: &'a Map<String, Value>,
        approved: bool,
        by: &'a str,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let (run, node) = place_of(&Value::Object(notice.clone()));
            let n = {
                let mut open = self
                    .open
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let found = open.iter().position(|(r, o, _)| *r == run && *o == node);
                found.map(|i| open.remove(i).2)
            };
            let Some(n) = n else { return };
            if let Some(key) = self.key(n) {
                let outcome = NodeOutcome::output(json!({"approved": approved, "by": by}));
                if let Err(e) = self.journal.node_finished(&key, &outcome).await {
                    tracing::warn!(task = %self.task, "a2a: the answer was not journaled: {e}");
                }
            }
            let said = if approved { "approved" } else { "denied" };
            let name = notice.get("name").and_then(Value::as_str).unwrap_or("?");
            let text = format!("the call of `{name}` was {said} by {by}");
            let message = agent_message(
                self.task.as_str(),
                &self.context,
                &format!("decided-{n}"),
                vec![Part::text(text)],
            );
            self.status(TaskState::Working, message);
        })
    }
}

/// The question of the `n`th waiting call of a task: what waits, and how
/// to answer; its data part is the notice of the call.
pub(crate) fn question(task: &str, context: &str, n: u32, notice: &Value) -> Message {
    let field = |name: &str| notice.get(name).and_then(Value::as_str).unwrap_or("?");
    let text = format!(
        "The call of {} `{}` waits for approval ({}). Answer this task with the text \
         `approve`, or `deny` and a reason, or a data part {{\"approve\": true or false, \
         \"reason\": \"…\", \"arguments\": {{…}}}} (`arguments`: run it with these instead).",
        field("target"),
        field("name"),
        field("reason"),
    );
    agent_message(
        task,
        context,
        &format!("input-{n}"),
        vec![Part::text(text), Part::data(notice.clone())],
    )
}

/// A question of a task's run that has no answer yet.
#[derive(Debug, Clone)]
pub(crate) struct Open {
    /// Which question (from 1).
    pub n: u32,
    /// The notice of the waiting call.
    pub notice: Value,
}

/// The questions of task run `state` whose waits have not ended, oldest
/// first (as its run says; [`still_open`] asks the calls' runs).
pub(crate) fn open_questions(state: &RunState) -> Vec<Open> {
    let mut open: Vec<Open> = state
        .nodes
        .iter()
        .filter(|r| r.node_id == INPUT_NODE && r.outcome.is_none())
        .filter(|r| !replied(state, r.attempt))
        .map(|r| Open {
            n: r.attempt,
            notice: r
                .start
                .as_ref()
                .and_then(|s| s.input.clone())
                .unwrap_or(Value::Null),
        })
        .collect();
    open.sort_by_key(|o| o.n);
    open
}

/// Whether question `n` of `state` was answered by the client.
fn replied(state: &RunState, n: u32) -> bool {
    state
        .nodes
        .iter()
        .any(|r| r.node_id == REPLY_NODE && r.attempt == n)
}

/// The client's answer to question `n` of `state`, if journaled.
fn reply_to(state: &RunState, n: u32) -> Option<Message> {
    state
        .nodes
        .iter()
        .find(|r| r.node_id == REPLY_NODE && r.attempt == n)
        .and_then(|r| r.start.as_ref()?.input.clone())
        .and_then(|m| serde_json::from_value::<Message>(m).ok())
}

/// The message of a question the task's skill asked (not an approval's).
fn skill_question(record: &Value) -> Option<Message> {
    serde_json::from_value(record.get("message")?.clone()).ok()
}

/// The status message of question `open` of task `task`.
pub(crate) fn asking(task: &str, context: &str, open: &Open) -> Message {
    skill_question(&open.notice).unwrap_or_else(|| question(task, context, open.n, &open.notice))
}

/// The questions of `state` whose calls still wait in their runs' journal
/// (a call decided by an operator, or by a host that took the run up,
/// leaves its question open in the task's run).
pub(crate) async fn still_open(
    journal: &dyn Journal,
    state: &RunState,
) -> Result<Vec<Open>, A2aError> {
    let mut out = Vec::new();
    for open in open_questions(state) {
        if skill_question(&open.notice).is_some() {
            out.push(open);
            continue;
        }
        let (run, node) = place_of(&open.notice);
        let Ok(run) = RunId::parse(&run) else {
            continue;
        };
        let waits = if run == state.summary.run_id {
            a2e_host_approvals::waiting_in(state)
        } else {
            match journal.show_run(&run).await {
                Ok(Some(s)) => a2e_host_approvals::waiting_in(&s),
                Ok(None) => Vec::new(),
                Err(e) => {
                    return Err(A2aError::new(
                        ErrorKind::Internal,
                        format!("run journal: {e}"),
                    ));
                }
            }
        };
        if waits.iter().any(|p| p.node_id == node) {
            out.push(open);
        }
    }
    Ok(out)
}

/// The messages of a task's questions and the client's answers, in order.
pub(crate) fn exchanged(state: &RunState, task: &str, context: &str) -> Vec<Message> {
    let mut asked: Vec<_> = state
        .nodes
        .iter()
        .filter(|r| r.node_id == INPUT_NODE)
        .collect();
    asked.sort_by_key(|r| r.attempt);
    let mut out = Vec::new();
    for record in asked {
        let notice = record
            .start
            .as_ref()
            .and_then(|s| s.input.clone())
            .unwrap_or(Value::Null);
        out.push(
            skill_question(&notice)
                .unwrap_or_else(|| question(task, context, record.attempt, &notice)),
        );
        out.extend(reply_to(state, record.attempt));
    }
    out
}

/// The decision a client's answer gives: a data part `{"approve": bool,
/// "reason"?, "arguments"?}`, else its text: `approve` (or `yes`, `ok`) and
/// `deny` (or `no`, `reject`) followed by a reason.
pub(crate) fn verdict_of(message: &Message) -> Result<Verdict, A2aError> {
    let unclear = |why: &str| {
        A2aError::new(
            ErrorKind::InvalidParams,
            format!(
                "{why}: a task that waits for approval takes the text `approve`, or `deny` and \
                 a reason, or a data part {{\"approve\": true or false, \"reason\", \"arguments\"}}"
            ),
        )
    };
    let verdict = |approved: bool, args: Option<Map<String, Value>>, reason: String| Verdict {
        approved,
        args,
        reason,
        by: DECIDER.to_owned(),
        decider: Decider::Client,
    };
    for part in &message.parts {
        let PartContent::Data(Value::Object(data)) = &part.content else {
            continue;
        };
        let Some(approved) = data.get("approve").and_then(Value::as_bool) else {
            return Err(unclear("the data part has no boolean `approve`"));
        };
        let reason = match data.get("reason") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(reason)) => reason.clone(),
            Some(_) => return Err(unclear("`reason` is not a string")),
        };
        let args = match data.get("arguments") {
            None | Some(Value::Null) => None,
            Some(Value::Object(args)) => Some(args.clone()),
            Some(_) => return Err(unclear("`arguments` is not an object")),
        };
        if args.is_some() && !approved {
            return Err(unclear("`arguments` go with an approval only"));
        }
        return Ok(verdict(approved, args, reason));
    }
    let text: Vec<&str> = message.parts.iter().filter_map(Part::as_text).collect();
    let text = text.join("\n");
    let text = text.trim();
    let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let word = word
        .trim_end_matches(|c: char| c.is_ascii_punctuation())
        .to_ascii_lowercase();
    let reason = rest.trim().to_owned();
    match word.as_str() {
        "approve" | "approved" | "yes" | "ok" => Ok(verdict(true, None, reason)),
        "deny" | "denied" | "no" | "reject" => Ok(verdict(false, None, reason)),
        "" => Err(unclear("the message says nothing")),
        _ => Err(unclear(&format!("`{word}` is neither approve nor deny"))),
    }
}

/// Decides the oldest open question of task run `state` as `message`
/// says, and journals `message` as the answer to it.
pub(crate) async fn answer(
    journal: &Arc<dyn Journal>,
    state: &RunState,
    message: &Message,
) -> Result<(), A2aError> {
    let id = state.summary.run_id.to_string();
    let open = still_open(journal.as_ref(), state).await?;
    let Some(first) = open.first() else {
        return Err(A2aError::new(
            ErrorKind::UnsupportedOperation,
            format!("task `{id}` is not waiting for input"),
        ));
    };
    if skill_question(&first.notice).is_some() {
        // The skill's next turn takes the message as its arguments.
        crate::send::arguments_of(message)?;
        return journal_reply(journal, state, first.n, message, json!({"answered": true})).await;
    }
    let verdict = verdict_of(message)?;
    let (run, node) = place_of(&first.notice);
    let run = RunId::parse(&run).map_err(|e| {
        A2aError::new(
            ErrorKind::Internal,
            format!("the question names no run: {e}"),
        )
    })?;
    let approved = verdict.approved;
    a2e_host_approvals::decide(journal.as_ref(), &run, Some(&node), verdict)
        .await
        .map_err(|e| match e {
            DecideError::ArgsNotObject => A2aError::new(ErrorKind::InvalidParams, e.to_string()),
            DecideError::Journal(_) => A2aError::new(ErrorKind::Internal, e.to_string()),
            other => A2aError::new(ErrorKind::UnsupportedOperation, other.to_string()),
        })?;
    if let Err(e) = journal_reply(
        journal,
        state,
        first.n,
        message,
        json!({"approved": approved}),
    )
    .await
    {
        tracing::warn!(task = %id, "a2a: the client's answer was not journaled: {}", e.message);
    }
    Ok(())
}

/// Journals `message` as the client's answer to question `n` of `state`.
async fn journal_reply(
    journal: &Arc<dyn Journal>,
    state: &RunState,
    n: u32,
    message: &Message,
    outcome: Value,
) -> Result<(), A2aError> {
    let failed = |e: a2e_journal::JournalError| {
        A2aError::new(ErrorKind::Internal, format!("run journal: {e}"))
    };
    let key = NodeKey::new(state.summary.run_id.clone(), REPLY_NODE, n).map_err(failed)?;
    let value = serde_json::to_value(message).unwrap_or_default();
    journal
        .node_started_with(&key, &NodeStart::with_input(value))
        .await
        .map_err(failed)?;
    journal
        .node_finished(&key, &NodeOutcome::output(outcome))
        .await
        .map_err(failed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: Value) -> Message {
        a2a_proto::decode_value(json!({"messageId": "r", "role": "ROLE_USER", "parts": parts}))
            .unwrap()
    }

    #[test]
    fn an_answer_is_a_data_part_or_a_word() {
        let yes = verdict_of(&message(json!([{"text": "Approve."}]))).unwrap();
        assert!(yes.approved && yes.args.is_none() && yes.reason.is_empty());
        assert_eq!(yes.by, DECIDER);
        let no = verdict_of(&message(json!([{"text": " deny  not on a Friday "}]))).unwrap();
        assert!(!no.approved);
        assert_eq!(no.reason, "not on a Friday");
        let edited = verdict_of(&message(json!([{"text": "ignored"},
            {"data": {"approve": true, "arguments": {"argv": ["ls"]}}}])))
        .unwrap();
        assert!(edited.approved);
        assert_eq!(edited.args.unwrap()["argv"], json!(["ls"]));
        for (parts, says) in [
            (json!([{"text": "maybe later"}]), "`maybe` is neither"),
            (json!([{"text": "  "}]), "says nothing"),
            (
                json!([{"data": {"approve": "yes"}}]),
                "no boolean `approve`",
            ),
            (
                json!([{"data": {"approve": false, "arguments": {}}}]),
                "with an approval only",
            ),
            (
                json!([{"data": {"approve": true, "reason": 3}}]),
                "not a string",
            ),
        ] {
            let error = verdict_of(&message(parts.clone())).unwrap_err();
            assert_eq!(error.kind, ErrorKind::InvalidParams, "{parts}");
            assert!(error.message.contains(says), "{parts}: {}", error.message);
        }
    }

    #[test]
    fn a_question_shows_the_call_and_how_to_answer() {
        let notice = json!({"status": "waiting_for_approval", "run_id": "r1", "node_id": "call",
            "target": "tool", "name": "run_command", "reason": "[[approvals]] #1",
            "arguments": {"argv": ["rm", "x"]}});
        let q = question("t1", "c1", 2, &notice);
        assert_eq!(q.message_id, "t1-input-2");
        assert_eq!(q.context_id, "c1");
        let text = q.parts[0].as_text().unwrap();
        assert!(
            text.contains("tool `run_command` waits for approval ([[approvals]] #1)"),
            "{text}"
        );
        assert_eq!(serde_json::to_value(&q.parts[1]).unwrap()["data"], notice);
        assert_eq!(place_of(&notice), ("r1".to_owned(), "call".to_owned()));
    }
}
