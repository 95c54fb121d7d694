//! What a turn of a task's skill comes to: the skill's result, read as A2A.
//!
//! Any skill's output becomes the task's `output` artifact. A skill written
//! for A2A may say more with an output object holding `a2a` (docs/a2a.md):
//!
//! ```json
//! {"a2a": {"state": "input-required",
//!          "message": [{"text": "Which city?"}],
//!          "artifacts": [{"artifactId": "a1", "parts": [{"text": "…"}]}],
//!          "direct": false}}
//! ```
//!
//! `state` is `completed` (the default), `input-required` (the client's
//! next message to the task is the skill's next turn), `rejected` or
//! `failed`; `message` the parts of the status message; `artifacts` the
//! task's artifacts instead of `output`; `direct: true` answers with the
//! message itself instead of a task.

use a2a_proto::{A2aError, Artifact, ErrorKind, Message, Part, TaskState};
use a2e_proto::SkillResult;
use serde::Deserialize;
use serde_json::Value;

use crate::tasks::{agent_message, output_artifact};

/// The key of a skill's output object that speaks A2A.
pub const A2A_KEY: &str = "a2a";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Said {
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    message: Vec<Part>,
    #[serde(default)]
    artifacts: Vec<Artifact>,
    #[serde(default)]
    direct: bool,
}

/// What one turn of a task's skill came to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    /// The task's state after it.
    pub state: TaskState,
    /// The status message (an agent message of the task).
    pub message: Option<Message>,
    /// The task's artifacts (a completed task's).
    pub artifacts: Vec<Artifact>,
    /// The message is the answer, no task is shown.
    pub direct: bool,
}

/// The turn `result` of `skill` came to, for task `task` of `context`.
pub(crate) fn turn(skill: &str, result: &SkillResult, task: &str, context: &str) -> Turn {
    let text = |t: String| Some(agent_message(task, context, "status", vec![Part::text(t)]));
    if !result.success {
        let error = result
            .error
            .clone()
            .unwrap_or_else(|| "the skill failed".into());
        return Turn {
            state: TaskState::Failed,
            message: text(error),
            artifacts: Vec::new(),
            direct: false,
        };
    }
    match said(&result.data) {
        None => Turn {
            state: TaskState::Completed,
            message: None,
            artifacts: vec![output_artifact(skill, result)],
            direct: false,
        },
        Some(Err(e)) => Turn {
            state: TaskState::Failed,
            message: text(e.message),
            artifacts: Vec::new(),
            direct: false,
        },
        Some(Ok(said)) => {
            let state = match said.state.as_deref() {
                None | Some("completed") => TaskState::Completed,
                Some("input-required") => TaskState::InputRequired,
                Some("rejected") => TaskState::Rejected,
                _ => TaskState::Failed,
            };
            let message = (!said.message.is_empty())
                .then(|| agent_message(task, context, "status", said.message));
            Turn {
                state,
                message,
                artifacts: said.artifacts,
                direct: said.direct && state == TaskState::Completed,
            }
        }
    }
}

/// The `a2a` object of a skill's output, if it has one: read, or why not.
fn said(data: &Value) -> Option<Result<Said, A2aError>> {
    let object = data.as_object()?.get(A2A_KEY)?;
    let said = serde_json::from_value::<Said>(object.clone()).map_err(|e| {
        A2aError::new(
            ErrorKind::Internal,
            format!("the skill's output says `a2a` but is none: {e}"),
        )
    });
    Some(said.and_then(|said| match said.state.as_deref() {
        None | Some("completed" | "input-required" | "rejected" | "failed") => Ok(said),
        Some(other) => Err(A2aError::new(
            ErrorKind::Internal,
            format!(
                "the skill's output says state `{other}` (completed, input-required, rejected or failed)"
            ),
        )),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(data: Value) -> SkillResult {
        SkillResult::ok(data)
    }

    #[test]
    fn any_output_is_the_output_artifact() {
        let turn = turn("wc", &ok(json!({"words": 2})), "t", "c");
        assert_eq!(turn.state, TaskState::Completed);
        assert_eq!(turn.artifacts[0].artifact_id, "output");
        assert!(turn.message.is_none() && !turn.direct);
    }

    #[test]
    fn an_output_that_speaks_a2a_is_taken_as_it_says() {
        let asked = json!({"a2a": {"state": "input-required", "message": [{"text": "Which?"}]}});
        let asked = turn("s", &ok(asked), "t", "c");
        assert_eq!(asked.state, TaskState::InputRequired);
        assert_eq!(asked.message.unwrap().parts[0].as_text(), Some("Which?"));
        let files = json!({"a2a": {"artifacts": [{"artifactId": "f", "parts": [
            {"url": "https://example.com/o.txt", "filename": "o.txt", "mediaType": "text/plain"}]}]}});
        let files = turn("s", &ok(files), "t", "c");
        assert_eq!(files.state, TaskState::Completed);
        assert_eq!(files.artifacts[0].artifact_id, "f");
        let direct = json!({"a2a": {"direct": true, "message": [{"text": "hi"}]}});
        assert!(turn("s", &ok(direct), "t", "c").direct);
        let rejected = turn("s", &ok(json!({"a2a": {"state": "rejected"}})), "t", "c");
        assert_eq!(rejected.state, TaskState::Rejected);
        let odd = turn("s", &ok(json!({"a2a": {"state": "dreaming"}})), "t", "c");
        assert_eq!(odd.state, TaskState::Failed);
        assert!(
            odd.message.unwrap().parts[0]
                .as_text()
                .unwrap()
                .contains("dreaming")
        );
        let failed = turn(
            "s",
            &SkillResult::failed(a2e_proto::ErrorCode::SKILL_ERROR, "no"),
            "t",
            "c",
        );
        assert_eq!(failed.state, TaskState::Failed);
    }
}
