//! A task's work: its skill called once per turn — the message that
//! started the task, then each answer of the client to a question the skill
//! asked (`input-required`, docs/a2a.md) — until a turn ends the task. The
//! skill's events go to whoever streams the task, the task's end to the
//! journal.

use std::sync::Arc;
use std::time::Duration;

use a2a_proto::{
    Message, Part, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2e_host_core::host::CallOptions;
use a2e_host_core::outbound::EventStream;
use a2e_host_runs::task_run::TaskRun;
use a2e_proto::{ErrorCode, Message as A2eMessage, SkillCallRequest, SkillEvent, SkillResult};
use serde_json::{Map, Value, json};

use crate::A2aAgent;
use crate::input::{Answered, TaskWaits};
use crate::live::Running;
use crate::send::now_ms;
use crate::tasks::{agent_message, timestamp};

/// How long a task waits for the client's answer to its skill's question.
pub const ANSWER_WAIT: Duration = Duration::from_secs(3600);

/// The message a task's skill call is for: the one that started the task,
/// or the client's answer it goes on with. In the call's extensions, for a
/// skill built into the host (its `messageId`, metadata, every part).
#[derive(Debug, Clone)]
pub struct IncomingMessage(pub Message);

/// A task's work, from its first turn to its end.
pub(crate) struct Work {
    pub agent: Arc<A2aAgent>,
    pub run: TaskRun,
    pub running: Running,
    pub skill: String,
    pub arguments: Map<String, Value>,
    pub message: Message,
    pub id: String,
    pub context: String,
}

impl Work {
    fn status(&self, state: TaskState, message: Option<Message>) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context.clone(),
            status: TaskStatus {
                state,
                message,
                timestamp: Some(timestamp(now_ms())),
            },
            metadata: None,
        })
    }

    fn send(&self, event: StreamResponse) {
        let _ = self.running.events.send(event);
    }

    /// Runs the task's turns to its end.
    pub(crate) async fn drive(self) {
        let waits = self.agent.host.journal().cloned().map(|journal| {
            TaskWaits::new(
                journal,
                self.run.run_id().clone(),
                self.context.clone(),
                self.running.events.clone(),
            )
        });
        let cancel = self.run.cancelled();
        let (mut arguments, mut message) = (self.arguments.clone(), self.message.clone());
        let (status, answer, last) = loop {
            self.send(self.status(TaskState::Working, None));
            let result = self.call(arguments, message, waits.as_ref()).await;
            if cancel.is_cancelled() || result.error_code == Some(ErrorCode::CANCELLED) {
                break ended_cancelled(&self);
            }
            let turn = crate::reply::turn(&self.skill, &result, &self.id, &self.context);
            if turn.state == TaskState::InputRequired
                && let Some(waits) = &waits
            {
                let question = turn.message.clone().unwrap_or_else(|| {
                    agent_message(
                        &self.id,
                        &self.context,
                        "status",
                        vec![Part::text("The skill asks for input.")],
                    )
                });
                let n = waits.ask(&question).await;
                match waits
                    .answer(n, &self.running.wake, &cancel, ANSWER_WAIT)
                    .await
                {
                    Answered::Yes(reply) => {
                        arguments = crate::send::arguments_of(&reply).unwrap_or_default();
                        message = *reply;
                        continue;
                    }
                    Answered::Cancelled => break ended_cancelled(&self),
                    Answered::TimedOut => {
                        let text = format!(
                            "no answer to the skill's question within {} s",
                            ANSWER_WAIT.as_secs()
                        );
                        let failed = SkillResult::failed(ErrorCode::TIMEOUT, text.clone());
                        let message = agent_message(
                            &self.id,
                            &self.context,
                            "status",
                            vec![Part::text(text)],
                        );
                        break (
                            a2e_journal::RunStatus::Failed,
                            json!({"result": failed}),
                            self.status(TaskState::Failed, Some(message)),
                        );
                    }
                }
            }
            for artifact in &turn.artifacts {
                self.send(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: self.id.clone(),
                    context_id: self.context.clone(),
                    artifact: artifact.clone(),
                    append: false,
                    last_chunk: true,
                    metadata: None,
                }));
            }
            let status = if turn.state == TaskState::Completed {
                a2e_journal::RunStatus::Succeeded
            } else {
                a2e_journal::RunStatus::Failed
            };
            let last = match (&turn.message, turn.direct) {
                (Some(direct), true) => StreamResponse::Message(direct.clone()),
                _ => self.status(turn.state, turn.message.clone()),
            };
            break (status, json!({"result": result}), last);
        };
        // Journaled first: a reader told of the end finds it in the journal.
        let Work {
            agent,
            run,
            running,
            id,
            ..
        } = self;
        run.finish(status, answer).await;
        let _ = running.events.send(last);
        agent.live.end(&id);
    }

    /// One turn: the skill called with `arguments` (of `message`), its
    /// events forwarded as the task's.
    async fn call(
        &self,
        arguments: Map<String, Value>,
        message: Message,
        waits: Option<&Arc<TaskWaits>>,
    ) -> SkillResult {
        let host = self.agent.host.clone();
        let session = format!("a2a-{}-{}", self.id, uuid::Uuid::new_v4().simple());
        let (events, mut received) = EventStream::channel(64);
        let forward = {
            let (sender, id, context) = (
                self.running.events.clone(),
                self.id.clone(),
                self.context.clone(),
            );
            tokio::spawn(async move {
                let mut n = 0u64;
                while let Some(out) = received.recv().await {
                    for msg in out.into_messages() {
                        if let A2eMessage::SkillEvent(event) = msg
                            && let Some(update) = event_of(&event, &id, &context, &mut n)
                        {
                            let _ = sender.send(update);
                        }
                    }
                }
            })
        };
        let cancel = self.run.cancelled();
        let request = SkillCallRequest {
            name: self.skill.clone(),
            arguments,
            streaming: true,
            ..SkillCallRequest::default()
        };
        // A skill whose engine journals its own run (an LLM or Ontheia
        // skill) names it in the task's: the task then follows that run to
        // its end when this host dies (`task_run`).
        let mut options = CallOptions::new()
            .session(&session)
            .events(events)
            .cancel(&cancel)
            .extension(self.run.link(&self.skill))
            .extension(IncomingMessage(message));
        if let Some(waits) = waits {
            options = options.extension(a2e_host_core::WaitWatch(waits.clone()));
        }
        let result = match host.call_skill(request, options).await {
            Ok(result) => result,
            Err(e) => SkillResult::failed(e.code(), e.to_string()),
        };
        host.end_session(&session);
        let _ = forward.await;
        result
    }
}

