//! The proto's REQUIRED fields and bounds, checked after decoding.

use a2a_proto::{
    A2aRequest, ErrorKind, GetTaskRequest, ListTasksRequest, Message, Operation, Role,
    SendMessageConfiguration, SendMessageRequest, TaskPushNotificationConfig, Validate,
};
use serde_json::json;

fn fields(value: &impl Validate) -> Vec<String> {
    value.violations().into_iter().map(|v| v.field).collect()
}

#[test]
fn a_message_without_its_required_fields() {
    // Spec §11.2's example request has no messageId, which the proto requires.
    let request: SendMessageRequest = a2a_proto::decode(
        br#"{"message": {"role": "ROLE_USER", "parts": [{"text": "Find restaurants near me"}]}}"#,
    )
    .unwrap();
    assert_eq!(fields(&request), ["message.messageId"]);
    let empty = Message::default();
    assert_eq!(fields(&empty), ["messageId", "role", "parts"]);
    let error = SendMessageRequest::new(empty).validate().unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidParams);
    assert_eq!(
        error.details[1]["fieldViolations"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        Message::new("m", Role::Agent, vec![a2a_proto::Part::text("x")]).validate(),
        Ok(())
    );
}

#[test]
fn configuration_bounds_and_push_configs() {
    let mut request = SendMessageRequest::new(Message::user_text("m", "hi"));
    request.configuration = Some(SendMessageConfiguration {
        history_length: Some(-1),
        task_push_notification_config: Some(TaskPushNotificationConfig::default()),
        ..Default::default()
    });
    assert_eq!(
        fields(&request),
        [
            "configuration.historyLength",
            "configuration.taskPushNotificationConfig.url"
        ]
    );
}

#[test]
fn list_tasks_page_size_is_1_to_100() {
    // Spec §6.5's validation error example: pageSize 150, historyLength -5.
    let request = ListTasksRequest {
        page_size: Some(150),
        history_length: Some(-5),
        ..Default::default()
    };
    let found = request.violations();
    assert_eq!(found[0].field, "pageSize");
    assert_eq!(found[0].description, "must be between 1 and 100, got 150");
    assert_eq!(found[1].field, "historyLength");
    let fine = ListTasksRequest {
        page_size: Some(100),
        ..Default::default()
    };
    assert_eq!(fine.validate(), Ok(()));
}

#[test]
fn requests_of_every_operation_need_their_ids() {
    assert_eq!(fields(&GetTaskRequest::default()), ["id"]);
    let create = A2aRequest::decode(
        Operation::CreateTaskPushNotificationConfig,
        json!({"url": "https://client.example/hook"}),
    )
    .unwrap();
    assert_eq!(fields(&create), ["taskId"]);
    for operation in [
        Operation::GetTaskPushNotificationConfig,
        Operation::DeleteTaskPushNotificationConfig,
    ] {
        let request = A2aRequest::decode(operation, json!({})).unwrap();
        assert_eq!(fields(&request), ["taskId", "id"], "{operation}");
    }
    let card = A2aRequest::decode(Operation::GetExtendedAgentCard, json!(null)).unwrap();
    assert_eq!(card.validate(), Ok(()));
}
