//! Every enum spelling on the wire, and the operations' and errors' tables,
//! against the proto (`specification/a2a.proto`) and spec §5.3–5.4, §9.5.

use a2a_proto::{ErrorKind, Operation, Role, TaskState};

#[test]
fn every_task_state_spelling() {
    let expected = [
        (TaskState::Unspecified, 0, "TASK_STATE_UNSPECIFIED"),
        (TaskState::Submitted, 1, "TASK_STATE_SUBMITTED"),
        (TaskState::Working, 2, "TASK_STATE_WORKING"),
        (TaskState::Completed, 3, "TASK_STATE_COMPLETED"),
        (TaskState::Failed, 4, "TASK_STATE_FAILED"),
        (TaskState::Canceled, 5, "TASK_STATE_CANCELED"),
        (TaskState::InputRequired, 6, "TASK_STATE_INPUT_REQUIRED"),
        (TaskState::Rejected, 7, "TASK_STATE_REJECTED"),
        (TaskState::AuthRequired, 8, "TASK_STATE_AUTH_REQUIRED"),
    ];
    assert_eq!(TaskState::ALL.len(), expected.len());
    for (state, number, name) in expected {
        assert_eq!(serde_json::to_value(state).unwrap(), name);
        assert_eq!(
            serde_json::from_value::<TaskState>(name.into()).unwrap(),
            state
        );
        assert_eq!(
            serde_json::from_value::<TaskState>(number.into()).unwrap(),
            state
        );
        assert_eq!((state.number(), state.as_str()), (number, name));
        assert_eq!(name.parse::<TaskState>(), Ok(state));
    }
    let terminal: Vec<_> = TaskState::ALL.iter().filter(|s| s.is_terminal()).collect();
    assert_eq!(
        terminal,
        [
            &TaskState::Completed,
            &TaskState::Failed,
            &TaskState::Canceled,
            &TaskState::Rejected
        ]
    );
    let interrupted: Vec<_> = TaskState::ALL
        .iter()
        .filter(|s| s.is_interrupted())
        .collect();
    assert_eq!(
        interrupted,
        [&TaskState::InputRequired, &TaskState::AuthRequired]
    );
}

#[test]
fn every_role_spelling() {
    for (role, number, name) in [
        (Role::Unspecified, 0, "ROLE_UNSPECIFIED"),
        (Role::User, 1, "ROLE_USER"),
        (Role::Agent, 2, "ROLE_AGENT"),
    ] {
        assert_eq!(serde_json::to_value(role).unwrap(), name);
        assert_eq!(serde_json::from_value::<Role>(name.into()).unwrap(), role);
        assert_eq!(serde_json::from_value::<Role>(number.into()).unwrap(), role);
    }
    assert_eq!(Role::ALL.len(), 3);
    // v0.3's lowercase spellings are not v1.0's.
    for old in ["user", "agent", "completed", "working"] {
        assert!(serde_json::from_value::<Role>(old.into()).is_err());
        assert!(serde_json::from_value::<TaskState>(old.into()).is_err());
    }
    let err = "user".parse::<Role>().unwrap_err();
    assert_eq!(err.to_string(), "`user` is not a Role value");
}

#[test]
fn the_eleven_operations_are_the_spec_method_names() {
    let names: Vec<&str> = Operation::ALL.iter().map(|op| op.name()).collect();
    assert_eq!(
        names,
        [
            "SendMessage",
            "SendStreamingMessage",
            "GetTask",
            "ListTasks",
            "CancelTask",
            "SubscribeToTask",
            "CreateTaskPushNotificationConfig",
            "GetTaskPushNotificationConfig",
            "ListTaskPushNotificationConfigs",
            "DeleteTaskPushNotificationConfig",
            "GetExtendedAgentCard",
        ]
    );
    for op in Operation::ALL {
        assert_eq!(Operation::from_name(op.name()), Some(op));
    }
    let streaming: Vec<_> = Operation::ALL
        .into_iter()
        .filter(|op| op.is_streaming())
        .collect();
    assert_eq!(
        streaming,
        [Operation::SendStreamingMessage, Operation::SubscribeToTask]
    );
    // v0.3's slash names are gone.
    for old in [
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "sendMessage",
    ] {
        assert_eq!(Operation::from_name(old), None);
    }
}

