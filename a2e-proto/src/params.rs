//! A tool's parameters as a JSON Schema, and back.
//!
//! [`ToolDefinition::input_schema`] is the schema that a host validates arguments
//! against: an object with a property per parameter (`type`, `description`,
//! `enum`, nested `properties`), `required` where a parameter is required, and any
//! other property allowed (the tools spec lets hosts tolerate extra arguments).
//! [`params_from_schema`] goes the other way, for tools whose arguments are
//! described by a JSON Schema first (a typed Rust struct, an MCP server's tool):
//! `$ref`s into `$defs`/`definitions` are followed (to a bounded depth), nullable
//! types (`["string", "null"]`, `anyOf` with `null`) name their non-null type, and
//! string enums become [`ToolParameter::enum`]s.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::tools::{ToolDefinition, ToolParameter};

/// How deep nested objects and `$ref` chains are followed.
pub const MAX_SCHEMA_DEPTH: usize = 16;

impl ToolParameter {
    /// This parameter's JSON Schema (without `required`, which belongs to the parent).
    pub fn schema(&self) -> Value {
        let mut out = Map::new();
        if !self.param_type.is_empty() && is_json_type(&self.param_type) {
            out.insert("type".into(), Value::from(self.param_type.as_str()));
        }
        if !self.description.is_empty() {
            out.insert("description".into(), Value::from(self.description.as_str()));
        }
        if let Some(values) = &self.r#enum {
            let values: Vec<Value> = values
                .iter()
                .map(|v| match self.param_type.as_str() {
                    "string" | "" => Value::from(v.as_str()),
                    // A non-string enum is written as JSON text.
                    _ => serde_json::from_str(v).unwrap_or_else(|_| Value::from(v.as_str())),
                })
                .collect();
            out.insert("enum".into(), Value::Array(values));
        }
        if let Some(props) = &self.properties {
            let nested: Vec<&ToolParameter> = props.values().collect();
            let (properties, required) = object_parts(&nested);
            out.insert("properties".into(), properties);
            if !required.is_empty() {
                out.insert("required".into(), Value::from(required));
            }
        }
        Value::Object(out)
    }
}

fn is_json_type(t: &str) -> bool {
    matches!(
        t,
        "string" | "integer" | "number" | "boolean" | "object" | "array" | "null"
    )
}

fn object_parts(params: &[&ToolParameter]) -> (Value, Vec<String>) {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in params {
        let mut schema = p.schema();
        // An optional parameter may be given as `null` (it counts as absent).
        if !p.required
            && let Some(Value::String(t)) = schema.get("type").cloned()
            && let Value::Object(map) = &mut schema
        {
            map.insert("type".into(), json!([t, "null"]));
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.push(Value::Null);
            }
        }
        properties.insert(p.name.clone(), schema);
        if p.required {
            required.push(p.name.clone());
        }
    }
    (Value::Object(properties), required)
}

impl ToolDefinition {
    /// The JSON Schema of this tool's arguments, derived from its input parameters.
    pub fn input_schema(&self) -> Value {
        let params: Vec<&ToolParameter> = self.input_parameters.iter().collect();
        let (properties, required) = object_parts(&params);
        let mut out = Map::new();
        out.insert("type".into(), Value::from("object"));
        out.insert("properties".into(), properties);
        if !required.is_empty() {
            out.insert("required".into(), Value::from(required));
        }
        Value::Object(out)
    }
}

/// The parameters described by an object schema (`properties` + `required`).
/// A schema that is no object schema yields no parameters.
pub fn params_from_schema(schema: &Value) -> Vec<ToolParameter> {
    let root = schema;
    let Some(obj) = resolve(root, schema, 0) else {
        return Vec::new();
    };
    object_params(root, obj, 0)
}

fn object_params(root: &Value, obj: &Value, depth: usize) -> Vec<ToolParameter> {
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = obj.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, prop)| {
            let mut p = param_from(root, name, prop, depth + 1);
            p.required = required.contains(&name.as_str());
            p
        })
        .collect()
}

