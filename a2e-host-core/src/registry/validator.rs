//! The compiled argument schema of a registered tool or skill.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{HostError, HostResult};

/// A compiled JSON Schema for a call's arguments (`jsonschema`), or the reason
/// the schema could not be compiled (then every call is refused with it).
#[derive(Clone)]
pub struct ArgsValidator(Option<Arc<Result<jsonschema::Validator, String>>>);

impl std::fmt::Debug for ArgsValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_deref() {
            None => f.write_str("ArgsValidator(any)"),
            Some(Ok(_)) => f.write_str("ArgsValidator(compiled)"),
            Some(Err(e)) => write!(f, "ArgsValidator(invalid: {e})"),
        }
    }
}

impl ArgsValidator {
    /// Compiles `schema`; one every arguments object meets (`{}`, an object
    /// schema without properties) compiles to nothing.
    pub fn compile(schema: &Value) -> Self {
        if accepts_any_object(schema) {
            return Self(None);
        }
        Self(Some(Arc::new(
            jsonschema::validator_for(schema).map_err(|e| e.to_string()),
        )))
    }

    /// The compiled validator; `None` when anything passes; `Err` when the
    /// schema could not be compiled (every call is refused with it).
    fn compiled(&self) -> HostResult<Option<&jsonschema::Validator>> {
        match self.0.as_deref() {
            None => Ok(None),
            Some(Ok(validator)) => Ok(Some(validator)),
            Some(Err(e)) => Err(HostError::Runtime(format!(
                "the input schema is invalid: {e}"
            ))),
        }
    }

    /// Checks `args`; every violation is listed with its JSON pointer (`$` for the whole).
    pub fn check(&self, args: &Map<String, Value>) -> HostResult<()> {
        match self.compiled()? {
            None => Ok(()),
            Some(validator) => Self::violations(validator, &Value::Object(args.clone())),
        }
    }

    /// [`Self::check`] for an owner of the arguments: they are not copied.
    pub fn check_owned(&self, args: Map<String, Value>) -> HostResult<Map<String, Value>> {
        let Some(validator) = self.compiled()? else {
            return Ok(args);
        };
        let instance = Value::Object(args);
        Self::violations(validator, &instance)?;
        match instance {
            Value::Object(args) => Ok(args),
            _ => Ok(Map::new()),
        }
    }

    fn violations(validator: &jsonschema::Validator, instance: &Value) -> HostResult<()> {
        if validator.is_valid(instance) {
            return Ok(());
        }
        let violations: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path = if path.is_empty() {
                    "$".to_owned()
                } else {
                    path
                };
                format!("{path}: {e}")
            })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(HostError::schema(violations))
        }
    }
}

/// `{}`, or `{"type": "object"}` with no properties and nothing else: every
/// arguments object passes, so no validator runs.
fn accepts_any_object(schema: &Value) -> bool {
    let Some(obj) = schema.as_object() else {
        return false;
    };
    obj.iter().all(|(k, v)| match k.as_str() {
        "type" => v == "object",
        "properties" => v.as_object().is_some_and(Map::is_empty),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2e_proto::ToolDefinition;

    fn validator() -> ArgsValidator {
        use a2e_proto::ToolParameter;
        use std::collections::BTreeMap;
        let mut opts = ToolParameter::new("opts", "object", "options");
        let mut mode = ToolParameter::new("mode", "string", "mode").required();
        mode.r#enum = Some(vec!["fast".into(), "slow".into()]);
        let props = BTreeMap::from([
            ("mode".to_owned(), mode),
            (
                "depth".to_owned(),
                ToolParameter::new("depth", "integer", "depth"),
            ),
        ]);
        opts.properties = Some(props);
        let def = ToolDefinition::new("t", "t")
            .param(ToolParameter::new("path", "string", "path").required())
            .param(ToolParameter::new("limit", "integer", "limit"))
            .param(opts);
        ArgsValidator::compile(&def.input_schema())
    }

    fn violations(v: &ArgsValidator, args: serde_json::Value) -> Vec<String> {
        match v.check(args.as_object().unwrap()) {
            Ok(()) => Vec::new(),
            Err(HostError::Schema { violations, .. }) => violations,
            Err(other) => panic!("{other}"),
        }
    }

    #[test]
    fn valid_arguments_pass_and_null_counts_as_absent() {
        let v = validator();
        let args = serde_json::json!({"path": "a", "limit": null, "opts": {"mode": "fast", "depth": 2}, "extra": 1});
        assert!(violations(&v, args).is_empty());
    }

    #[test]
    fn every_violation_is_listed_with_its_path() {
        let v = validator();
        let found = violations(
            &v,
            serde_json::json!({"limit": "3", "opts": {"mode": "medium", "depth": 1.5}}),
        );
        assert_eq!(found.len(), 4, "{found:?}");
        for (path, what) in [
            ("$", "path"),
            ("/limit", "integer"),
            ("/opts/depth", "integer"),
            ("/opts/mode", "medium"),
        ] {
            assert!(
                found
                    .iter()
                    .any(|f| f.starts_with(&format!("{path}: ")) && f.contains(what)),
                "{path} {what}: {found:?}"
            );
        }
        let nested = violations(&v, serde_json::json!({"path": "a", "opts": {}}));
        assert_eq!(nested.len(), 1);
        assert!(
            nested[0].starts_with("/opts: ") && nested[0].contains("mode"),
            "{nested:?}"
        );
    }

    #[test]
    fn skill_schemas_name_their_paths_and_empty_schemas_accept_all() {
        let schema = serde_json::json!({"type": "object", "properties": {"code": {"type": "string"}, "n": {"type": "integer"}}, "required": ["code"]});
        let v = ArgsValidator::compile(&schema);
        assert!(violations(&v, serde_json::json!({"code": "x"})).is_empty());
        let found = violations(&v, serde_json::json!({"n": "two"}));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().any(|f| f.starts_with("/n:")), "{found:?}");
        let any = ArgsValidator::compile(&serde_json::json!({}));
        assert!(violations(&any, serde_json::json!({"whatever": [1]})).is_empty());
        let broken = ArgsValidator::compile(&serde_json::json!({"type": 5}));
        let err = broken.check(&Map::new()).unwrap_err();
        assert!(err.to_string().contains("input schema is invalid"), "{err}");
    }
}
