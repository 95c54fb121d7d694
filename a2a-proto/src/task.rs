//! Tasks, their status and the events that update them (proto `Task`,
//! `TaskStatus`, `TaskState`, `TaskStatusUpdateEvent`,
//! `TaskArtifactUpdateEvent`, `StreamResponse`, `SendMessageResponse`; spec
//! §4.1–4.2, §3.2.3).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::message::{Artifact, Message};
use crate::wire::{Metadata, is_false, nullable, proto_enum, proto_oneof};

proto_enum! {
    /// Where a task is in its lifecycle (proto `TaskState`): `TASK_STATE_*`
    /// on the wire.
    pub enum TaskState {
        /// `TASK_STATE_UNSPECIFIED`: unknown; the proto default.
        #[default]
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        /// `TASK_STATE_SUBMITTED`: accepted, not started.
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        /// `TASK_STATE_WORKING`: being processed.
        Working = 2 => "TASK_STATE_WORKING",
        /// `TASK_STATE_COMPLETED`: finished successfully (terminal).
        Completed = 3 => "TASK_STATE_COMPLETED",
        /// `TASK_STATE_FAILED`: finished with an error (terminal).
        Failed = 4 => "TASK_STATE_FAILED",
        /// `TASK_STATE_CANCELED`: canceled before completion (terminal).
        Canceled = 5 => "TASK_STATE_CANCELED",
        /// `TASK_STATE_INPUT_REQUIRED`: waits for the user (interrupted).
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        /// `TASK_STATE_REJECTED`: the agent will not do it (terminal).
        Rejected = 7 => "TASK_STATE_REJECTED",
        /// `TASK_STATE_AUTH_REQUIRED`: waits for authentication (interrupted).
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
}

impl TaskState {
    /// Completed, failed, canceled or rejected: the task will not change again.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input or auth required: the task waits for the client.
    pub const fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

/// A task's state at a moment (proto `TaskStatus`): `state`, an optional
/// `message` and an optional `timestamp`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// `state`: required.
    #[serde(default)]
    pub state: TaskState,
    /// `message`: what the agent says with this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// `timestamp`: when the status was recorded, RFC 3339 in UTC
    /// (`2023-10-27T10:00:00Z`; milliseconds where available).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// A status of a state alone.
    pub fn new(state: TaskState) -> Self {
        TaskStatus {
            state,
            ..TaskStatus::default()
        }
    }
}

/// The unit of work of A2A (proto `Task`). Required on the wire: `id` and
/// `status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `id`: chosen by the server.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// `contextId`: the conversation the task belongs to.
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// `status`: the current status.
    pub status: TaskStatus,
    /// `artifacts`: the outputs so far.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub artifacts: Vec<Artifact>,
    /// `history`: the messages of the task, as far as the agent keeps them.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub history: Vec<Message>,
    /// `metadata`: anything the agent attaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Task {
    /// A task with an id, a context and a status; no artifacts or history.
    pub fn new(id: impl Into<String>, context_id: impl Into<String>, status: TaskStatus) -> Self {
        Task {
            id: id.into(),
            context_id: context_id.into(),
            status,
            ..Task::default()
        }
    }
}

/// A change of a task's status, streamed or pushed (proto
/// `TaskStatusUpdateEvent`). Required: `taskId`, `contextId`, `status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// `taskId`: the task that changed.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// `contextId`: its context.
    #[serde(default, alias = "context_id", deserialize_with = "nullable")]
    pub context_id: String,
    /// `status`: the new status.
    pub status: TaskStatus,
    /// `metadata`: anything the agent attaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// An artifact, or a chunk of one, produced by a task (proto
/// `TaskArtifactUpdateEvent`). Required: `taskId`, `contextId`, `artifact`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// `taskId`: the task it belongs to.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// `contextId`: its context.
    #[serde(default, alias = "context_id", deserialize_with = "nullable")]
    pub context_id: String,
    /// `artifact`: the artifact or chunk.
    pub artifact: Artifact,
    /// `append`: the parts extend the artifact of the same id sent before.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub append: bool,
    /// `lastChunk`: this is the artifact's last chunk.
    #[serde(
        default,
        alias = "last_chunk",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub last_chunk: bool,
    /// `metadata`: anything the agent attaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

proto_oneof! {
    /// One item of a stream (`SendStreamingMessage`, `SubscribeToTask`) and
    /// the body of a push notification (proto `StreamResponse`): an object
    /// with exactly one of `task`, `message`, `statusUpdate`,
    /// `artifactUpdate`.
    pub enum StreamResponse via StreamResponseWire {
        /// `task`: the task's current state.
        Task(Task) as task = "task",
        /// `message`: a message from the agent.
        Message(Message) as message = "message",
        /// `statusUpdate`: the task's status changed.
        StatusUpdate(TaskStatusUpdateEvent) as status_update = "statusUpdate" | "status_update",
        /// `artifactUpdate`: an artifact was produced or extended.
        ArtifactUpdate(TaskArtifactUpdateEvent) as artifact_update = "artifactUpdate" | "artifact_update",
    }
}

proto_oneof! {
    /// The result of `SendMessage` (proto `SendMessageResponse`): an object
    /// with exactly one of `task` and `message`.
    pub enum SendMessageResponse via SendMessageResponseWire {
        /// `task`: the task the message created or continued.
        Task(Task) as task = "task",
        /// `message`: a direct answer, no task.
        Message(Message) as message = "message",
    }
}

impl StreamResponse {
    /// The id of the task this item is about, if it is about one.
    pub fn task_id(&self) -> Option<&str> {
        let id = match self {
            StreamResponse::Task(task) => &task.id,
            StreamResponse::Message(message) => &message.task_id,
            StreamResponse::StatusUpdate(event) => &event.task_id,
            StreamResponse::ArtifactUpdate(event) => &event.task_id,
        };
        (!id.is_empty()).then_some(id.as_str())
    }
}
