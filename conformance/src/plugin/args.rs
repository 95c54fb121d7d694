//! What the plugin checks read from a tool's definition: whether it is well
//! formed, arguments that its parameters accept, and arguments they refuse.

use std::collections::HashSet;

use a2e_proto::{ToolDefinition, ToolParameter};
use serde_json::{Map, Value, json};

use crate::schemas::Schemas;

/// The parameter types a definition may name (JSON Schema's, as the tools
/// spec lists them, and `number` and `null`, which JSON Schema adds).
const TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "object", "array", "null",
];

/// What is wrong with one listed tool (`None` when nothing is): the
/// ToolDefinition schema, a name, and each parameter's name and type.
pub fn definition_problem(tool: &Value, schemas: &Schemas) -> Option<String> {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    if let Err(errors) = schemas.validate("ToolDefinition", tool) {
        return Some(format!("`{name}`: {}", errors.join("; ")));
    }
    if name.is_empty() {
        return Some("a tool without a name".into());
    }
    let def: ToolDefinition = match serde_json::from_value(tool.clone()) {
        Ok(def) => def,
        Err(e) => return Some(format!("`{name}`: {e}")),
    };
    let mut seen = HashSet::new();
    for p in &def.input_parameters {
        if p.name.is_empty() || !seen.insert(p.name.as_str()) {
            return Some(format!(
                "`{name}`: parameter name `{}` empty or twice",
                p.name
            ));
        }
        if !TYPES.contains(&p.param_type.as_str()) {
            return Some(format!(
                "`{name}`: parameter `{}` has type `{}`, not one of {}",
                p.name,
                p.param_type,
                TYPES.join(", ")
            ));
        }
    }
    None
}

/// A value of `param`'s type: its first enum value, else a plain one.
fn sample(param: &ToolParameter) -> Value {
    if let Some(first) = param.r#enum.as_ref().and_then(|e| e.first()) {
        return Value::String(first.clone());
    }
    match param.param_type.as_str() {
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "array" => json!([]),
        "null" => Value::Null,
        "object" => {
            let mut inner = Map::new();
            for (name, p) in param.properties.iter().flatten() {
                if p.required {
                    inner.insert(name.clone(), sample(p));
                }
            }
            Value::Object(inner)
        }
        _ => json!("conformance"),
    }
}

/// Arguments `tool`'s parameters accept: a value for each required one.
pub fn valid(tool: &ToolDefinition) -> Value {
    let args: Map<String, Value> = tool
        .input_parameters
        .iter()
        .filter(|p| p.required)
        .map(|p| (p.name.clone(), sample(p)))
        .collect();
    Value::Object(args)
}

/// A value no parameter of type `ty` takes.
fn wrong(ty: &str) -> Option<Value> {
    match ty {
        "string" => Some(json!(12345)),
        "integer" | "number" | "boolean" | "array" | "object" => Some(json!("not-a-value")),
        _ => None,
    }
}

/// A call of one of `tools` that its parameters refuse, and how: the first
/// tool with a required parameter, called without it; else the first with a
/// typed parameter, given a value of another type. `None` when no tool takes
/// a parameter.
pub fn invalid(tools: &[ToolDefinition]) -> Option<(String, Value, String)> {
    for tool in tools {
        if let Some(p) = tool.input_parameters.iter().find(|p| p.required) {
            let mut args = valid(tool);
            if let Some(map) = args.as_object_mut() {
                map.remove(&p.name);
            }
            return Some((
                tool.name.clone(),
                args,
                format!("without its required `{}`", p.name),
            ));
        }
    }
    for tool in tools {
        for p in &tool.input_parameters {
            if let Some(bad) = wrong(&p.param_type) {
                let what = format!("`{}` of another type than {}", p.name, p.param_type);
                return Some((tool.name.clone(), json!({ p.name.clone(): bad }), what));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(params: Vec<ToolParameter>) -> ToolDefinition {
        let mut t = ToolDefinition::new("t", "A tool");
        t.input_parameters = params;
        t
    }

    #[test]
    fn arguments_come_from_the_parameters() {
        let t = tool(vec![
            ToolParameter::new("text", "string", "x").required(),
            ToolParameter::new("times", "integer", "x").required(),
            ToolParameter::new("loud", "boolean", "x"),
        ]);
        assert_eq!(valid(&t), json!({"text": "conformance", "times": 1}));
        let (name, args, what) = invalid(std::slice::from_ref(&t)).unwrap();
        assert_eq!((name.as_str(), &args), ("t", &json!({"times": 1})));
        assert!(what.contains("`text`"), "{what}");
        let optional = tool(vec![ToolParameter::new("n", "integer", "x")]);
        let (_, args, _) = invalid(&[optional]).unwrap();
        assert_eq!(args, json!({"n": "not-a-value"}));
        assert!(invalid(&[tool(vec![])]).is_none());
    }

    #[test]
    fn a_definition_with_an_unknown_parameter_type_is_named() {
        let schemas = Schemas::build().unwrap();
        let good = serde_json::to_value(tool(vec![ToolParameter::new("a", "string", "x")]));
        assert_eq!(definition_problem(&good.unwrap(), &schemas), None);
        let bad = json!({"name": "t", "description": "d",
            "input_parameters": [{"name": "a", "type": "text", "description": "x"}]});
        let problem = definition_problem(&bad, &schemas).unwrap();
        assert!(problem.contains("`text`"), "{problem}");
        assert!(definition_problem(&json!({"name": "t"}), &schemas).is_some());
    }
}
