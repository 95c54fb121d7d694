//! Plain paths evaluated over `serde_json` values, with JMESPath semantics:
//! a field of a non-object and an index of a non-array are `null`; negative
//! indexes count from the end.

use serde_json::{Map, Value};

use super::Step;

/// What a root name refers to at evaluation time.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RootRef<'a> {
    /// A plain value (`input`, `item`, a branch's `output`).
    Value(&'a Value),
    /// A settled node: `{"output": …, "error": …}`.
    Node {
        /// The node's output.
        output: &'a Value,
        /// The node's error message, if it failed.
        error: Option<&'a str>,
    },
    /// `index` in a map template.
    Index(usize),
    /// A node that did not run (skipped): `null`.
    Absent,
}

/// The object a node is in the context.
pub(crate) fn node_object(output: &Value, error: Option<&str>) -> Value {
    let mut map = Map::new();
    map.insert("output".into(), output.clone());
    map.insert("error".into(), error.map_or(Value::Null, Value::from));
    Value::Object(map)
}

/// Evaluates `root` followed by `steps`; with `output`, a node root's
/// `output` comes first.
pub(crate) fn eval(root: RootRef<'_>, output: bool, steps: &[Step]) -> Value {
    if output {
        return match root {
            RootRef::Node { output, .. } => walk(output, steps).cloned().unwrap_or(Value::Null),
            _ => Value::Null,
        };
    }
    match root {
        RootRef::Value(v) => walk(v, steps).cloned().unwrap_or(Value::Null),
        RootRef::Absent => Value::Null,
        RootRef::Index(i) => match steps {
            [] => Value::from(i),
            _ => Value::Null,
        },
        RootRef::Node { output, error } => match steps.split_first() {
            None => node_object(output, error),
            Some((Step::Field(f), rest)) if &**f == "output" => {
                walk(output, rest).cloned().unwrap_or(Value::Null)
            }
            Some((Step::Field(f), [])) if &**f == "error" => error.map_or(Value::Null, Value::from),
            Some(_) => Value::Null,
        },
    }
}

fn walk<'v>(mut v: &'v Value, steps: &[Step]) -> Option<&'v Value> {
    for step in steps {
        v = match (step, v) {
            (Step::Field(f), Value::Object(map)) => map.get(&**f)?,
            (Step::Index(i), Value::Array(items)) => {
                let i = if *i >= 0 {
                    usize::try_from(*i).ok()?
                } else {
                    let back = usize::try_from(i.unsigned_abs()).ok()?.max(1);
                    items.len().checked_sub(back)?
                };
                items.get(i)?
            }
            _ => return None,
        };
    }
    Some(v)
}

/// JMESPath truthiness: `false`, `null`, `""`, `[]` and `{}` are false.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn steps(s: &[&str]) -> Vec<Step> {
        s.iter()
            .map(|p| match p.parse::<i32>() {
                Ok(i) => Step::Index(i),
                Err(_) => Step::Field((*p).into()),
            })
            .collect()
    }

    #[test]
    fn paths_match_jmespath() {
        let data = json!({"a": {"b": [1, 2, 3]}, "s": "x"});
        let cases: &[(&str, &[&str])] = &[
            ("a.b[0]", &["a", "b", "0"]),
            ("a.b[-1]", &["a", "b", "-1"]),
            ("a.b[-3]", &["a", "b", "-3"]),
            ("a.b[-4]", &["a", "b", "-4"]),
            ("a.b[7]", &["a", "b", "7"]),
            ("s.x", &["s", "x"]),
            ("a[0]", &["a", "0"]),
            ("missing", &["missing"]),
        ];
        for (expr, path) in cases {
            let want = jmespath::compile(expr).unwrap().search(&data).unwrap();
            let want = serde_json::to_value(&*want).unwrap();
            assert_eq!(
                eval(RootRef::Value(&data), false, &steps(path)),
                want,
                "{expr}"
            );
        }
    }

    #[test]
    fn node_roots_expose_output_and_error() {
        let out = json!({"x": 1});
        let node = RootRef::Node {
            output: &out,
            error: Some("boom"),
        };
        assert_eq!(eval(node, false, &steps(&["output", "x"])), json!(1));
        assert_eq!(eval(node, false, &steps(&["error"])), json!("boom"));
        assert_eq!(eval(node, false, &steps(&["other"])), Value::Null);
        assert_eq!(
            eval(node, false, &[]),
            json!({"output": {"x": 1}, "error": "boom"})
        );
        assert_eq!(
            eval(RootRef::Absent, false, &steps(&["output"])),
            Value::Null
        );
        assert_eq!(eval(RootRef::Index(4), false, &[]), json!(4));
        assert_eq!(eval(node, true, &steps(&["x"])), json!(1));
        assert_eq!(eval(RootRef::Absent, true, &[]), Value::Null);
    }
}
