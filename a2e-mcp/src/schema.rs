//! JSON Schema ⇄ [`ToolParameter`]s.
//!
//! MCP tools describe their input with a JSON Schema; A2E tools with a list of
//! [`ToolParameter`]s. [`params_from_schema`] converts the first into the
//! second (names, types, descriptions, `required`, enums, nested object
//! properties; local `$ref`s into `$defs`/`definitions` are followed;
//! `anyOf`/`oneOf` take their first non-null branch). The conversion loses
//! detail (array item types, numeric ranges, patterns), so the full schema is
//! kept next to it and [`InputValidator`] checks arguments against that.
//! [`schema_from_params`] goes the other way for the server side.

use std::collections::BTreeMap;

use a2e_proto::ToolParameter;
use serde_json::{Map, Value};

/// How deep nested objects and `$ref` chains are followed.
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// The parameters an object schema describes (its `properties`, in order,
/// with `required` marked). A schema that is no object schema has none.
pub fn params_from_schema(schema: &Map<String, Value>) -> Vec<ToolParameter> {
    let root = schema;
    match resolve(root, schema, 0) {
        Some(obj) => object_params(root, obj, 0),
        None => Vec::new(),
    }
}

fn object_params(
    root: &Map<String, Value>,
    obj: &Map<String, Value>,
    depth: usize,
) -> Vec<ToolParameter> {
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
            let mut param = match prop.as_object() {
                Some(prop) => param_from(root, name, prop, depth + 1),
                // `true` (anything) or a malformed entry: an untyped parameter.
                None => ToolParameter::new(name, "string", ""),
            };
            param.required = required.contains(&name.as_str());
            param
        })
        .collect()
}

fn param_from(
    root: &Map<String, Value>,
    name: &str,
    schema: &Map<String, Value>,
    depth: usize,
) -> ToolParameter {
    let outer_description = text(schema, "description").or_else(|| text(schema, "title"));
    let schema = resolve(root, schema, depth).unwrap_or(schema);
    let description = outer_description
        .or_else(|| text(schema, "description"))
        .or_else(|| text(schema, "title"))
        .unwrap_or_default();
    let kind = json_type(schema);
    let mut param = ToolParameter::new(name, &kind, &description);
    param.r#enum = enum_values(schema);
    if kind == "object" && depth < MAX_SCHEMA_DEPTH && schema.contains_key("properties") {
        let nested: BTreeMap<String, ToolParameter> = object_params(root, schema, depth)
            .into_iter()
            .map(|p| (p.name.clone(), p))
            .collect();
        param.properties = Some(nested);
    }
    param
}

fn text(schema: &Map<String, Value>, key: &str) -> Option<String> {
    schema
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Follows local `$ref`s and picks the first non-null branch of
/// `anyOf`/`oneOf`/`allOf` when the schema has no type of its own.
fn resolve<'a>(
    root: &'a Map<String, Value>,
    mut schema: &'a Map<String, Value>,
    depth: usize,
) -> Option<&'a Map<String, Value>> {
    for _ in depth..MAX_SCHEMA_DEPTH {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            schema = lookup(root, reference)?;
            continue;
        }
        if !schema.contains_key("type") && !schema.contains_key("properties") {
            let branch = ["anyOf", "oneOf", "allOf"].iter().find_map(|key| {
                schema.get(*key).and_then(Value::as_array).and_then(|bs| {
                    bs.iter()
                        .filter_map(Value::as_object)
                        .find(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                })
            });
            if let Some(branch) = branch {
                schema = branch;
                continue;
            }
        }
        return Some(schema);
    }
    None
}

/// `#/$defs/Name` or `#/definitions/Name` (a JSON pointer into the root).
fn lookup<'a>(root: &'a Map<String, Value>, reference: &str) -> Option<&'a Map<String, Value>> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let mut parts = pointer.strip_prefix('/')?.split('/');
    let first = unescape(parts.next()?);
    let mut value = root.get(&first)?;
    for part in parts {
        value = value.get(unescape(part))?;
    }
    value.as_object()
}

fn unescape(part: &str) -> String {
    part.replace("~1", "/").replace("~0", "~")
}

fn json_type(schema: &Map<String, Value>) -> String {
    let from_type = match schema.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .map(str::to_owned),
        _ => None,
    };
    if let Some(t) = from_type {
        return t;
    }
    if schema.contains_key("properties") {
        return "object".into();
    }
    if schema.contains_key("items") {
        return "array".into();
    }
    let sample = schema
        .get("const")
        .or_else(|| schema.get("enum").and_then(|e| e.as_array()?.first()));
    match sample {
        Some(Value::Bool(_)) => "boolean".into(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => "integer".into(),
        Some(Value::Number(_)) => "number".into(),
        Some(Value::Object(_)) => "object".into(),
        Some(Value::Array(_)) => "array".into(),
        // Strings, `null` and untyped schemas.
        _ => "string".into(),
    }
}

