//! Every schema the host advertises is valid JSON Schema: checked at
//! registration against the meta-schema, so a plugin author's mistake is
//! caught before a client sees it.
//!
//! MCP clients compile the schemas they are given (the TypeScript SDK, and
//! every client on it, compiles each tool's output schema when it lists
//! tools), so one bad schema would make a client unable to list any tool. A
//! schema is checked against the meta-schema of the draft it declares
//! (`$schema`, 2020-12 when it declares none), and one that declares none
//! also against draft-07, which many MCP clients' validators use. A tool
//! parameter's `type` must be a JSON type (or empty, for "anything").

use a2e_proto::{SkillDefinition, ToolDefinition, ToolParameter};
use serde_json::{Map, Value};

/// A schema that no JSON Schema validator would accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{owner} `{name}`: its {which} schema is not valid JSON Schema at `{pointer}`: {reason}")]
pub struct InvalidSchema {
    /// `tool` or `skill`.
    pub owner: &'static str,
    /// The tool's or skill's name.
    pub name: String,
    /// `input` or `output`.
    pub which: &'static str,
    /// The JSON pointer into the schema where it goes wrong (`/` for the whole).
    pub pointer: String,
    /// What is wrong there.
    pub reason: String,
}

/// Checks `schema` (the whole schema; pointers are relative to it).
/// `Err((pointer, reason))` names the first place that is wrong.
pub fn check_schema(schema: &Value) -> Result<(), (String, String)> {
    if !schema.is_object() && !schema.is_boolean() {
        return Err(("/".into(), "a schema is an object or a boolean".into()));
    }
    let declared = schema.get("$schema").is_some();
    let own = jsonschema::meta::validate(schema);
    if let Err(e) = own {
        return Err((pointer_of(&e.instance_path().to_string()), e.to_string()));
    }
    if !declared && let Err(e) = jsonschema::draft7::meta::validate(schema) {
        return Err((
            pointer_of(&e.instance_path().to_string()),
            format!("{e} (draft-07)"),
        ));
    }
    Ok(())
}

fn pointer_of(path: &str) -> String {
    if path.is_empty() {
        "/".into()
    } else {
        path.to_owned()
    }
}

/// Checks the parameter types of `params` (nested ones too): each a JSON type
/// or empty. `prefix` is the pointer of the list's object schema.
fn check_param_types(params: &[&ToolParameter], prefix: &str) -> Result<(), (String, String)> {
    for p in params {
        let at = format!("{prefix}/properties/{}", escape(&p.name));
        if !p.param_type.is_empty() && !is_json_type(&p.param_type) {
            return Err((
                format!("{at}/type"),
                format!(
                    "`{}` is not a JSON type (string, integer, number, boolean, object, array, null; empty for any)",
                    p.param_type
                ),
            ));
        }
        if let Some(nested) = &p.properties {
            let nested: Vec<&ToolParameter> = nested.values().collect();
            check_param_types(&nested, &at)?;
        }
    }
    Ok(())
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn is_json_type(t: &str) -> bool {
    matches!(
        t,
        "string" | "integer" | "number" | "boolean" | "object" | "array" | "null"
    )
}

/// The object schema of a parameter list (a tool's output parameters).
pub fn params_schema(params: &[ToolParameter]) -> Value {
    let def = ToolDefinition {
        input_parameters: params.to_vec(),
        ..ToolDefinition::new("", "")
    };
    def.input_schema()
}

/// Checks a tool: `input` is the schema its arguments are validated against
/// (the plugin's own, or the one derived from its parameters); its output
/// parameters' schema too.
pub fn check_tool(def: &ToolDefinition, input: &Value) -> Result<(), InvalidSchema> {
    let fail = |which, (pointer, reason): (String, String)| InvalidSchema {
        owner: "tool",
        name: def.name.clone(),
        which,
        pointer,
        reason,
    };
    let inputs: Vec<&ToolParameter> = def.input_parameters.iter().collect();
    check_param_types(&inputs, "").map_err(|e| fail("input", e))?;
    check_schema(input).map_err(|e| fail("input", e))?;
    if !def.output_parameters.is_empty() {
        let outputs: Vec<&ToolParameter> = def.output_parameters.iter().collect();
        check_param_types(&outputs, "").map_err(|e| fail("output", e))?;
        check_schema(&params_schema(&def.output_parameters)).map_err(|e| fail("output", e))?;
    }
    Ok(())
}

/// Checks a skill's input and output schemas (an empty one means "any").
pub fn check_skill(def: &SkillDefinition) -> Result<(), InvalidSchema> {
    let check = |which, schema: &Map<String, Value>| {
        if schema.is_empty() {
            return Ok(());
        }
        check_schema(&Value::Object(schema.clone())).map_err(|(pointer, reason)| InvalidSchema {
            owner: "skill",
            name: def.name.clone(),
            which,
            pointer,
            reason,
        })
    };
    check("input", &def.input_schema)?;
    check("output", &def.output_schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bad_type_is_named_with_its_pointer() {
        let (pointer, reason) = check_schema(&json!({
            "type": "object",
            "properties": {"result": {"type": "any"}}
        }))
        .unwrap_err();
        assert_eq!(pointer, "/properties/result/type");
        assert!(reason.contains("any"), "{reason}");
    }

    #[test]
    fn twenty_twenty_twelve_keywords_pass() {
        check_schema(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": false
        }))
        .unwrap();
        check_schema(&json!(true)).unwrap();
        assert!(check_schema(&json!("object")).is_err());
    }

    #[test]
    fn a_parameter_of_no_json_type_is_refused() {
        let mut def = ToolDefinition::new("transform", "t");
        def.output_parameters = vec![ToolParameter::new("result", "any", "The value")];
        let err = check_tool(&def, &def.input_schema()).unwrap_err();
        assert_eq!(
            (err.which, err.pointer.as_str()),
            ("output", "/properties/result/type")
        );
        assert!(err.to_string().contains("tool `transform`"), "{err}");
        def.output_parameters = vec![ToolParameter::new("result", "", "The value")];
        check_tool(&def, &def.input_schema()).unwrap();
    }

    #[test]
    fn a_skill_schema_is_checked() {
        let mut def = SkillDefinition::new("s", "a skill");
        def.input_schema = json!({"type": "object", "required": "x"})
            .as_object()
            .cloned()
            .unwrap();
        let err = check_skill(&def).unwrap_err();
        assert_eq!(
            (err.owner, err.which, err.pointer.as_str()),
            ("skill", "input", "/required")
        );
    }
}
