//! A2A errors in the JSON-RPC and HTTP+JSON shapes of spec §9.5 and §11.6.

use a2a_proto::errors::{BAD_REQUEST_TYPE, ERROR_DOMAIN, ERROR_INFO_TYPE};
use a2a_proto::{A2aError, ErrorKind, FieldViolation, HttpErrorBody, JsonRpcError};
use serde_json::json;

#[test]
fn task_not_found_as_jsonrpc_matches_section_9_5() {
    let error = A2aError::new(ErrorKind::TaskNotFound, "Task not found")
        .with_metadata("taskId", "nonexistent-task-id")
        .with_metadata("timestamp", "2025-11-09T10:30:00.000Z");
    // The example of §9.5, "Example A2A-Specific Error Response".
    let expected = json!({
        "code": -32001,
        "message": "Task not found",
        "data": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "TASK_NOT_FOUND",
            "domain": "a2a-protocol.org",
            "metadata": {"taskId": "nonexistent-task-id", "timestamp": "2025-11-09T10:30:00.000Z"}
        }]
    });
    assert_eq!(serde_json::to_value(error.to_jsonrpc()).unwrap(), expected);
    let back = A2aError::from_jsonrpc(&serde_json::from_value(expected).unwrap());
    assert_eq!(back, error);
    assert_eq!(
        back.error_info_detail().unwrap().metadata["taskId"],
        "nonexistent-task-id"
    );
    assert_eq!(error.to_string(), "TaskNotFoundError: Task not found");
}

#[test]
fn task_not_found_over_http_matches_section_11_6() {
    let error = A2aError::new(
        ErrorKind::TaskNotFound,
        "The specified task ID does not exist or is not accessible",
    )
    .with_metadata("taskId", "task-123")
    .with_metadata("timestamp", "2025-11-09T10:30:00.000Z");
    let (status, body) = error.to_http();
    assert_eq!(status, 404);
    let expected = json!({
        "error": {
            "code": 404,
            "status": "NOT_FOUND",
            "message": "The specified task ID does not exist or is not accessible",
            "details": [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org",
                "metadata": {"taskId": "task-123", "timestamp": "2025-11-09T10:30:00.000Z"}
            }]
        }
    });
    assert_eq!(serde_json::to_value(&body).unwrap(), expected);
    let body: HttpErrorBody = serde_json::from_value(expected).unwrap();
    assert_eq!(A2aError::from_http(404, &body), error);
}

#[test]
fn http_errors_sharing_a_status_are_told_apart_by_reason() {
    for kind in [
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::UnsupportedOperation,
        ErrorKind::VersionNotSupported,
    ] {
        let (status, body) = A2aError::of(kind).to_http();
        assert_eq!(status, 400);
        assert_eq!(A2aError::from_http(status, &body).kind, kind);
    }
    // Without an A2A ErrorInfo the status decides.
    let bare: HttpErrorBody =
        serde_json::from_value(json!({"error": {"code": 404, "message": "nope"}})).unwrap();
    assert_eq!(
        A2aError::from_http(404, &bare).kind,
        ErrorKind::TaskNotFound
    );
    assert_eq!(A2aError::from_http(503, &bare).kind, ErrorKind::Internal);
}

#[test]
fn invalid_params_carries_a_bad_request_as_in_section_9_5() {
    let error = A2aError::invalid_params(vec![FieldViolation {
        field: "message.parts".into(),
        description: "At least one part is required".into(),
    }]);
    let object = serde_json::to_value(error.to_jsonrpc()).unwrap();
    assert_eq!(object["code"], -32602);
    assert_eq!(object["data"][0]["@type"], ERROR_INFO_TYPE);
    assert_eq!(object["data"][0]["reason"], "INVALID_PARAMS");
    assert_eq!(object["data"][0]["domain"], ERROR_DOMAIN);
    assert_eq!(
        object["data"][1],
        json!({
            "@type": BAD_REQUEST_TYPE,
            "fieldViolations": [{"field": "message.parts", "description": "At least one part is required"}]
        })
    );
}

#[test]
fn foreign_jsonrpc_errors_are_kept() {
    // An unknown code, and `data` that is not a list of details.
    let error = A2aError::from_jsonrpc(&JsonRpcError {
        code: -31999,
        message: "quota exceeded".into(),
        data: Some(json!({"retryAfter": 30})),
    });
    assert_eq!(error.kind, ErrorKind::Internal);
    assert_eq!(error.message, "quota exceeded");
    assert_eq!(error.details, [json!({"retryAfter": 30})]);
    // Sent on, it gains the ErrorInfo of its kind in front.
    let details = error.wire_details();
    assert_eq!(details[0]["reason"], "INTERNAL_ERROR");
    assert_eq!(details[1], json!({"retryAfter": 30}));
}
