//! Decoding errors name the bad field's path, and ProtoJSON's leniencies
//! (unknown fields, nulls, snake_case names, enum numbers) are accepted.

use a2a_proto::{
    A2aError, AgentCard, ErrorKind, Part, PartContent, SecurityScheme, SendMessageRequest,
    StreamResponse, Task, TaskState, decode,
};

fn error_of<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    json: &str,
) -> a2a_proto::DecodeError {
    decode::<T>(json.as_bytes()).expect_err("must not decode")
}

#[test]
fn a_misspelled_task_state_names_its_path_and_the_spellings() {
    let e = error_of::<Task>(r#"{"id": "t", "status": {"state": "COMPLETED"}}"#);
    assert_eq!(e.path, "status.state");
    assert!(e.message.contains("`TASK_STATE_COMPLETED`"), "{e}");
    assert!(!e.syntax);
    assert!(e.to_string().starts_with("`status.state`: "), "{e}");
}

#[test]
fn the_v0_3_role_spelling_is_rejected_at_its_path() {
    let e = error_of::<SendMessageRequest>(
        r#"{"message": {"messageId": "m", "role": "user", "parts": [{"text": "hi"}]}}"#,
    );
    assert_eq!(e.path, "message.role");
    assert!(e.message.contains("`ROLE_USER`"), "{e}");
}

#[test]
fn a_part_with_two_contents_or_none_is_an_error() {
    let e = error_of::<SendMessageRequest>(
        r#"{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}, {"text": "b", "url": "https://x"}]}}"#,
    );
    assert_eq!(e.path, "message.parts[1]");
    assert!(e.message.contains("only one of `text`, `url`"), "{e}");
    let e = error_of::<Part>(r#"{"mediaType": "text/plain"}"#);
    assert!(
        e.message
            .contains("expected one of `text`, `raw`, `url`, `data`"),
        "{e}"
    );
}

#[test]
fn bad_base64_names_the_raw_field() {
    let e = error_of::<SendMessageRequest>(
        r#"{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "not base64!"}]}}"#,
    );
    assert_eq!(e.path, "message.parts[0].raw");
    assert!(e.message.contains("base64"), "{e}");
}

#[test]
fn base64_in_either_alphabet_with_or_without_padding_is_read() {
    for raw in ["+/8=", "+/8", "-_8=", "-_8"] {
        let part: Part = decode(format!(r#"{{"raw": "{raw}"}}"#).as_bytes()).expect(raw);
        assert_eq!(part.content, PartContent::Raw(vec![0xfb, 0xff]), "{raw}");
    }
    // Written in the standard alphabet with padding.
    let json = serde_json::to_string(&Part::raw(vec![0xfb, 0xff])).unwrap();
    assert_eq!(json, r#"{"raw":"+/8="}"#);
}

#[test]
fn a_wrong_type_names_its_path() {
    let e = error_of::<AgentCard>(r#"{"name": "a", "skills": [{"id": "s", "tags": "maps"}]}"#);
    assert_eq!(e.path, "skills[0].tags");
    assert!(
        e.message.starts_with("invalid type: string \"maps\""),
        "{e}"
    );
}

#[test]
fn a_security_scheme_needs_exactly_one_kind() {
    let e = error_of::<AgentCard>(
        r#"{"securitySchemes": {"k": {"apiKeySecurityScheme": {"location": "header", "name": "X"}, "mtlsSecurityScheme": {}}}}"#,
    );
    assert_eq!(e.path, "securitySchemes.k");
    assert!(
        e.message
            .contains("`apiKeySecurityScheme`, `mtlsSecurityScheme`"),
        "{e}"
    );
    // v0.3's OpenAPI-style `{"type": "http", …}` has none of the keys.
    let e = error_of::<AgentCard>(
        r#"{"securitySchemes": {"k": {"type": "http", "scheme": "bearer"}}}"#,
    );
    assert!(e.message.starts_with("expected one of"), "{e}");
}

#[test]
fn a_stream_item_with_two_payloads_is_an_error() {
    let e = error_of::<StreamResponse>(
        r#"{"task": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}}, "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}}"#,
    );
    assert!(e.message.contains("only one of `task`, `message`"), "{e}");
    let e = error_of::<StreamResponse>(r#"{"kind": "status-update"}"#);
    assert!(
        e.message
            .contains("expected one of `task`, `message`, `statusUpdate`, `artifactUpdate`"),
        "{e}"
    );
}

#[test]
fn broken_json_is_a_syntax_error_and_a_parse_error() {
    let e = error_of::<Task>(r#"{"id": "t", "#);
    assert!(e.syntax);
    assert_eq!(A2aError::from(e).kind, ErrorKind::JsonParse);
    let e = error_of::<Task>(r#"{"id": "t", "status": {}} trailing"#);
    assert!(e.syntax);
}

#[test]
fn unknown_fields_and_v0_3_discriminators_are_ignored() {
    let task: Task = decode(
        br#"{"kind": "task", "id": "t", "status": {"state": "TASK_STATE_WORKING"}, "future": {"x": 1}}"#,
    )
    .unwrap();
    assert_eq!(task.id, "t");
    let part: Part = decode(br#"{"kind": "text", "text": "hi"}"#).unwrap();
    assert_eq!(part.as_text(), Some("hi"));
}

#[test]
fn nulls_are_defaults_and_snake_case_names_are_read() {
    let task: Task = decode(
        br#"{"id": "t", "context_id": "c", "status": {"state": "TASK_STATE_WORKING", "message": null}, "artifacts": null, "history": null, "metadata": null}"#,
    )
    .unwrap();
    assert_eq!(task.context_id, "c");
    assert!(task.artifacts.is_empty() && task.history.is_empty() && task.metadata.is_none());
    let scheme: SecurityScheme =
        decode(br#"{"http_auth_security_scheme": {"scheme": "Bearer", "bearer_format": "JWT"}}"#)
            .unwrap();
    assert_eq!(scheme, SecurityScheme::bearer(Some("JWT")));
}

#[test]
fn enum_numbers_are_read_and_unknown_ones_rejected() {
    let task: Task = decode(br#"{"id": "t", "status": {"state": 3}}"#).unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    let e = error_of::<Task>(r#"{"id": "t", "status": {"state": 42}}"#);
    assert_eq!(e.path, "status.state");
    assert!(e.message.contains("invalid value: integer `42`"), "{e}");
}

#[test]
fn decode_errors_become_invalid_params_naming_the_field() {
    let e = error_of::<Task>(r#"{"id": "t", "status": {"state": "DONE"}}"#);
    let error = A2aError::from(e);
    assert_eq!(error.kind, ErrorKind::InvalidParams);
    let bad_request = &error.details[1];
    assert_eq!(bad_request["@type"], a2a_proto::errors::BAD_REQUEST_TYPE);
    assert_eq!(bad_request["fieldViolations"][0]["field"], "status.state");
    assert!(
        error.message.contains("`status.state`"),
        "{}",
        error.message
    );
}
