//! `transform`: a JMESPath expression evaluated over `data` (any JSON). No
//! file, process or network access.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::hints::ToolHints;
use super::tool::{Builtin, Done, Env, Spec};
use crate::error::{HostError, HostResult};
use crate::plugin::CallContext;

/// `transform`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TransformArgs {
    /// JMESPath expression.
    pub expression: String,
    /// The JSON value to evaluate against.
    #[serde(default)]
    pub data: Value,
}

/// `transform`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TransformOutput {
    /// The expression's value (any JSON)
    pub result: Value,
}

/// The `transform` tool.
pub(crate) struct Transform;

impl Builtin for Transform {
    const SPEC: Spec = Spec {
        name: "transform",
        description: "Evaluate a JMESPath expression over JSON data (select, reshape, sum, sort, join)",
        tags: &["data", "json"],
        idempotent: true,
        hints: ToolHints::new("Transform JSON").read_only(),
    };

    type Args = TransformArgs;
    type Output = TransformOutput;

    async fn run(
        _env: &Env,
        args: TransformArgs,
        _ctx: &CallContext,
    ) -> HostResult<Done<TransformOutput>> {
        transform(args).map(Done::new)
    }
}

fn transform(args: TransformArgs) -> HostResult<TransformOutput> {
    let expression = args.expression.as_str();
    a2e_chain::expr::check_expression(expression)
        .map_err(|e| HostError::invalid_argument("expression", e))?;
    let compiled = jmespath::compile(expression)
        .map_err(|e| HostError::schema(vec![format!("expression: {e}")]))?;
    let result = compiled
        .search(args.data)
        .map_err(|e| HostError::tool_failed("expression failed", e))?;
    let value = serde_json::to_value(&*result)
        .map_err(|e| HostError::tool_failed("result is not JSON", e))?;
    Ok(TransformOutput {
        result: whole_numbers(value),
    })
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
    use serde_json::json;

    use super::*;

    fn run(args: Value) -> HostResult<Value> {
        let args = crate::plugin::parse_args(args.as_object().unwrap().clone())?;
        Ok(serde_json::to_value(transform(args)?).unwrap())
    }

    #[test]
    fn transforms_with_jmespath() {
        let out = run(json!({"data": [{"n": 1}, {"n": 2}], "expression": "sum([*].n)"})).unwrap();
        assert_eq!(out["result"], json!(3));
        let out = run(json!({"data": [1.5, 2], "expression": "sum(@)"})).unwrap();
        assert_eq!(out["result"], json!(3.5));
        assert!(matches!(
            run(json!({"data": 1, "expression": "[*"})),
            Err(HostError::Schema { .. })
        ));
    }

    #[test]
    fn hostile_expressions_are_refused_before_parsing() {
        let deep = format!("{}a", "!".repeat(200_000));
        let nested = format!("{}a{}", "(".repeat(100_000), ")".repeat(100_000));
        for expression in [deep, nested] {
            let err = run(json!({"data": 1, "expression": expression})).unwrap_err();
            let HostError::Schema { violations, .. } = err else {
                panic!("{err}")
            };
            assert!(violations[0].starts_with("expression: "), "{violations:?}");
        }
    }
}
