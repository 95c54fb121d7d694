//! Argument validation against a tool's parameters: required fields, JSON
//! types, enums and nested objects. Every violation is reported with its path.

use a2e_proto::ToolParameter;
use serde_json::{Map, Value};

fn type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        // An unknown or empty type constrains nothing.
        _ => true,
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check_params(
    params: &[&ToolParameter],
    args: &Map<String, Value>,
    prefix: &str,
    out: &mut Vec<String>,
) {
    for p in params {
        let path = if prefix.is_empty() {
            p.name.clone()
        } else {
            format!("{prefix}.{}", p.name)
        };
        let Some(value) = args.get(&p.name) else {
            if p.required {
                out.push(format!("{path}: required parameter is missing"));
            }
            continue;
        };
        if value.is_null() && !p.required {
            continue;
        }
        if !type_matches(&p.param_type, value) {
            out.push(format!(
                "{path}: expected {}, got {}",
                p.param_type,
                kind_of(value)
            ));
            continue;
        }
        if let Some(allowed) = &p.r#enum {
            let ok = match value {
                Value::String(s) => allowed.iter().any(|a| a == s),
                other => {
                    let text = other.to_string();
                    allowed.contains(&text)
                }
            };
            if !ok {
                out.push(format!(
                    "{path}: {value} is not one of [{}]",
                    allowed.join(", ")
                ));
            }
        }
        if let (Some(props), Value::Object(inner)) = (&p.properties, value) {
            // The map key names a nested parameter.
            let nested: Vec<ToolParameter> = props
                .iter()
                .map(|(key, param)| ToolParameter {
                    name: key.clone(),
                    ..param.clone()
                })
                .collect();
            let nested: Vec<&ToolParameter> = nested.iter().collect();
            check_params(&nested, inner, &path, out);
        }
    }
}

/// Every violation of `params` by `args`, as `path: what` lines (empty: valid).
/// Unknown arguments are tolerated.
pub fn check_arguments(params: &[ToolParameter], args: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    let refs: Vec<&ToolParameter> = params.iter().collect();
    check_params(&refs, args, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn params() -> Vec<ToolParameter> {
        let mut opts = ToolParameter::new("opts", "object", "options");
        let mut mode = ToolParameter::new("mode", "string", "mode").required();
        mode.r#enum = Some(vec!["fast".into(), "slow".into()]);
        let mut props = BTreeMap::new();
        props.insert("mode".to_owned(), mode);
        props.insert(
            "depth".to_owned(),
            ToolParameter::new("depth", "integer", "depth"),
        );
        opts.properties = Some(props);
        vec![
            ToolParameter::new("path", "string", "path").required(),
            ToolParameter::new("limit", "integer", "limit"),
            opts,
        ]
    }

    #[test]
    fn valid_arguments_pass() {
        let args =
            json!({"path": "a", "limit": 3, "opts": {"mode": "fast", "depth": 2}, "extra": 1});
        assert!(check_arguments(&params(), args.as_object().unwrap()).is_empty());
    }

    #[test]
    fn every_violation_is_listed_with_its_path() {
        let args = json!({"limit": "3", "opts": {"mode": "medium", "depth": 1.5}});
        let v = check_arguments(&params(), args.as_object().unwrap());
        assert_eq!(
            v,
            vec![
                "path: required parameter is missing",
                "limit: expected integer, got string",
                "opts.depth: expected integer, got number",
                "opts.mode: \"medium\" is not one of [fast, slow]",
            ]
        );
    }

    #[test]
    fn nested_required_is_checked() {
        let args = json!({"path": "a", "opts": {}});
        let v = check_arguments(&params(), args.as_object().unwrap());
        assert_eq!(v, vec!["opts.mode: required parameter is missing"]);
    }
}