fn enum_values(schema: &Map<String, Value>) -> Option<Vec<String>> {
    let values: Vec<&Value> = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(values)), _) => values.iter().collect(),
        (None, Some(value)) => vec![value],
        _ => return None,
    };
    Some(
        values
            .into_iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
    )
}

/// The object schema for a list of parameters (the server side's
/// `inputSchema`): `properties`, `required`, enums and nested objects.
pub fn schema_from_params(params: &[ToolParameter]) -> Map<String, Value> {
    object_schema(params.iter(), 0)
}

fn object_schema<'a>(
    params: impl Iterator<Item = &'a ToolParameter>,
    depth: usize,
) -> Map<String, Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in params {
        if param.required {
            required.push(Value::from(param.name.clone()));
        }
        properties.insert(
            param.name.clone(),
            Value::Object(param_schema(param, depth)),
        );
    }
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    out
}

fn param_schema(param: &ToolParameter, depth: usize) -> Map<String, Value> {
    let mut out = match (&param.properties, depth < MAX_SCHEMA_DEPTH) {
        (Some(props), true) if param.param_type == "object" => {
            object_schema(props.values(), depth + 1)
        }
        _ => {
            let mut m = Map::new();
            // A type that is no JSON type (an empty one: anything) constrains nothing.
            if is_json_type(&param.param_type) {
                m.insert("type".into(), param.param_type.clone().into());
            }
            m
        }
    };
    if !param.description.is_empty() {
        out.insert("description".into(), param.description.clone().into());
    }
    if let Some(values) = &param.r#enum
        && param.param_type == "string"
    {
        out.insert(
            "enum".into(),
            Value::Array(values.iter().cloned().map(Value::from).collect()),
        );
    }
    out
}

fn is_json_type(t: &str) -> bool {
    matches!(
        t,
        "string" | "integer" | "number" | "boolean" | "object" | "array" | "null"
    )
}

/// Arguments that do not match a tool's input schema: the first few
/// violations, each with the JSON pointer of the value it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .violations.join("; "))]
pub struct ArgumentsMismatch {
    /// `pointer: what is wrong`, at most three.
    pub violations: Vec<String>,
}

impl ArgumentsMismatch {
    /// A mismatch of one violation.
    pub fn one(violation: impl Into<String>) -> Self {
        Self {
            violations: vec![violation.into()],
        }
    }
}

/// Arguments checked against a tool's full input schema.
///
/// A schema that does not compile (or uses remote references) checks
/// nothing: the server validates its own input anyway.
pub struct InputValidator {
    validator: Option<jsonschema::Validator>,
    /// The top-level properties the schema requires.
    required: Vec<String>,
}

impl std::fmt::Debug for InputValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputValidator")
            .field("active", &self.validator.is_some())
            .finish()
    }
}

