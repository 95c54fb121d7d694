//! JSON comparison in the wire's terms: numbers compare as numbers (`30`
//! equals `30.0`), objects compare as sets of fields (order does not matter).

use serde_json::Value;

/// Whether two JSON numbers denote the same value.
///
/// Integers compare exactly; when either side is a float, both compare as
/// `f64`, so `30` and `30.0` are equal.
pub fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x == y;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Appends to `out` every place where `expected` and `actual` differ, each
/// named by its path (`$` is the root). Both sides must have the same fields.
pub fn diff(expected: &Value, actual: &Value, path: &str, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) => {
            if !numbers_equal(a, b) {
                out.push(format!("{path}: expected {a}, found {b}"));
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let here = join(path, key);
                match b.get(key) {
                    Some(other) => diff(value, other, &here, out),
                    None => out.push(format!("{here}: missing (expected {value})")),
                }
            }
            for (key, value) in b {
                if !a.contains_key(key) {
                    out.push(format!("{}: unexpected field ({value})", join(path, key)));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                out.push(format!(
                    "{path}: expected {} items, found {}",
                    a.len(),
                    b.len()
                ));
                return;
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(x, y, &format!("{path}[{i}]"), out);
            }
        }
        (a, b) => {
            if a != b {
                out.push(format!("{path}: expected {a}, found {b}"));
            }
        }
    }
}

/// Whether two JSON values are equal in the wire's terms (see [`diff`]).
pub fn equal(a: &Value, b: &Value) -> bool {
    let mut out = Vec::new();
    diff(a, b, "$", &mut out);
    out.is_empty()
}

/// `path.key` (or `key` at the root `$`).
pub fn join(path: &str, key: &str) -> String {
    if path == "$" {
        format!("$.{key}")
    } else {
        format!("{path}.{key}")
    }
}

/// The JSON type of a value, as a word.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_and_floats_with_the_same_value_are_equal() {
        assert!(equal(&json!({"t": 30}), &json!({"t": 30.0})));
        assert!(!equal(&json!({"t": 30}), &json!({"t": 30.5})));
        assert!(!equal(&json!(-1), &json!(u64::MAX)));
    }

    #[test]
    fn differences_are_named_by_path() {
        let mut out = Vec::new();
        diff(
            &json!({"a": [1, {"b": "x"}], "c": true}),
            &json!({"a": [1, {"b": "y"}], "d": null}),
            "$",
            &mut out,
        );
        assert_eq!(
            out,
            vec![
                "$.a[1].b: expected \"x\", found \"y\"",
                "$.c: missing (expected true)",
                "$.d: unexpected field (null)",
            ]
        );
    }
}
