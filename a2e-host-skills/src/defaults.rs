//! Default `arguments`: merged under a call's arguments, before they are checked.
//!
//! The host checks a call's arguments against the `input_schema` a skill advertises
//! before the skill runs. A skill with defaults advertises its schema with the
//! defaulted names taken out of `required` (and each property's `default` set), so a
//! call may leave them out; the skill then merges the defaults under the call's
//! arguments and checks the result against the full schema.

use a2e_proto::SkillDefinition;
use serde_json::{Map, Value};

use a2e_host_core::error::{HostResult, SkillError};
use a2e_host_core::registry::ArgsValidator;

/// A skill's default arguments and its full input schema, compiled once.
#[derive(Clone)]
pub struct Defaults {
    values: Map<String, Value>,
    full: ArgsValidator,
}

impl std::fmt::Debug for Defaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Defaults")
            .field("values", &self.values)
            .finish_non_exhaustive()
    }
}

impl Defaults {
    /// The defaults of `def` (its `arguments`, an object or null); a schema that does not
    /// compile is reported here, naming the skill.
    pub fn new(def: &SkillDefinition) -> Result<Self, SkillError> {
        let values = match &def.arguments {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        let schema = Value::Object(def.input_schema.clone());
        if !def.input_schema.is_empty()
            && let Err(e) = jsonschema::validator_for(&schema)
        {
            return Err(SkillError::Schema {
                skill: def.name.clone(),
                schema: "input_schema",
                source: Box::new(e),
            });
        }
        Ok(Self {
            values,
            full: ArgsValidator::compile(&schema),
        })
    }

    /// The default values.
    pub fn values(&self) -> &Map<String, Value> {
        &self.values
    }

    /// The definition agents see: defaulted names are not `required`, and each
    /// defaulted property of the schema carries its `default`.
    pub fn advertised(&self, def: &SkillDefinition) -> SkillDefinition {
        let mut out = def.clone();
        if self.values.is_empty() {
            return out;
        }
        let schema = &mut out.input_schema;
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.retain(|r| r.as_str().is_none_or(|n| !self.values.contains_key(n)));
        }
        if let Some(Value::Object(props)) = schema.get_mut("properties") {
            for (name, value) in &self.values {
                if let Some(Value::Object(prop)) = props.get_mut(name) {
                    prop.entry("default").or_insert_with(|| value.clone());
                }
            }
        }
        out
    }

    /// The call's arguments over the defaults, checked against the full schema
    /// (a violation is a `schema_violation` refusal).
    pub fn apply(&self, args: Map<String, Value>) -> HostResult<Map<String, Value>> {
        if self.values.is_empty() {
            return Ok(args);
        }
        let mut merged = self.values.clone();
        merged.extend(args);
        self.full.check(&merged)?;
        Ok(merged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def() -> SkillDefinition {
        let mut d = SkillDefinition::new("s", "d");
        d.input_schema = json!({"type": "object",
            "properties": {"folder": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["folder", "limit"]})
        .as_object()
        .unwrap()
        .clone();
        d.arguments = json!({"folder": "notes"});
        d
    }

    #[test]
    fn defaulted_names_are_optional_to_callers_and_merged_under_theirs() {
        let d = def();
        let defaults = Defaults::new(&d).unwrap();
        let seen = defaults.advertised(&d);
        assert_eq!(seen.input_schema["required"], json!(["limit"]));
        assert_eq!(
            seen.input_schema["properties"]["folder"]["default"],
            "notes"
        );
        let merged = defaults
            .apply(json!({"limit": 2}).as_object().unwrap().clone())
            .unwrap();
        assert_eq!(
            Value::Object(merged),
            json!({"folder": "notes", "limit": 2})
        );
        let merged = defaults
            .apply(
                json!({"limit": 2, "folder": "x"})
                    .as_object()
                    .unwrap()
                    .clone(),
            )
            .unwrap();
        assert_eq!(merged["folder"], "x");
        let err = defaults
            .apply(
                json!({"folder": 3, "limit": 1})
                    .as_object()
                    .unwrap()
                    .clone(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("folder"), "{err}");
    }

    #[test]
    fn a_bad_schema_names_the_skill() {
        let mut d = def();
        d.input_schema = json!({"type": 5}).as_object().unwrap().clone();
        assert!(
            Defaults::new(&d)
                .unwrap_err()
                .to_string()
                .contains("skill `s`")
        );
    }
}