impl InputValidator {
    /// Compiles `schema`.
    pub fn new(schema: &Map<String, Value>) -> Self {
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let schema = Value::Object(schema.clone());
        let validator = match jsonschema::validator_for(&schema) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::debug!(error = %e, "input schema does not compile; not validating");
                None
            }
        };
        Self {
            validator,
            required,
        }
    }

    /// `args` without the `null`s of properties the schema does not require:
    /// such a `null` means the argument is not given (as clients send it, and
    /// as MCP's `Mcp-Param-*` headers read it); `None` when there is none.
    fn without_optional_nulls(&self, args: &Value) -> Option<Value> {
        let object = args.as_object()?;
        let optional_null = |(k, v): (&String, &Value)| v.is_null() && !self.required.contains(k);
        if !object.iter().any(optional_null) {
            return None;
        }
        let kept = object
            .iter()
            .filter(|entry| !optional_null(*entry))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(Value::Object(kept))
    }

    /// `Ok` when `args` match; otherwise the first few violations, each with
    /// its JSON path.
    pub fn check(&self, args: &Map<String, Value>) -> Result<(), ArgumentsMismatch> {
        if self.validator.is_none() {
            return Ok(());
        }
        self.check_value(&Value::Object(args.clone()))
    }

    /// [`check`](Self::check) for arguments already held as a JSON value.
    pub fn check_value(&self, args: &Value) -> Result<(), ArgumentsMismatch> {
        let Some(validator) = &self.validator else {
            return Ok(());
        };
        if validator.is_valid(args) {
            return Ok(());
        }
        if self
            .without_optional_nulls(args)
            .is_some_and(|given| validator.is_valid(&given))
        {
            return Ok(());
        }
        let violations: Vec<String> = validator
            .iter_errors(args)
            .take(3)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() { "/".into() } else { path };
                format!("{at}: {e}")
            })
            .collect();
        Err(ArgumentsMismatch { violations })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn nested_objects_enums_required_and_refs() {
        let schema = obj(json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "enum": ["Oslo", "Lima"], "description": "Where"},
                "when": {"$ref": "#/$defs/When", "description": "Moment"},
                "count": {"type": ["integer", "null"]},
                "mode": {"anyOf": [{"type": "null"}, {"const": 3}]},
                "raw": true
            },
            "required": ["city", "when"],
            "$defs": {"When": {
                "type": "object",
                "properties": {"tz": {"type": "string"}, "hour": {"type": "integer"}},
                "required": ["tz"]
            }}
        }));
        let params = params_from_schema(&schema);
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["city", "when", "count", "mode", "raw"]);
        assert!(params[0].required);
        assert_eq!(
            params[0].r#enum.as_deref(),
            Some(&["Oslo".to_owned(), "Lima".into()][..])
        );
        assert_eq!(params[0].description, "Where");
        let when = &params[1];
        assert_eq!((when.param_type.as_str(), when.required), ("object", true));
        assert_eq!(when.description, "Moment");
        let nested = when.properties.as_ref().unwrap();
        assert!(nested["tz"].required && !nested["hour"].required);
        assert_eq!(nested["hour"].param_type, "integer");
        assert_eq!(params[2].param_type, "integer");
        assert_eq!(params[3].param_type, "integer");
        assert_eq!(params[3].r#enum.as_deref(), Some(&["3".to_owned()][..]));
        assert_eq!(params[4].param_type, "string");
    }

    #[test]
    fn ref_cycles_and_bad_refs_end() {
        let schema = obj(json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/nowhere"}},
            "$defs": {"A": {"$ref": "#/$defs/A"}}
        }));
        let params = params_from_schema(&schema);
        assert_eq!(params.len(), 2);
        let deep = (0..100).fold(
            json!({"type": "string"}),
            |inner, _| json!({"type": "object", "properties": {"x": inner}}),
        );
        let params = params_from_schema(deep.as_object().unwrap());
        assert_eq!(params[0].param_type, "object");
    }

    #[test]
    fn params_round_trip_through_a_schema() {
        let mut inner = ToolParameter::new("tz", "string", "Zone").required();
        inner.r#enum = Some(vec!["UTC".into(), "CET".into()]);
        let mut when = ToolParameter::new("when", "object", "Moment").required();
        when.properties = Some(BTreeMap::from([("tz".to_owned(), inner)]));
        let params = vec![when, ToolParameter::new("n", "integer", "")];
        let schema = schema_from_params(&params);
        assert_eq!(
            Value::Object(schema.clone()),
            json!({"type": "object", "properties": {
                "when": {"type": "object", "properties": {
                    "tz": {"type": "string", "description": "Zone", "enum": ["UTC", "CET"]}
                }, "required": ["tz"], "description": "Moment"},
                "n": {"type": "integer"}
            }, "required": ["when"]})
        );
        assert_eq!(params_from_schema(&schema), params);
    }

    #[test]
    fn validator_names_the_path() {
        let v = InputValidator::new(&obj(json!({
            "type": "object",
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}},
            "required": ["a"]
        })));
        assert!(v.check(&obj(json!({"a": {"b": 1}}))).is_ok());
        let err = v.check(&obj(json!({"a": {"b": "x"}}))).unwrap_err();
        assert!(err.to_string().contains("/a/b"), "{err}");
        assert!(err.violations[0].starts_with("/a/b:"), "{err:?}");
        let missing = v.check(&obj(json!({}))).unwrap_err();
        assert!(missing.to_string().contains("\"a\""), "{missing}");
    }

    #[test]
    fn a_null_for_an_optional_argument_is_an_argument_not_given() {
        let v = InputValidator::new(&obj(json!({
            "type": "object",
            "properties": {"region": {"type": "string"}, "verbose": {"type": "boolean"}},
            "required": ["region"]
        })));
        assert!(
            v.check(&obj(json!({"region": "eu", "verbose": null})))
                .is_ok()
        );
        let err = v.check(&obj(json!({"region": null}))).unwrap_err();
        assert!(err.to_string().contains("/region"), "{err}");
        assert!(
            v.check(&obj(json!({"region": "eu", "verbose": "yes"})))
                .is_err()
        );
    }
}
