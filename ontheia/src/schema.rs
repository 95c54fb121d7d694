//! The document's JSON Schema, generated from the types in [`crate::doc`].

use serde_json::Value;

use crate::doc::Document;

/// The JSON Schema (draft 2020-12) of a chain document.
///
/// It carries the shape, the array and string limits and the numeric ranges
/// that a schema can say; the cross-field rules (per-type required fields,
/// per-type ranges such as `retry.count` ≤ 5, edges naming steps, cycles)
/// are checked by [`crate::parse`].
pub fn document_schema() -> Value {
    let schema = schemars::schema_for!(Document);
    serde_json::to_value(schema).unwrap_or(Value::Null)
}