/// The end of a task cancelled.
fn ended_cancelled(work: &Work) -> (a2e_journal::RunStatus, Value, StreamResponse) {
    (
        a2e_journal::RunStatus::Cancelled,
        json!({"cancelled": true}),
        work.status(TaskState::Canceled, None),
    )
}

/// The task's event of a skill's event: an `artifact` event (`{"artifact",
/// "append", "lastChunk"}`) as an artifact update, any other as a working
/// status whose message holds `{"event": KIND, "data": …}`; the notice of a
/// call waiting for approval is none (`TaskWaits` tells it as the task's
/// input-required status).
fn event_of(event: &SkillEvent, id: &str, context: &str, n: &mut u64) -> Option<StreamResponse> {
    if event.data.get("status").and_then(Value::as_str) == Some("waiting_for_approval") {
        return None;
    }
    if event.kind.as_str() == "artifact"
        && let Some(artifact) = event
            .data
            .get("artifact")
            .and_then(|a| serde_json::from_value(a.clone()).ok())
    {
        let flag = |name: &str| event.data.get(name).and_then(Value::as_bool) == Some(true);
        return Some(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: id.to_owned(),
            context_id: context.to_owned(),
            artifact,
            append: flag("append"),
            last_chunk: flag("lastChunk"),
            metadata: None,
        }));
    }
    *n += 1;
    let data = json!({"event": event.kind, "data": event.data});
    let message = agent_message(id, context, &format!("event-{n}"), vec![Part::data(data)]);
    Some(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: id.to_owned(),
        context_id: context.to_owned(),
        status: TaskStatus {
            state: TaskState::Working,
            message: Some(message),
            timestamp: Some(timestamp(now_ms())),
        },
        metadata: None,
    }))
}
