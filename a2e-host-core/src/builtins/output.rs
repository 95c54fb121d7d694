//! A built-in's result type as what clients are told of it.
//!
//! Each built-in names its result's data as a `#[derive(Serialize, JsonSchema)]`
//! type, and two descriptions are derived from that type's JSON Schema:
//!
//! - the A2E definition's output parameters ([`parameters`]): a field's name,
//!   type and doc comment, for every field but those marked
//!   `#[schemars(extend("x-unlisted" = true))]` (flags and echoes that the
//!   listing has never named: the output schema has them). A field marked
//!   `#[schemars(extend("x-list-items" = true))]`, an array of objects, lists
//!   its items' fields as its own properties;
//! - the output schema of its hints ([`properties`]): an object with every
//!   field, reduced to `type`, `properties` and `items`. No field is required, so a
//!   schema stays true of results when a field is added; a field that may be
//!   `null` says so, since MCP clients check every successful result's
//!   `structuredContent` against it; a field of any JSON is `{}`.

use a2e_proto::{ToolParameter, params_from_schema};
use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::plugin::schema_of;

/// Marks a field the output parameters leave out.
const UNLISTED: &str = "x-unlisted";

/// Marks an array field whose items' fields are listed as its properties.
const LIST_ITEMS: &str = "x-list-items";

fn marked(schema: &Value, mark: &str) -> bool {
    schema.get(mark).and_then(Value::as_bool) == Some(true)
}

/// The A2E output parameters of a result of type `T` (see the module docs).
pub(crate) fn parameters<T: JsonSchema>() -> Vec<ToolParameter> {
    let root = schema_of::<T>();
    let fields = root.get("properties").and_then(Value::as_object);
    let field = |name: &str| fields.and_then(|f| f.get(name)).unwrap_or(&Value::Null);
    params_from_schema(&root)
        .into_iter()
        .filter(|p| !marked(field(&p.name), UNLISTED))
        .map(|mut p| {
            let schema = field(&p.name);
            if marked(schema, LIST_ITEMS)
                && let Some(items) = schema.get("items")
            {
                let items = params_from_schema(items);
                p.properties = Some(items.into_iter().map(|i| (i.name.clone(), i)).collect());
            }
            unrequire(&mut p);
            p
        })
        .collect()
}

/// Output parameters describe what comes back; none is a demand.
fn unrequire(param: &mut ToolParameter) {
    param.required = false;
    for nested in param.properties.iter_mut().flat_map(|p| p.values_mut()) {
        unrequire(nested);
    }
}

/// The properties of the output schema of a result of type `T` (see the
/// module docs), each by its name.
pub(crate) fn properties<T: JsonSchema>() -> Value {
    match shape(&schema_of::<T>()).get_mut("properties") {
        Some(properties) => properties.take(),
        None => Value::Object(Map::new()),
    }
}

/// `schema` reduced to its `type`, `properties` and `items`, at every depth.
fn shape(schema: &Value) -> Value {
    let mut out = Map::new();
    if let Some(ty) = schema.get("type") {
        out.insert("type".into(), ty.clone());
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let properties = properties
            .iter()
            .map(|(name, field)| (name.clone(), shape(field)))
            .collect();
        out.insert("properties".into(), Value::Object(properties));
    }
    if let Some(items) = schema.get("items") {
        out.insert("items".into(), shape(items));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde_json::json;

    use super::*;

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Item {
        /// The item's name
        name: String,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Out {
        /// Items found
        #[schemars(extend("x-list-items" = true))]
        items: Vec<Item>,
        /// Maybe a code
        code: Option<i32>,
        /// Anything
        any: Value,
        /// Whether the list was cut
        #[schemars(extend("x-unlisted" = true))]
        truncated: bool,
    }

    #[test]
    fn parameters_list_the_unmarked_fields_none_required() {
        let params = parameters::<Out>();
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["items", "code", "any"]);
        assert!(params.iter().all(|p| !p.required));
        assert_eq!(params[0].param_type, "array");
        let item = &params[0].properties.as_ref().unwrap()["name"];
        assert_eq!(
            (item.param_type.as_str(), item.description.as_str()),
            ("string", "The item's name")
        );
        assert!(!item.required);
        assert_eq!(params[1].param_type, "integer");
        assert_eq!(params[1].description, "Maybe a code");
        assert_eq!(params[2].param_type, "");
    }

    #[test]
    fn the_schema_keeps_types_properties_and_items_only() {
        assert_eq!(
            properties::<Out>(),
            json!({
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}}}},
                "code": {"type": ["integer", "null"]},
                "any": {},
                "truncated": {"type": "boolean"},
            })
        );
    }
}
