//! Missing arguments of a skill called over MCP, asked of the client's user
//! (`elicitation/create`, form mode).
//!
//! When a `skill__NAME` call leaves out required properties of the skill's
//! input schema, each of them a string, number, integer or boolean (enums
//! and defaults kept), and the client declared `elicitation`, the host asks
//! the client for them (with the schema's titles, descriptions and defaults)
//! and runs the skill with the answers. A user who declines is the call's
//! `schema_violation` naming the fields, one who cancels a `cancelled`
//! call. A client without elicitation is not asked: the call fails at once
//! with the `schema_violation` naming the missing field, as over A2E.

use a2e_mcp::ClientLink;
use a2e_mcp::rmcp::model::ElicitationAction;
use a2e_proto::{ErrorCode, SkillDefinition};
use serde_json::{Map, Value};

/// The keys of a property schema an elicitation form may carry.
const FORM_KEYS: [&str; 11] = [
    "type",
    "title",
    "description",
    "default",
    "enum",
    "enumNames",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "format",
];

/// The form asking for the required properties of `skill`'s input schema
/// that `arguments` leaves out: `None` when nothing is missing or when a
/// missing one is not a primitive a form can ask for.
pub fn form_for_missing(
    skill: &SkillDefinition,
    arguments: &Map<String, Value>,
) -> Option<(Vec<String>, Value)> {
    let schema = &skill.input_schema;
    let properties = schema.get("properties").and_then(Value::as_object);
    let missing: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|name| !arguments.contains_key(*name))
        .map(str::to_owned)
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut form = Map::new();
    for name in &missing {
        let property = properties?.get(name)?.as_object()?;
        let kind = property.get("type").and_then(Value::as_str)?;
        if !matches!(kind, "string" | "number" | "integer" | "boolean") {
            return None;
        }
        let field: Map<String, Value> = property
            .iter()
            .filter(|(k, _)| FORM_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        form.insert(name.clone(), Value::Object(field));
    }
    let schema = serde_json::json!({
        "type": "object",
        "properties": form,
        "required": missing,
    });
    Some((missing, schema))
}

/// Why a call does not run after asking: its error code and message.
pub type Refusal = (ErrorCode, String);

/// `arguments` with the missing required ones the client's user gave, or
/// `arguments` as they are when there is nothing to ask or no one to ask.
pub async fn fill_missing(
    skill: &SkillDefinition,
    mut arguments: Map<String, Value>,
    client: Option<&ClientLink>,
) -> Result<Map<String, Value>, Refusal> {
    let Some(client) = client.filter(|c| c.supports_elicitation()) else {
        return Ok(arguments);
    };
    let Some((missing, schema)) = form_for_missing(skill, &arguments) else {
        return Ok(arguments);
    };
    let fields = missing.join(", ");
    let message = format!("The skill `{}` needs: {fields}", skill.name);
    let answer = client.elicit(&message, schema).await.map_err(|e| {
        (
            ErrorCode::SCHEMA_VIOLATION,
            format!(
                "missing required arguments ({fields}); asking the MCP client for them failed: {e}"
            ),
        )
    })?;
    match answer.action {
        ElicitationAction::Accept => {
            if let Some(Value::Object(given)) = answer.content {
                for name in &missing {
                    if let Some(value) = given.get(name) {
                        arguments.insert(name.clone(), value.clone());
                    }
                }
            }
            Ok(arguments)
        }
        ElicitationAction::Decline => Err((
            ErrorCode::SCHEMA_VIOLATION,
            format!(
                "missing required arguments ({fields}): the MCP client's user declined to give them"
            ),
        )),
        _ => Err((
            ErrorCode::CANCELLED,
            format!(
                "the MCP client's user cancelled the form for the missing arguments ({fields})"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn skill(schema: Value) -> SkillDefinition {
        let mut def = SkillDefinition::new("s", "d");
        def.input_schema = schema.as_object().unwrap().clone();
        def
    }

    #[test]
    fn a_form_asks_for_the_missing_primitives_only() {
        let def = skill(json!({"type": "object", "required": ["topic", "n"],
            "properties": {"topic": {"type": "string", "description": "What about", "pattern": "x"},
                           "n": {"type": "integer", "default": 3}}}));
        let (missing, form) = form_for_missing(&def, &Map::new()).unwrap();
        assert_eq!(missing, ["topic", "n"]);
        assert_eq!(
            form["properties"]["topic"],
            json!({"type": "string", "description": "What about"})
        );
        assert_eq!(form["properties"]["n"]["default"], 3);
        let given = json!({"topic": "t", "n": 1}).as_object().unwrap().clone();
        assert!(form_for_missing(&def, &given).is_none());
        let nested = skill(json!({"type": "object", "required": ["items"],
            "properties": {"items": {"type": "array"}}}));
        assert!(form_for_missing(&nested, &Map::new()).is_none());
    }
}
