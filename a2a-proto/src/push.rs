//! Push notification configuration (proto `TaskPushNotificationConfig`,
//! `AuthenticationInfo`; spec §4.3). In v1.0 the config and its task binding
//! are one message: v0.3's nested `pushNotificationConfig` object is gone, its
//! fields (`id`, `url`, `token`, `authentication`) sit next to `taskId`.
//! The webhook's body is a [`crate::StreamResponse`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::nullable;

/// Where and how the agent posts a task's updates (proto
/// `TaskPushNotificationConfig`). The request and the result of
/// `CreateTaskPushNotificationConfig`, the result of
/// `GetTaskPushNotificationConfig`, and (without `taskId`) the push
/// configuration of a `SendMessage`. `url` is required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// `tenant`: routing id from the chosen interface; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `id`: the configuration's id (e.g. a UUID).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
    /// `taskId`: the task; empty inside `SendMessageConfiguration`.
    #[serde(
        default,
        alias = "task_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    /// `url`: the webhook the agent posts to.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// `token`: a token for this task or session, echoed to the webhook.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub token: String,
    /// `authentication`: how the agent authenticates to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl TaskPushNotificationConfig {
    /// A config posting to a URL; everything else empty.
    pub fn new(url: impl Into<String>) -> Self {
        TaskPushNotificationConfig {
            url: url.into(),
            ..TaskPushNotificationConfig::default()
        }
    }
}

/// The credentials the agent sends to a webhook (proto `AuthenticationInfo`),
/// as `Authorization: {scheme} {credentials}`. `scheme` is required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct AuthenticationInfo {
    /// `scheme`: an IANA HTTP authentication scheme (`Bearer`, `Basic`…),
    /// case-insensitive.
    #[serde(default, deserialize_with = "nullable")]
    pub scheme: String,
    /// `credentials`: e.g. the token of a Bearer scheme.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub credentials: String,
}
