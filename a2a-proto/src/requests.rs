//! The request and response messages of the eleven operations (proto
//! `SendMessageRequest`, `SendMessageConfiguration`, `GetTaskRequest`,
//! `ListTasksRequest`, `ListTasksResponse`, `CancelTaskRequest`,
//! `SubscribeToTaskRequest`, `*TaskPushNotificationConfig*Request`,
//! `ListTaskPushNotificationConfigsResponse`, `GetExtendedAgentCardRequest`;
//! spec §3.1–3.2). Every request has an optional `tenant`: the routing id of
//! the interface the client chose (in the path under HTTP+JSON).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::push::TaskPushNotificationConfig;
use crate::task::{Task, TaskState};
use crate::wire::{Metadata, is_false, is_zero, nullable};

/// How a `SendMessage` is to be handled (proto `SendMessageConfiguration`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// `acceptedOutputModes`: media types the client takes in response parts.
    #[serde(
        default,
        alias = "accepted_output_modes",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    /// `taskPushNotificationConfig`: where to push the task's updates (its
    /// `taskId` left empty).
    #[serde(
        default,
        alias = "task_push_notification_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// `historyLength`: at most this many recent messages in the returned
    /// task; absent for no limit, 0 for none.
    #[serde(
        default,
        alias = "history_length",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    /// `returnImmediately`: answer once the task exists instead of waiting
    /// for a terminal or interrupted state (the default, `false`).
    #[serde(
        default,
        alias = "return_immediately",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub return_immediately: bool,
}

/// The request of `SendMessage` and `SendStreamingMessage` (proto
/// `SendMessageRequest`). `message` is required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// `tenant`: routing id; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `message`: what to send.
    pub message: Message,
    /// `configuration`: how to handle it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// `metadata`: anything the client attaches to the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl SendMessageRequest {
    /// A request of a message alone.
    pub fn new(message: Message) -> Self {
        SendMessageRequest {
            tenant: String::new(),
            message,
            configuration: None,
            metadata: None,
        }
    }
}

/// The request of `GetTask` (proto `GetTaskRequest`). `id` is required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// `tenant`: routing id; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `id`: the task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// `historyLength`: at most this many recent messages; absent for no
    /// limit, 0 for none.
    #[serde(
        default,
        alias = "history_length",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
}

/// The request of `ListTasks` (proto `ListTasksRequest`): filters and paging,
/// all optional.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// `tenant`: routing id; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `contextId`: only tasks of this context.
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// `status`: only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// `pageSize`: 1 to 100; the server's default (50) when absent.
    #[serde(default, alias = "page_size", skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// `pageToken`: the `nextPageToken` of the previous page.
    #[serde(
        default,
        alias = "page_token",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub page_token: String,
    /// `historyLength`: at most this many messages in each task's history.
    #[serde(
        default,
        alias = "history_length",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    /// `statusTimestampAfter`: only tasks whose status changed at or after
    /// this RFC 3339 time.
    #[serde(
        default,
        alias = "status_timestamp_after",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_timestamp_after: Option<String>,
    /// `includeArtifacts`: include the tasks' artifacts (default `false`).
    #[serde(
        default,
        alias = "include_artifacts",
        skip_serializing_if = "Option::is_none"
    )]
    pub include_artifacts: Option<bool>,
}

/// The result of `ListTasks` (proto `ListTasksResponse`). All four fields
/// are required and always written; `nextPageToken` is empty on the last
/// page.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// `tasks`: this page.
    #[serde(default, deserialize_with = "nullable")]
    pub tasks: Vec<Task>,
    /// `nextPageToken`: the token of the next page, empty if none.
    #[serde(default, alias = "next_page_token", deserialize_with = "nullable")]
    pub next_page_token: String,
    /// `pageSize`: the page size used.
    #[serde(default, alias = "page_size", deserialize_with = "nullable")]
    pub page_size: i32,
    /// `totalSize`: how many tasks match, over all pages.
    #[serde(default, alias = "total_size", deserialize_with = "nullable")]
    pub total_size: i32,
}

/// The request of `CancelTask` (proto `CancelTaskRequest`). `id` is required.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// `tenant`: routing id; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `id`: the task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// `metadata`: anything the client attaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// The request of `SubscribeToTask` (proto `SubscribeToTaskRequest`). `id`
/// is required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// `tenant`: routing id; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `id`: the task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
}

/// The request of `GetTaskPushNotificationConfig` (proto
/// `GetTaskPushNotificationConfigRequest`). `taskId` and `id` are required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPushNotificationConfigRequest {
    /// `tenant`: routing id; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `taskId`: the task.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// `id`: the configuration.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
}

/// The request of `DeleteTaskPushNotificationConfig` (proto
/// `DeleteTaskPushNotificationConfigRequest`). `taskId` and `id` are
/// required. Its result is `google.protobuf.Empty`: `{}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteTaskPushNotificationConfigRequest {
    /// `tenant`: routing id; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `taskId`: the task.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// `id`: the configuration.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
}

/// The request of `ListTaskPushNotificationConfigs` (proto
/// `ListTaskPushNotificationConfigsRequest`). `taskId` is required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// `tenant`: routing id; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `taskId`: the task.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// `pageSize`: at most this many; 0 for the server's default.
    #[serde(
        default,
        alias = "page_size",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub page_size: i32,
    /// `pageToken`: the `nextPageToken` of the previous page.
    #[serde(
        default,
        alias = "page_token",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub page_token: String,
}

/// The result of `ListTaskPushNotificationConfigs` (proto
/// `ListTaskPushNotificationConfigsResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// `configs`: this page.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// `nextPageToken`: the token of the next page, empty if none.
    #[serde(
        default,
        alias = "next_page_token",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub next_page_token: String,
}

/// The request of `GetExtendedAgentCard` (proto
/// `GetExtendedAgentCardRequest`); its result is an
/// [`AgentCard`](crate::AgentCard).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    /// `tenant`: routing id; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
}
