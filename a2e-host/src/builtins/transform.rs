//! Pure compute tools: no file, process or network access.
//!
//! - `transform` evaluates a JMESPath expression over `data` (any JSON).

use serde_json::{Value, json};

use super::args::*;
use crate::error::{HostError, HostResult};
use crate::plugin::ToolOutput;

/// `transform`.
pub(crate) fn transform(args: TransformArgs) -> HostResult<ToolOutput> {
    let expression = args.expression.as_str();
    let data = args.data;
    a2e_chain::expr::check_expression(expression)
        .map_err(|e| HostError::invalid_argument("expression", e))?;
    let compiled = jmespath::compile(expression)
        .map_err(|e| HostError::schema(vec![format!("expression: {e}")]))?;
    let result = compiled
        .search(data)
        .map_err(|e| HostError::tool_failed("expression failed", e))?;
    let value = serde_json::to_value(&*result)
        .map_err(|e| HostError::tool_failed("result is not JSON", e))?;
    Ok(json!({"result": whole_numbers(value)}).into())
}

/// JMESPath arithmetic yields floats; a whole one reads better as an integer.
fn whole_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(whole_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, whole_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T: serde::de::DeserializeOwned>(
        tool: fn(T) -> HostResult<ToolOutput>,
        args: Value,
    ) -> HostResult<ToolOutput> {
        tool(crate::plugin::parse_args(
            args.as_object().unwrap().clone(),
        )?)
    }

    #[test]
    fn transforms_with_jmespath() {
        let out = run(
            transform,
            json!({"data": [{"n": 1}, {"n": 2}], "expression": "sum([*].n)"}),
        )
        .unwrap()
        .data;
        assert_eq!(out["result"], json!(3));
        let out = run(transform, json!({"data": [1.5, 2], "expression": "sum(@)"}))
            .unwrap()
            .data;
        assert_eq!(out["result"], json!(3.5));
        assert!(matches!(
            run(transform, json!({"data": 1, "expression": "[*"})),
            Err(HostError::Schema { .. })
        ));
    }

    #[test]
    fn hostile_expressions_are_refused_before_parsing() {
        let deep = format!("{}a", "!".repeat(200_000));
        let nested = format!("{}a{}", "(".repeat(100_000), ")".repeat(100_000));
        for expression in [deep, nested] {
            let err = run(transform, json!({"data": 1, "expression": expression})).unwrap_err();
            let HostError::Schema { violations, .. } = err else {
                panic!("{err}")
            };
            assert!(violations[0].starts_with("expression: "), "{violations:?}");
        }
    }
}
