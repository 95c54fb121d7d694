//! Skill arguments checked against the skill's `input_schema` (JSON Schema).

use serde_json::{Map, Value};

use crate::error::{HostError, HostResult};

/// Checks `args` against `schema`; an empty schema accepts anything. Every
/// violation is listed with its JSON pointer.
pub fn check(schema: &Map<String, Value>, args: &Map<String, Value>) -> HostResult<()> {
    if schema.is_empty() {
        return Ok(());
    }
    let schema = Value::Object(schema.clone());
    let validator = jsonschema::validator_for(&schema)
        .map_err(|e| HostError::Runtime(format!("the skill's input_schema is invalid: {e}")))?;
    let instance = Value::Object(args.clone());
    let violations: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| {
            let path = e.instance_path().to_string();
            let path = if path.is_empty() {
                "$".to_owned()
            } else {
                path
            };
            format!("{path}: {e}")
        })
        .collect();
    if violations.is_empty() {
        Ok(())
    } else {
        Err(HostError::schema(violations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn violations_name_their_paths() {
        let schema = json!({"type": "object", "properties": {"code": {"type": "string"}, "n": {"type": "integer"}}, "required": ["code"]});
        let schema = schema.as_object().unwrap();
        assert!(check(schema, json!({"code": "x"}).as_object().unwrap()).is_ok());
        let err = check(schema, json!({"n": "two"}).as_object().unwrap()).unwrap_err();
        let HostError::Schema { violations, .. } = err else {
            panic!()
        };
        assert_eq!(violations.len(), 2, "{violations:?}");
        assert!(
            violations.iter().any(|v| v.starts_with("/n:")),
            "{violations:?}"
        );
        assert!(
            violations.iter().any(|v| v.contains("code")),
            "{violations:?}"
        );
    }
}
