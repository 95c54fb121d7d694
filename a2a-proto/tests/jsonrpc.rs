//! The JSON-RPC binding: the requests of spec §9.4 and the envelopes.

use a2a_proto::{
    A2aError, A2aRequest, ErrorKind, JsonRpcId, JsonRpcOutcome, JsonRpcRequest, JsonRpcResponse,
    Operation, SendMessageResponse, StreamResponse, TaskState,
};
use serde_json::{Value, json};

fn typed(request: Value) -> Result<A2aRequest, A2aError> {
    JsonRpcRequest::decode(&serde_json::to_vec(&request).unwrap())?.to_a2a()
}

#[test]
fn the_requests_of_section_9_4() {
    let get = typed(json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "task-uuid", "historyLength": 10}})).unwrap();
    let A2aRequest::GetTask(get) = get else {
        panic!("{get:?}")
    };
    assert_eq!(
        (get.id.as_str(), get.history_length),
        ("task-uuid", Some(10))
    );

    let list = typed(json!({"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {"contextId": "context-uuid", "status": "TASK_STATE_WORKING", "pageSize": 50, "pageToken": "cursor-token"}})).unwrap();
    let A2aRequest::ListTasks(list) = list else {
        panic!("{list:?}")
    };
    assert_eq!(list.status, Some(TaskState::Working));
    assert_eq!(
        (list.page_size, list.page_token.as_str()),
        (Some(50), "cursor-token")
    );

    for (method, operation) in [
        ("CancelTask", Operation::CancelTask),
        ("SubscribeToTask", Operation::SubscribeToTask),
    ] {
        let request = typed(
            json!({"jsonrpc": "2.0", "id": "5", "method": method, "params": {"id": "task-uuid"}}),
        )
        .unwrap();
        assert_eq!(request.operation(), operation);
    }

    // GetExtendedAgentCard is sent without params.
    let card = typed(json!({"jsonrpc": "2.0", "id": 6, "method": "GetExtendedAgentCard"})).unwrap();
    assert_eq!(card.operation(), Operation::GetExtendedAgentCard);
    assert_eq!(card.tenant(), "");
}

#[test]
fn a_push_config_request_and_its_tenant() {
    let create = typed(json!({
        "jsonrpc": "2.0", "id": 7, "method": "CreateTaskPushNotificationConfig",
        "params": {"tenant": "acme", "taskId": "t-1", "url": "https://client.example/hook", "token": "tok"}
    }))
    .unwrap();
    assert_eq!(create.tenant(), "acme");
    let A2aRequest::CreateTaskPushNotificationConfig(config) = &create else {
        panic!()
    };
    assert_eq!(
        (config.task_id.as_str(), config.token.as_str()),
        ("t-1", "tok")
    );
    // Encoded again, the request is the same JSON.
    let again = JsonRpcRequest::new(7, &create);
    assert_eq!(again.params.unwrap()["url"], "https://client.example/hook");
}

#[test]
fn bad_envelopes_map_to_jsonrpc_errors() {
    let not_json = JsonRpcRequest::decode(b"{").unwrap_err();
    assert_eq!(not_json.kind.code(), -32700);
    let wrong_version =
        JsonRpcRequest::decode(br#"{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}"#).unwrap_err();
    assert_eq!(wrong_version.kind, ErrorKind::InvalidRequest);
    assert!(
        wrong_version.message.contains("`jsonrpc`"),
        "{}",
        wrong_version.message
    );
    let no_method = JsonRpcRequest::decode(br#"{"jsonrpc": "2.0", "id": 1}"#).unwrap_err();
    assert_eq!(no_method.kind, ErrorKind::InvalidRequest);
    // v0.3 method names are unknown in v1.0.
    let old = typed(json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}))
        .unwrap_err();
    assert_eq!(
        (old.kind.code(), old.message.as_str()),
        (-32601, "Method not found: message/send")
    );
    let bad = typed(json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"role": "ROLE_USER", "parts": [{"text": 1}]}}})).unwrap_err();
    assert_eq!(bad.kind.code(), -32602);
    assert_eq!(
        bad.details[1]["fieldViolations"][0]["field"],
        "message.parts[0].text"
    );
}

#[test]
fn ids_notifications_and_null() {
    let with_null =
        JsonRpcRequest::decode(br#"{"jsonrpc": "2.0", "id": null, "method": "GetTask"}"#).unwrap();
    assert_eq!(with_null.id, Some(JsonRpcId::Null));
    let notification =
        JsonRpcRequest::decode(br#"{"jsonrpc": "2.0", "method": "GetTask"}"#).unwrap();
    assert_eq!(notification.id, None);
    assert_eq!(
        serde_json::to_value(&notification).unwrap(),
        json!({"jsonrpc": "2.0", "method": "GetTask"})
    );
    let string = JsonRpcRequest::decode(
        br#"{"jsonrpc": "2.0", "id": "unique-request-id", "method": "GetTask"}"#,
    )
    .unwrap();
    assert_eq!(string.id, Some(JsonRpcId::from("unique-request-id")));
}

#[test]
fn responses_with_a_result_or_an_error() {
    // §9.4.1's result holds a SendMessageResponse.
    let text = r#"{"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}}"#;
    let response: JsonRpcResponse<SendMessageResponse> =
        a2a_proto::decode(text.as_bytes()).unwrap();
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        serde_json::from_str::<Value>(text).unwrap()
    );
    assert!(matches!(
        response.into_result(),
        Ok(SendMessageResponse::Task(_))
    ));

    // §9.5's validation error example.
    let text = r#"{"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Invalid parameters", "data": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "message.parts", "description": "At least one part is required"}]}]}}"#;
    let response: JsonRpcResponse = a2a_proto::decode(text.as_bytes()).unwrap();
    assert!(matches!(&response.outcome, JsonRpcOutcome::Error(e) if e.code == -32602));
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        serde_json::from_str::<Value>(text).unwrap()
    );
    let error = response.into_result().unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidParams);
    assert_eq!(
        error.details[0]["fieldViolations"][0]["field"],
        "message.parts"
    );

    // A streamed item of §9.4.2: a response whose result is a StreamResponse.
    let item = r#"{"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}}"#;
    let item: JsonRpcResponse<StreamResponse> = a2a_proto::decode(item.as_bytes()).unwrap();
    assert!(matches!(
        item.outcome,
        JsonRpcOutcome::Result(StreamResponse::StatusUpdate(_))
    ));

    // Built by a server.
    let error =
        JsonRpcResponse::<Value>::error(JsonRpcId::Null, &A2aError::of(ErrorKind::JsonParse));
    let value = serde_json::to_value(&error).unwrap();
    assert_eq!(
        (value["id"].clone(), value["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    // Neither result nor error is not a response.
    assert!(a2a_proto::decode::<JsonRpcResponse>(br#"{"jsonrpc": "2.0", "id": 1}"#).is_err());
}
