//! JSON-RPC framing of what a provider answers: results, `acmp/error`s, and the standard
//! errors of malformed messages, each naming the task and the field concerned.

use serde_json::{Value, json};

use crate::{AcmpError, ErrorCode};

/// JSON-RPC: the message is not JSON.
pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
/// JSON-RPC: the message is not a request or notification.
pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
/// JSON-RPC: unknown method.
pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
/// JSON-RPC: params of the wrong shape.
pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);

/// An `invalid params` error about `task_id` (empty when unknown), naming `field`.
pub fn invalid_params(task_id: &str, field: &str, message: impl Into<String>) -> AcmpError {
    AcmpError::new(INVALID_PARAMS, task_id, message).with_data("field", field)
}

/// A success response.
pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn error_response(id: &Value, error: &AcmpError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// A notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// The `task_id` of a message's params, when it is a string.
pub fn task_id_of(params: &Value) -> &str {
    params.get("task_id").and_then(Value::as_str).unwrap_or("")
}

/// Decodes `params` as a `T`, or the `invalid params` error naming the field that is wrong.
pub fn decode_params<T: serde::de::DeserializeOwned>(
    method: &str,
    params: &Value,
) -> Result<T, AcmpError> {
    let task_id = task_id_of(params).to_owned();
    if !params.is_object() {
        return Err(invalid_params(
            &task_id,
            "params",
            format!("{method}: params: must be an object"),
        ));
    }
    crate::decode::from_value(params).map_err(|e| {
        let field = if e.path.is_empty() {
            // serde names a missing field only in its message.
            missing_field(&e.message).unwrap_or("params").to_owned()
        } else {
            e.path.clone()
        };
        invalid_params(
            &task_id,
            &field,
            format!("{method}: {field}: {}", e.message),
        )
    })
}

/// The field of serde's "missing field `x`" message.
fn missing_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split('`').next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InvokeParams;

    #[test]
    fn bad_params_name_their_field_and_task() {
        let e = decode_params::<InvokeParams>("acmp/invoke", &json!({"task_id": "t"})).unwrap_err();
        assert_eq!(e.code, INVALID_PARAMS);
        let data = e.data.unwrap();
        assert_eq!(data.task_id, "t");
        assert_eq!(data.extra["field"], "capability");
        let e = decode_params::<InvokeParams>(
            "acmp/invoke",
            &json!({"task_id": "t", "capability": "c", "timeout_ms": "soon"}),
        )
        .unwrap_err();
        assert_eq!(e.data.unwrap().extra["field"], "timeout_ms");
        let e = decode_params::<InvokeParams>("acmp/invoke", &json!([1])).unwrap_err();
        assert_eq!(e.data.unwrap().extra["field"], "params");
    }
}