#[test]
fn the_error_catalogue() {
    // (kind, name, JSON-RPC code, HTTP status, gRPC status, reason): spec
    // §5.4 and §9.5; the standard errors' reasons and HTTP statuses as the
    // Python SDK (a2a-sdk 1.0, `a2a/utils/errors.py`) maps them.
    let table = [
        (
            ErrorKind::TaskNotFound,
            "TaskNotFoundError",
            -32001,
            404,
            "NOT_FOUND",
            "TASK_NOT_FOUND",
        ),
        (
            ErrorKind::TaskNotCancelable,
            "TaskNotCancelableError",
            -32002,
            400,
            "FAILED_PRECONDITION",
            "TASK_NOT_CANCELABLE",
        ),
        (
            ErrorKind::PushNotificationNotSupported,
            "PushNotificationNotSupportedError",
            -32003,
            400,
            "FAILED_PRECONDITION",
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            ErrorKind::UnsupportedOperation,
            "UnsupportedOperationError",
            -32004,
            400,
            "FAILED_PRECONDITION",
            "UNSUPPORTED_OPERATION",
        ),
        (
            ErrorKind::ContentTypeNotSupported,
            "ContentTypeNotSupportedError",
            -32005,
            400,
            "INVALID_ARGUMENT",
            "CONTENT_TYPE_NOT_SUPPORTED",
        ),
        (
            ErrorKind::InvalidAgentResponse,
            "InvalidAgentResponseError",
            -32006,
            500,
            "INTERNAL",
            "INVALID_AGENT_RESPONSE",
        ),
        (
            ErrorKind::ExtendedAgentCardNotConfigured,
            "ExtendedAgentCardNotConfiguredError",
            -32007,
            400,
            "FAILED_PRECONDITION",
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        ),
        (
            ErrorKind::ExtensionSupportRequired,
            "ExtensionSupportRequiredError",
            -32008,
            400,
            "FAILED_PRECONDITION",
            "EXTENSION_SUPPORT_REQUIRED",
        ),
        (
            ErrorKind::VersionNotSupported,
            "VersionNotSupportedError",
            -32009,
            400,
            "FAILED_PRECONDITION",
            "VERSION_NOT_SUPPORTED",
        ),
        (
            ErrorKind::JsonParse,
            "JSONParseError",
            -32700,
            400,
            "INVALID_ARGUMENT",
            "INVALID_REQUEST",
        ),
        (
            ErrorKind::InvalidRequest,
            "InvalidRequestError",
            -32600,
            400,
            "INVALID_ARGUMENT",
            "INVALID_REQUEST",
        ),
        (
            ErrorKind::MethodNotFound,
            "MethodNotFoundError",
            -32601,
            404,
            "NOT_FOUND",
            "METHOD_NOT_FOUND",
        ),
        (
            ErrorKind::InvalidParams,
            "InvalidParamsError",
            -32602,
            400,
            "INVALID_ARGUMENT",
            "INVALID_PARAMS",
        ),
        (
            ErrorKind::Internal,
            "InternalError",
            -32603,
            500,
            "INTERNAL",
            "INTERNAL_ERROR",
        ),
    ];
    assert_eq!(ErrorKind::ALL.len(), table.len());
    for (kind, name, code, http, grpc, reason) in table {
        assert_eq!(
            (
                kind.name(),
                kind.code(),
                kind.http_status(),
                kind.grpc_status(),
                kind.reason()
            ),
            (name, code, http, grpc, reason)
        );
        assert_eq!(ErrorKind::from_code(code), Some(kind));
        assert!(!kind.default_message().is_empty());
        if kind != ErrorKind::JsonParse {
            assert_eq!(ErrorKind::from_reason(reason), Some(kind));
        }
    }
    assert_eq!(ErrorKind::from_code(-32010), None);
}
