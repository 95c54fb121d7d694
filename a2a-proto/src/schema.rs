//! The JSON Schemas of the wire types (derived with `schemars`), one per
//! message a binding sends: what the project commits under `schemas/a2a/`
//! and checks for drift.

use schemars::JsonSchema;
use serde_json::Value;

use crate::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    HttpErrorBody, JsonRpcRequest, JsonRpcResponse, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig,
};

fn of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
}

/// Every schema, by the name of its type.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("AgentCard", of::<AgentCard>()),
        ("Task", of::<Task>()),
        ("SendMessageRequest", of::<SendMessageRequest>()),
        ("SendMessageResponse", of::<SendMessageResponse>()),
        ("StreamResponse", of::<StreamResponse>()),
        ("GetTaskRequest", of::<GetTaskRequest>()),
        ("ListTasksRequest", of::<ListTasksRequest>()),
        ("ListTasksResponse", of::<ListTasksResponse>()),
        ("CancelTaskRequest", of::<CancelTaskRequest>()),
        ("SubscribeToTaskRequest", of::<SubscribeToTaskRequest>()),
        (
            "TaskPushNotificationConfig",
            of::<TaskPushNotificationConfig>(),
        ),
        (
            "GetTaskPushNotificationConfigRequest",
            of::<GetTaskPushNotificationConfigRequest>(),
        ),
        (
            "ListTaskPushNotificationConfigsRequest",
            of::<ListTaskPushNotificationConfigsRequest>(),
        ),
        (
            "ListTaskPushNotificationConfigsResponse",
            of::<ListTaskPushNotificationConfigsResponse>(),
        ),
        (
            "DeleteTaskPushNotificationConfigRequest",
            of::<DeleteTaskPushNotificationConfigRequest>(),
        ),
        (
            "GetExtendedAgentCardRequest",
            of::<GetExtendedAgentCardRequest>(),
        ),
        ("JsonRpcRequest", of::<JsonRpcRequest>()),
        ("JsonRpcResponse", of::<JsonRpcResponse>()),
        ("HttpErrorBody", of::<HttpErrorBody>()),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_schema_is_an_object_named_for_its_type() {
        for (name, schema) in super::schemas() {
            assert!(schema.is_object(), "{name}");
            assert_eq!(schema["title"], name, "{name}");
        }
    }
}
