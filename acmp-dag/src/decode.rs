//! Decoding JSON into the types of this crate, with errors that name the JSON path and the
//! task concerned.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// JSON that does not decode: where, in which task, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", task_id.as_ref().map(|t| format!("task \"{t}\": ")).unwrap_or_default(), if path.is_empty() { "(root)" } else { path })]
pub struct DecodeError {
    /// JSON path of the offending value, e.g. `tasks[1].input` (empty for the root).
    pub path: String,
    /// The `task_id` of the innermost enclosing task, when there is one.
    pub task_id: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// Decodes a [`crate::Dag`], [`crate::Task`], [`crate::InvokeParams`] or any other type of
/// this crate from JSON text.
pub fn from_json_str<T: DeserializeOwned>(json: &str) -> Result<T, DecodeError> {
    let value: Value = serde_json::from_str(json).map_err(|e| DecodeError {
        path: String::new(),
        task_id: None,
        message: e.to_string(),
    })?;
    from_value(&value)
}

/// Decodes from a JSON value.
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let task_id = enclosing_task_id(value, e.path());
        let path = e.path().to_string();
        DecodeError {
            path: if path == "." { String::new() } else { path },
            task_id,
            message: e.into_inner().to_string(),
        }
    })
}

/// The `task_id` of the deepest object along `path` that has one.
fn enclosing_task_id(root: &Value, path: &serde_path_to_error::Path) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut current = root;
    let mut found = current.get("task_id").and_then(Value::as_str);
    for segment in path {
        let next = match segment {
            Segment::Seq { index } => current.get(*index),
            Segment::Map { key } => current.get(key.as_str()),
            Segment::Enum { .. } | Segment::Unknown => None,
        };
        let Some(next) = next else { break };
        current = next;
        if let Some(id) = current.get("task_id").and_then(Value::as_str) {
            found = Some(id);
        }
    }
    found.map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dag, Task, TaskInput};

    #[test]
    fn input_with_both_forms_names_task_and_path() {
        let e = from_json_str::<Dag>(
            r#"{"dag_id":"d","edges":[],"tasks":[
                {"task_id":"a","capability":"c","input":{"type":"text","data":"x"}},
                {"task_id":"b","capability":"c","input":{"type":"text","data":"x","source":{"from_task":"a"}}}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.path, "tasks[1].input");
        assert_eq!(e.task_id.as_deref(), Some("b"));
        assert!(e.message.contains("not both"), "{e}");
        assert!(
            e.to_string().starts_with("task \"b\": tasks[1].input: "),
            "{e}"
        );
    }

    #[test]
    fn input_with_neither_form_is_rejected() {
        let e =
            from_json_str::<Task>(r#"{"task_id":"t","capability":"c","input":{}}"#).unwrap_err();
        assert_eq!(e.path, "input");
        assert_eq!(e.task_id.as_deref(), Some("t"));
        assert!(e.message.contains("needs `type` and `data`"), "{e}");
        for (input, msg) in [
            (r#"{"type":"text"}"#, "without `data`"),
            (r#"{"data":1}"#, "without `type`"),
            (r#"{"source":{"from_task":"a"},"type":"json"}"#, "not both"),
            (
                r#"{"source":{"from_task":"a","from_tasks":["b"]}}"#,
                "mutually exclusive",
            ),
            (r#"{"source":{"field":"data"}}"#, "needs `from_task`"),
        ] {
            let json = format!(r#"{{"task_id":"t","capability":"c","input":{input}}}"#);
            let e = from_json_str::<Task>(&json).unwrap_err();
            assert!(e.message.contains(msg), "{input}: {e}");
        }
    }

    #[test]
    fn literal_null_data_is_kept_and_forms_decode() {
        let t: Task = from_json_str(
            r#"{"task_id":"t","capability":"c","input":{"type":"json","data":null}}"#,
        )
        .unwrap();
        assert_eq!(t.input, TaskInput::literal("json", Value::Null));
        let t: Task = from_json_str(r#"{"task_id":"t","capability":"c","input":{"source":{"from_tasks":["a","b"]}},"unknown":1}"#).unwrap();
        assert_eq!(t.input, TaskInput::from_tasks(["a", "b"]));
    }

    #[test]
    fn syntax_error_has_empty_path() {
        let e = from_json_str::<Dag>("{").unwrap_err();
        assert_eq!(e.path, "");
        assert!(e.to_string().starts_with("(root): "));
    }
}
