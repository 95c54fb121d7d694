//! The decoder's defaults against the spec's field tables (`fixtures/defaults.json`).

use serde_json::Value;

use crate::catalog::{self, Catalog, MODELS, is_message};
use crate::json;
use crate::schemas::Schemas;

/// Checks one message type or model: its minimal instance decodes; every
/// field the decoder fills holds the spec default; it adds no field the spec
/// does not list; every field the spec requires is required; the schema
/// accepts the result and states the same defaults.
pub fn check(name: &str, catalog: &Catalog, schemas: &Schemas) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(entry) = catalog.entry(name) else {
        return vec![format!("defaults.json has no entry for `{name}`")];
    };
    let reencoded = match catalog.minimal_reencoded(name) {
        Ok(map) => map,
        Err(e) => return vec![format!("the minimal instance does not decode: {e}")],
    };
    let defaults = catalog.all_defaults(name);

    for (field, spec) in &defaults {
        match reencoded.get(field) {
            None => problems.push(format!(
                "`{field}`: the spec default is {spec}, but the re-encoding leaves the field out"
            )),
            Some(value) if catalog::is_fresh(spec) => {
                if let Err(e) = catalog::check_fresh(spec, value) {
                    problems.push(format!("`{field}`: {e}"));
                }
            }
            Some(value) if !json::equal(spec, value) => problems.push(format!(
                "`{field}`: the spec default is {spec}, the decoder's is {value}"
            )),
            Some(_) => {}
        }
    }
    for field in reencoded.keys() {
        let listed = entry.minimal.contains_key(field)
            || defaults.contains_key(field)
            || entry.unspecified.contains(field);
        if !listed {
            problems.push(format!(
                "`{field}` is emitted but the spec's table has no such field"
            ));
        }
    }
    for field in entry.minimal.keys().filter(|f| *f != "type") {
        let mut partial = entry.minimal.clone();
        partial.remove(field);
        let partial = Value::Object(partial);
        if is_message(name) {
            let bytes = serde_json::to_vec(&partial).unwrap_or_default();
            match a2e_proto::decode(&bytes) {
                Ok(_) => problems.push(format!(
                    "`{field}` has no default in the spec, but a message without it decodes"
                )),
                Err(e) if e.code() != a2e_proto::ErrorCode::SCHEMA_VIOLATION => {
                    problems.push(format!(
                        "without `{field}`: expected schema_violation, got {}",
                        e.code()
                    ))
                }
                Err(_) => {}
            }
        } else if catalog::reencode(name, &partial).is_ok() {
            problems.push(format!(
                "`{field}` has no default in the spec, but an instance without it decodes"
            ));
        }
    }

    let reencoded = Value::Object(reencoded);
    if let Err(errors) = schemas.validate(name, &reencoded) {
        problems.push(format!(
            "the re-encoded minimal instance fails its schema: {}",
            errors.join("; ")
        ));
    }
    if let Some(schema) = schemas.schema(name) {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for field in entry.minimal.keys() {
            if !required.contains(&field.as_str()) {
                problems.push(format!("the schema does not require `{field}`"));
            }
        }
        for field in &required {
            if !entry.minimal.contains_key(*field) {
                problems.push(format!(
                    "the schema requires `{field}`, which has a spec default"
                ));
            }
        }
        for (field, spec) in defaults.iter().filter(|(_, d)| !catalog::is_fresh(d)) {
            let stated = schema.pointer(&format!("/properties/{field}/default"));
            match stated {
                Some(value) if !json::equal(spec, value) => problems.push(format!(
                    "the schema states default {value} for `{field}`, the spec {spec}"
                )),
                None => problems.push(format!(
                    "the schema states no default for `{field}` (the spec's is {spec})"
                )),
                Some(_) => {}
            }
        }
    }
    problems
}

/// Checks that the catalog, the decoder and the schemas cover the same types.
pub fn check_coverage(catalog: &Catalog, schemas: &Schemas) -> Vec<String> {
    let mut problems = Vec::new();
    for name in a2e_proto::Message::TYPES.iter().chain(MODELS) {
        if catalog.entry(name).is_none() {
            problems.push(format!("defaults.json has no entry for `{name}`"));
        }
        if schemas.schema(name).is_none() {
            problems.push(format!("a2e-proto generates no schema for `{name}`"));
        }
    }
    for name in catalog.names() {
        if !is_message(name) && !MODELS.contains(&name) {
            problems.push(format!("defaults.json describes unknown type `{name}`"));
        }
    }
    problems
}
