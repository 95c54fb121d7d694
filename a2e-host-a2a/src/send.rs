//! `SendMessage` and `SendStreamingMessage`: a message becomes a task, a
//! run of the journal, whose work runs on its own (`turns`); a message to a
//! task answers its question.

use std::sync::Arc;

use a2a_proto::{
    A2aError, ErrorKind, Message, PartContent, SendMessageRequest, StreamResponse, Task, TaskState,
    TaskStatus, Validate,
};
use a2e_host_runs::task_run;
use a2e_journal::{RunKind, RunStatus};
use serde_json::{Map, Value, json};

use crate::A2aAgent;
use crate::tasks::timestamp;

/// The key of a message's (or a request's) `metadata` that names the skill
/// the message is for.
pub const SKILL_KEY: &str = "skill";

/// Who the journal says asked for an A2A task.
const AGENT: &str = "a2a";

/// A task just started here: its first state, its events to come (from
/// the first), and what fires once its end is journaled.
pub(crate) struct Started {
    pub task: Task,
    /// Its events, when it runs here.
    pub events: Option<tokio::sync::broadcast::Receiver<StreamResponse>>,
    /// Fires once its end is journaled, when it runs here.
    pub done: Option<tokio_util::sync::CancellationToken>,
}

/// Whether a part of `media_type` is one a skill takes: JSON or text (a
/// part that names none is taken as its kind says).
fn taken(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or_default().trim();
    essence.is_empty()
        || essence.starts_with("text/")
        || essence == "application/json"
        || essence.ends_with("+json")
}

/// The skill's arguments in `message`: its first data part that holds an
/// object, else `{"text": …}` of its text parts (joined by new lines). A
/// file part (bytes or a URL), or a part of another media type, is refused:
/// no skill takes files, and a part left out unread would change what the
/// client asked.
pub fn arguments_of(message: &Message) -> Result<Map<String, Value>, A2aError> {
    let refused = |what: String| {
        A2aError::new(
            ErrorKind::ContentTypeNotSupported,
            format!("{what}: this agent's skills take JSON (a data part) or text parts"),
        )
    };
    let mut object = None;
    let mut texts = Vec::new();
    for (i, part) in message.parts.iter().enumerate() {
        if !taken(&part.media_type) {
            return Err(refused(format!("part {i} is `{}`", part.media_type)));
        }
        match &part.content {
            PartContent::Data(Value::Object(map)) => {
                object.get_or_insert_with(|| map.clone());
            }
            PartContent::Data(_) => {}
            PartContent::Text(text) => texts.push(text.as_str()),
            PartContent::Raw(_) | PartContent::Url(_) => {
                return Err(refused(format!("part {i} is a file")));
            }
        }
    }
    if let Some(object) = object {
        return Ok(object);
    }
    if texts.is_empty() {
        return Err(refused(
            "the message has neither a data part holding an object nor a text part".into(),
        ));
    }
    let mut arguments = Map::new();
    arguments.insert("text".into(), Value::from(texts.join("\n")));
    Ok(arguments)
}

/// The skill `req` is for: `metadata.skill` of its message or of itself,
/// or the agent's only skill.
fn skill_of(agent: &A2aAgent, req: &SendMessageRequest) -> Result<String, A2aError> {
    let named = [req.message.metadata.as_ref(), req.metadata.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|m| m.get(SKILL_KEY));
    let offered: Vec<String> = crate::card::skills(&agent.host)
        .into_iter()
        .map(|def| def.name)
        .collect();
    match named {
        Some(Value::String(name)) if offered.contains(name) => Ok(name.clone()),
        Some(Value::String(name)) => Err(A2aError::new(
            ErrorKind::InvalidParams,
            format!(
                "metadata.skill names `{name}`, which this agent does not offer; it offers: {}",
                offered.join(", ")
            ),
        )),
        Some(other) => Err(A2aError::new(
            ErrorKind::InvalidParams,
            format!("metadata.skill must be a skill's id (a string), not {other}"),
        )),
        None => match (offered.as_slice(), &agent.host.config().a2a.default_skill) {
            (_, Some(default)) if offered.contains(default) => Ok(default.clone()),
            ([only], _) => Ok(only.clone()),
            _ => Err(A2aError::new(
                ErrorKind::InvalidParams,
                format!(
                    "name the skill in the message's metadata.skill (or set [a2a] default_skill); this agent offers: {}",
                    offered.join(", ")
                ),
            )),
        },
    }
}

