//! Validation against the JSON Schemas a2e-proto generates.

use std::collections::BTreeMap;

use jsonschema::Validator;
use serde_json::Value;

/// A compiled validator for every message type and data model schema.
pub struct Schemas {
    raw: BTreeMap<String, Value>,
    validators: BTreeMap<String, Validator>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("names", &self.raw.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Schemas {
    /// Compiles `a2e_proto::schema::message_schemas()` and `model_schemas()`.
    pub fn build() -> Result<Self, String> {
        let mut raw = BTreeMap::new();
        let mut validators = BTreeMap::new();
        let all = a2e_proto::schema::message_schemas()
            .into_iter()
            .chain(a2e_proto::schema::model_schemas());
        for (name, schema) in all {
            let validator = jsonschema::validator_for(&schema)
                .map_err(|e| format!("the schema of `{name}` does not compile: {e}"))?;
            validators.insert(name.to_owned(), validator);
            raw.insert(name.to_owned(), schema);
        }
        Ok(Self { raw, validators })
    }

    /// The generated schema of a message type or model.
    pub fn schema(&self, name: &str) -> Option<&Value> {
        self.raw.get(name)
    }

    /// Validates `instance` against the schema of `name`; each violation is
    /// reported as `<instance path>: <message>`.
    pub fn validate(&self, name: &str, instance: &Value) -> Result<(), Vec<String>> {
        let Some(validator) = self.validators.get(name) else {
            return Err(vec![format!("no schema for `{name}`")]);
        };
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                format!("{at}: {e}")
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}
