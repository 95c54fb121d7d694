//! The eleven operations (spec §3.1, §5.3): their names, which of them
//! stream, and a typed request of any of them.

use serde_json::Value;

use crate::decode::{DecodeError, decode_value};
use crate::push::TaskPushNotificationConfig;
use crate::requests::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest,
};

/// An A2A operation. Its [`name`](Self::name) is the JSON-RPC method and the
/// gRPC method (`SendMessage`, not v0.3's `message/send`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `SendMessage`: [`SendMessageRequest`] → [`crate::SendMessageResponse`].
    SendMessage,
    /// `SendStreamingMessage`: [`SendMessageRequest`] → a stream of
    /// [`crate::StreamResponse`].
    SendStreamingMessage,
    /// `GetTask`: [`GetTaskRequest`] → [`crate::Task`].
    GetTask,
    /// `ListTasks`: [`ListTasksRequest`] → [`crate::ListTasksResponse`].
    ListTasks,
    /// `CancelTask`: [`CancelTaskRequest`] → [`crate::Task`].
    CancelTask,
    /// `SubscribeToTask`: [`SubscribeToTaskRequest`] → a stream of
    /// [`crate::StreamResponse`].
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig`: [`TaskPushNotificationConfig`] →
    /// [`TaskPushNotificationConfig`].
    CreateTaskPushNotificationConfig,
    /// `GetTaskPushNotificationConfig`: [`GetTaskPushNotificationConfigRequest`]
    /// → [`TaskPushNotificationConfig`].
    GetTaskPushNotificationConfig,
    /// `ListTaskPushNotificationConfigs`:
    /// [`ListTaskPushNotificationConfigsRequest`] →
    /// [`crate::ListTaskPushNotificationConfigsResponse`].
    ListTaskPushNotificationConfigs,
    /// `DeleteTaskPushNotificationConfig`:
    /// [`DeleteTaskPushNotificationConfigRequest`] → empty.
    DeleteTaskPushNotificationConfig,
    /// `GetExtendedAgentCard`: [`GetExtendedAgentCardRequest`] →
    /// [`crate::AgentCard`].
    GetExtendedAgentCard,
}

impl Operation {
    /// Every operation, in the order of spec §3.1.
    pub const ALL: [Operation; 11] = [
        Operation::SendMessage,
        Operation::SendStreamingMessage,
        Operation::GetTask,
        Operation::ListTasks,
        Operation::CancelTask,
        Operation::SubscribeToTask,
        Operation::CreateTaskPushNotificationConfig,
        Operation::GetTaskPushNotificationConfig,
        Operation::ListTaskPushNotificationConfigs,
        Operation::DeleteTaskPushNotificationConfig,
        Operation::GetExtendedAgentCard,
    ];

    /// The JSON-RPC method name (also the gRPC method name).
    pub const fn name(self) -> &'static str {
        match self {
            Operation::SendMessage => "SendMessage",
            Operation::SendStreamingMessage => "SendStreamingMessage",
            Operation::GetTask => "GetTask",
            Operation::ListTasks => "ListTasks",
            Operation::CancelTask => "CancelTask",
            Operation::SubscribeToTask => "SubscribeToTask",
            Operation::CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
            Operation::GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
            Operation::ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
            Operation::DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
            Operation::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }

    /// The operation of a JSON-RPC method name (exact, case-sensitive).
    pub fn from_name(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|op| op.name() == name)
    }

    /// The result is a stream of [`crate::StreamResponse`] (Server-Sent
    /// Events over HTTP) rather than one value.
    pub const fn is_streaming(self) -> bool {
        matches!(
            self,
            Operation::SendStreamingMessage | Operation::SubscribeToTask
        )
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The request of any operation, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum A2aRequest {
    /// `SendMessage`.
    SendMessage(SendMessageRequest),
    /// `SendStreamingMessage`.
    SendStreamingMessage(SendMessageRequest),
    /// `GetTask`.
    GetTask(GetTaskRequest),
    /// `ListTasks`.
    ListTasks(ListTasksRequest),
    /// `CancelTask`.
    CancelTask(CancelTaskRequest),
    /// `SubscribeToTask`.
    SubscribeToTask(SubscribeToTaskRequest),
    /// `CreateTaskPushNotificationConfig`.
    CreateTaskPushNotificationConfig(TaskPushNotificationConfig),
    /// `GetTaskPushNotificationConfig`.
    GetTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest),
    /// `ListTaskPushNotificationConfigs`.
    ListTaskPushNotificationConfigs(ListTaskPushNotificationConfigsRequest),
    /// `DeleteTaskPushNotificationConfig`.
    DeleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest),
    /// `GetExtendedAgentCard`.
    GetExtendedAgentCard(GetExtendedAgentCardRequest),
}

impl A2aRequest {
    /// Decodes an operation's request from its JSON (JSON-RPC `params`, an
    /// HTTP body). Absent params (`null`) are an empty object, so
    /// `GetExtendedAgentCard` needs none.
    pub fn decode(operation: Operation, params: Value) -> Result<A2aRequest, DecodeError> {
        let params = if params.is_null() {
            Value::Object(serde_json::Map::new())
        } else {
            params
        };
        Ok(match operation {
            Operation::SendMessage => A2aRequest::SendMessage(decode_value(params)?),
            Operation::SendStreamingMessage => {
                A2aRequest::SendStreamingMessage(decode_value(params)?)
            }
            Operation::GetTask => A2aRequest::GetTask(decode_value(params)?),
            Operation::ListTasks => A2aRequest::ListTasks(decode_value(params)?),
            Operation::CancelTask => A2aRequest::CancelTask(decode_value(params)?),
            Operation::SubscribeToTask => A2aRequest::SubscribeToTask(decode_value(params)?),
            Operation::CreateTaskPushNotificationConfig => {
                A2aRequest::CreateTaskPushNotificationConfig(decode_value(params)?)
            }
            Operation::GetTaskPushNotificationConfig => {
                A2aRequest::GetTaskPushNotificationConfig(decode_value(params)?)
            }
            Operation::ListTaskPushNotificationConfigs => {
                A2aRequest::ListTaskPushNotificationConfigs(decode_value(params)?)
            }
            Operation::DeleteTaskPushNotificationConfig => {
                A2aRequest::DeleteTaskPushNotificationConfig(decode_value(params)?)
            }
            Operation::GetExtendedAgentCard => {
                A2aRequest::GetExtendedAgentCard(decode_value(params)?)
            }
        })
    }

    /// The operation this is a request of.
    pub fn operation(&self) -> Operation {
        match self {
            A2aRequest::SendMessage(_) => Operation::SendMessage,
            A2aRequest::SendStreamingMessage(_) => Operation::SendStreamingMessage,
            A2aRequest::GetTask(_) => Operation::GetTask,
            A2aRequest::ListTasks(_) => Operation::ListTasks,
            A2aRequest::CancelTask(_) => Operation::CancelTask,
            A2aRequest::SubscribeToTask(_) => Operation::SubscribeToTask,
            A2aRequest::CreateTaskPushNotificationConfig(_) => {
                Operation::CreateTaskPushNotificationConfig
            }
            A2aRequest::GetTaskPushNotificationConfig(_) => {
                Operation::GetTaskPushNotificationConfig
            }
            A2aRequest::ListTaskPushNotificationConfigs(_) => {
                Operation::ListTaskPushNotificationConfigs
            }
            A2aRequest::DeleteTaskPushNotificationConfig(_) => {
                Operation::DeleteTaskPushNotificationConfig
            }
            A2aRequest::GetExtendedAgentCard(_) => Operation::GetExtendedAgentCard,
        }
    }

    /// The request's `tenant` (empty for none).
    pub fn tenant(&self) -> &str {
        match self {
            A2aRequest::SendMessage(r) | A2aRequest::SendStreamingMessage(r) => &r.tenant,
            A2aRequest::GetTask(r) => &r.tenant,
            A2aRequest::ListTasks(r) => &r.tenant,
            A2aRequest::CancelTask(r) => &r.tenant,
            A2aRequest::SubscribeToTask(r) => &r.tenant,
            A2aRequest::CreateTaskPushNotificationConfig(r) => &r.tenant,
            A2aRequest::GetTaskPushNotificationConfig(r) => &r.tenant,
            A2aRequest::ListTaskPushNotificationConfigs(r) => &r.tenant,
            A2aRequest::DeleteTaskPushNotificationConfig(r) => &r.tenant,
            A2aRequest::GetExtendedAgentCard(r) => &r.tenant,
        }
    }

    /// The request as JSON (JSON-RPC `params`, an HTTP body).
    pub fn to_params(&self) -> Value {
        let value = match self {
            A2aRequest::SendMessage(r) | A2aRequest::SendStreamingMessage(r) => {
                serde_json::to_value(r)
            }
            A2aRequest::GetTask(r) => serde_json::to_value(r),
            A2aRequest::ListTasks(r) => serde_json::to_value(r),
            A2aRequest::CancelTask(r) => serde_json::to_value(r),
            A2aRequest::SubscribeToTask(r) => serde_json::to_value(r),
            A2aRequest::CreateTaskPushNotificationConfig(r) => serde_json::to_value(r),
            A2aRequest::GetTaskPushNotificationConfig(r) => serde_json::to_value(r),
            A2aRequest::ListTaskPushNotificationConfigs(r) => serde_json::to_value(r),
            A2aRequest::DeleteTaskPushNotificationConfig(r) => serde_json::to_value(r),
            A2aRequest::GetExtendedAgentCard(r) => serde_json::to_value(r),
        };
        // These types hold only strings, numbers, booleans and string-keyed
        // maps, which serde_json always serializes.
        value.unwrap_or(Value::Null)
    }
}