/// Starts the task `req` asks for.
pub(crate) async fn start(
    agent: &Arc<A2aAgent>,
    req: &SendMessageRequest,
) -> Result<Started, A2aError> {
    let violations = req.violations();
    if !violations.is_empty() {
        return Err(A2aError::invalid_params(violations));
    }
    if !req.message.task_id.is_empty() {
        return resume(agent, &req.message).await;
    }
    let arguments = arguments_of(&req.message)?;
    let skill = skill_of(agent, req)?;
    let push = req
        .configuration
        .as_ref()
        .and_then(|c| c.task_push_notification_config.clone());
    if let Some(push) = &push {
        crate::push::allowed(&agent.host, &push.url)?;
    }
    let mut message = req.message.clone();
    if message.context_id.is_empty() {
        message.context_id = uuid::Uuid::new_v4().to_string();
    }
    let context = message.context_id.clone();
    let request = json!({
        "skill": skill,
        "arguments": arguments,
        "context_id": context,
        "message": message,
    });
    let run = task_run::begin_as(&agent.host, RunKind::A2aTask, AGENT, request)
        .await
        .map_err(|e| A2aError::new(ErrorKind::Internal, format!("run journal: {e}")))?
        .ok_or_else(|| {
            A2aError::new(
                ErrorKind::UnsupportedOperation,
                "this host journals no runs, and its tasks are runs: it takes no messages",
            )
        })?;
    let id = run.run_id().to_string();
    let running = agent.live.start(&id, run.cancelled());
    let (events, done) = (Some(running.events.subscribe()), Some(running.done.clone()));
    tokio::spawn(crate::push::deliver(
        agent.clone(),
        run.run_id().clone(),
        running.events.subscribe(),
    ));
    if let Some(mut push) = push {
        push.task_id.clone_from(&id);
        // Its URL was checked: only the journal can fail here, and the
        // task goes on without its webhook rather than not at all.
        if let Err(e) = crate::push::create(agent, push).await {
            tracing::warn!(task = %id, "a2a: the message's push config was not set: {}", e.message);
        }
    }
    message.task_id = id.clone();
    let task = Task {
        history: vec![message.clone()],
        ..Task::new(
            &id,
            &context,
            TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: Some(timestamp(now_ms())),
            },
        )
    };
    let work = crate::turns::Work {
        agent: agent.clone(),
        run,
        running,
        skill,
        arguments,
        message,
        id,
        context,
    };
    // The task's work hangs under the request that started it.
    tokio::spawn(tracing::Instrument::instrument(
        work.drive(),
        tracing::Span::current(),
    ));
    Ok(Started { task, events, done })
}

/// A message to task `message.task_id`: the answer to the question it
/// waits on (`input-required`); the task goes on from there.
async fn resume(agent: &Arc<A2aAgent>, message: &Message) -> Result<Started, A2aError> {
    let id = &message.task_id;
    let state = crate::tasks::find(&agent.host, id).await?;
    if state.summary.status != RunStatus::Running {
        return Err(A2aError::new(
            ErrorKind::UnsupportedOperation,
            format!("task `{id}` has ended: a task that ended takes no more messages"),
        ));
    }
    let context = state
        .request
        .get("context_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !message.context_id.is_empty() && message.context_id != context {
        return Err(A2aError::new(
            ErrorKind::InvalidParams,
            format!(
                "contextId `{}` is not task `{id}`'s (`{context}`)",
                message.context_id
            ),
        ));
    }
    let journal = agent
        .host
        .journal()
        .ok_or_else(|| A2aError::of(ErrorKind::TaskNotFound))?;
    // Subscribed before the answer is journaled: nothing after it is lost.
    let running = agent.live.get(id);
    let events = running.as_ref().map(|r| r.events.subscribe());
    let done = running.map(|r| r.done);
    let mut message = message.clone();
    message.context_id = context.to_owned();
    crate::input::answer(journal, &state, &message).await?;
    if let Some(running) = agent.live.get(id) {
        running.wake.notify_one();
    }
    let task = crate::tasks::get(&agent.host, id, None).await?;
    Ok(Started { task, events, done })
}

/// Milliseconds since the Unix epoch now.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: serde_json::Value) -> Message {
        a2a_proto::decode_value(json!({"messageId": "m", "role": "ROLE_USER", "parts": parts}))
            .unwrap()
    }

    #[test]
    fn arguments_are_the_first_object_or_the_texts() {
        let data = message(json!([{"text": "ignored"}, {"data": {"word": "hi"}}]));
        assert_eq!(
            Value::Object(arguments_of(&data).unwrap()),
            json!({"word": "hi"})
        );
        let texts = message(json!([{"text": "one"}, {"data": [1, 2]}, {"text": "two"}]));
        assert_eq!(
            Value::Object(arguments_of(&texts).unwrap()),
            json!({"text": "one\ntwo"})
        );
        let file = message(json!([{"text": "see"}, {"url": "https://example.com/a.png"}]));
        let error = arguments_of(&file).unwrap_err();
        assert_eq!(error.kind, ErrorKind::ContentTypeNotSupported);
        assert!(
            error.message.contains("part 1 is a file"),
            "{}",
            error.message
        );
        let odd = message(json!([{"raw": "dGNr", "mediaType": "application/x-unknown"}]));
        let error = arguments_of(&odd).unwrap_err();
        assert!(
            error.message.contains("application/x-unknown"),
            "{}",
            error.message
        );
        let markdown = message(json!([{"text": "# hi", "mediaType": "text/markdown"}]));
        assert!(arguments_of(&markdown).is_ok());
        let neither = message(json!([{"data": [1]}]));
        assert!(arguments_of(&neither).is_err());
    }
}