fn param_from(root: &Value, name: &str, prop: &Value, depth: usize) -> ToolParameter {
    let description = prop
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let resolved = resolve(root, prop, depth).unwrap_or(prop);
    let description = if description.is_empty() {
        resolved
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    } else {
        description
    };
    let ty = type_of(root, resolved, depth);
    let mut p = ToolParameter::new(name, &ty, &description);
    if let Some(values) = enum_of(resolved) {
        p.r#enum = Some(values);
    }
    if ty == "object" && depth < MAX_SCHEMA_DEPTH {
        let nested = object_params(root, resolved, depth);
        if !nested.is_empty() {
            let map: BTreeMap<String, ToolParameter> =
                nested.into_iter().map(|p| (p.name.clone(), p)).collect();
            p.properties = Some(map);
        }
    }
    p
}

/// Follows `$ref` (local `#/$defs/…` or `#/definitions/…`) and unwraps a
/// nullable `anyOf`/`oneOf` to its one non-null branch.
fn resolve<'a>(root: &'a Value, schema: &'a Value, depth: usize) -> Option<&'a Value> {
    if depth > MAX_SCHEMA_DEPTH {
        return None;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))?;
        return resolve(root, target, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            let non_null: Vec<&Value> = branches
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            if let [one] = non_null.as_slice() {
                return resolve(root, one, depth + 1);
            }
        }
    }
    Some(schema)
}

fn type_of(root: &Value, schema: &Value, depth: usize) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_owned(),
        _ if schema.get("properties").is_some() => "object".into(),
        _ if schema.get("enum").is_some() => "string".into(),
        _ => match resolve(root, schema, depth) {
            Some(inner) if !std::ptr::eq(inner, schema) => type_of(root, inner, depth + 1),
            _ => String::new(),
        },
    }
}

fn enum_of(schema: &Value) -> Option<Vec<String>> {
    let values = schema.get("enum").and_then(Value::as_array)?;
    Some(
        values
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_round_trips_through_its_schema() {
        let mut mode = ToolParameter::new("mode", "string", "How");
        mode.r#enum = Some(vec!["a".into(), "b".into()]);
        let mut opts = ToolParameter::new("opts", "object", "Options");
        opts.properties = Some(BTreeMap::from([(
            "depth".to_owned(),
            ToolParameter::new("depth", "integer", "Depth").required(),
        )]));
        let def = ToolDefinition::new("t", "d")
            .param(ToolParameter::new("path", "string", "Where").required())
            .param(mode)
            .param(opts);
        let schema = def.input_schema();
        assert_eq!(schema["required"], json!(["path"]));
        assert_eq!(
            schema["properties"]["mode"]["enum"],
            json!(["a", "b", null])
        );
        assert_eq!(schema["properties"]["opts"]["required"], json!(["depth"]));
        let back = params_from_schema(&schema);
        let names: Vec<&str> = back.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["path", "mode", "opts"]);
        assert!(back[0].required && !back[1].required);
        assert_eq!(
            back[1].r#enum.as_deref(),
            Some(&["a".to_owned(), "b".to_owned()][..])
        );
        let nested = back[2].properties.as_ref().unwrap();
        assert!(nested["depth"].required);
        assert_eq!(nested["depth"].param_type, "integer");
    }

    #[test]
    fn refs_and_nullable_types_are_followed_and_cycles_end() {
        let schema = json!({
            "type": "object",
            "properties": {
                "inner": {"$ref": "#/$defs/Inner"},
                "maybe": {"type": ["integer", "null"], "description": "n"},
                "either": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                "loop": {"$ref": "#/$defs/Loop"}
            },
            "required": ["inner"],
            "$defs": {
                "Inner": {"type": "object", "description": "I", "properties": {"x": {"type": "string"}}},
                "Loop": {"$ref": "#/$defs/Loop"}
            }
        });
        let params = params_from_schema(&schema);
        let by = |n: &str| params.iter().find(|p| p.name == n).unwrap().clone();
        assert_eq!(by("inner").param_type, "object");
        assert_eq!(by("inner").description, "I");
        assert!(by("inner").properties.unwrap().contains_key("x"));
        assert_eq!(by("maybe").param_type, "integer");
        assert_eq!(by("either").param_type, "boolean");
        assert_eq!(by("loop").param_type, "");
    }
}
