//! Positive fixtures: a wire line that must decode, and whose re-encoding
//! must keep every field, round-trip, match its snapshot and its schema.

use a2e_proto::{ChainNode, Message};
use serde_json::Value;

use crate::catalog::{self, Catalog, Shape};
use crate::fixtures::Fixture;
use crate::json;
use crate::schemas::Schemas;
use crate::snapshots;

/// What checking one positive fixture found.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The fixture's name.
    pub name: String,
    /// Every failed check, one sentence each; empty when the fixture passes.
    pub problems: Vec<String>,
    /// `(snapshot name, re-encoded JSON)` of every re-encoding the fixture produced.
    pub reencoded: Vec<(String, Value)>,
}

/// The `id` given to the `chain/req` that carries a node fragment.
pub const FRAGMENT_CHAIN_ID: &str = "frag0001";

/// Wraps a `ChainNode` fragment in a `chain/req` whose entry node it is.
pub fn chain_with_node(node: &Value) -> Value {
    let node_id = node.get("node_id").cloned().unwrap_or(Value::Null);
    serde_json::json!({
        "type": "chain/req",
        "id": "c-fragment",
        "version": "1.0",
        "ts": 1716123456.789,
        "session_id": "s1",
        "chain_id": FRAGMENT_CHAIN_ID,
        "nodes": [node],
        "entry_node": node_id,
    })
}

/// Checks a parsed positive fixture against the decoder, the spec defaults,
/// the schemas and the committed snapshots.
pub fn check(fixture: &Fixture, catalog: &Catalog, schemas: &Schemas) -> Report {
    let mut report = Report {
        name: fixture.name.clone(),
        problems: Vec::new(),
        reencoded: Vec::new(),
    };
    let original: Value = match serde_json::from_slice(fixture.line()) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(other) => {
            report.problems.push(format!(
                "fixture is a JSON {}, not an object",
                json::type_name(&other)
            ));
            return report;
        }
        Err(e) => {
            report.problems.push(format!("fixture is not JSON: {e}"));
            return report;
        }
    };
    let snapshot = snapshots::snapshot_name(&fixture.name);
    if original.get("type").is_some() {
        check_message(
            fixture.line(),
            &original,
            &snapshot,
            catalog,
            schemas,
            &mut report,
        );
    } else {
        check_node(&original, &snapshot, catalog, schemas, &mut report);
    }
    for (name, value) in &report.reencoded {
        if let Err(e) = snapshots::check(name, value) {
            report.problems.push(e);
        }
    }
    report
}

/// A message fixture: decode, compare fields, round trip, framing, schema.
fn check_message(
    bytes: &[u8],
    original: &Value,
    snapshot: &str,
    catalog: &Catalog,
    schemas: &Schemas,
    report: &mut Report,
) {
    let problems = &mut report.problems;
    let wire_type = original.get("type").and_then(Value::as_str).unwrap_or("");
    // 4a. The original validates against its type's schema (whether or not it decodes).
    if let Err(errors) = schemas.validate(wire_type, original) {
        problems.push(format!(
            "the original fails its schema: {}",
            errors.join("; ")
        ));
    }
    let msg = match a2e_proto::decode(bytes) {
        Ok(msg) => msg,
        Err(e) => {
            problems.push(format!("does not decode: [{}] {e}", e.code()));
            return;
        }
    };
    if matches!(msg, Message::Unknown(_)) {
        problems.push(format!("decoded as an unknown message, not `{wire_type}`"));
        return;
    }
    if msg.type_str() != wire_type {
        problems.push(format!(
            "decoded as `{}`, not `{wire_type}`",
            msg.type_str()
        ));
    }
    let encoded = msg.to_json();
    let reencoded: Value = match serde_json::from_slice(&encoded) {
        Ok(v) => v,
        Err(e) => {
            problems.push(format!("re-encoding is not JSON: {e}"));
            return;
        }
    };

    // 1. Every field of the original comes back; added fields carry defaults.
    compare_fields(wire_type, original, &reencoded, catalog, problems);
    if reencoded.get("a2e").is_some() {
        problems.push("re-encoding emits `a2e`; the field is `version`".into());
    }

    // 2. decode(encode(x)) == x.
    match a2e_proto::decode(&encoded) {
        Ok(again) if again == msg => {}
        Ok(again) => problems.push(format!("decode(encode(x)) != x: {again:?} versus {msg:?}")),
        Err(e) => problems.push(format!("re-encoding does not decode: {e}")),
    }

    // Framing: one compact line, one terminator.
    let line = msg.to_line();
    if line.iter().filter(|b| **b == b'\n').count() != 1 || line.last() != Some(&b'\n') {
        problems.push("to_line() is not exactly one `\\n`-terminated line".into());
    }

    // 4. The original and the re-encoding validate against the type's schema.
    for (what, value) in [("original", original), ("re-encoding", &reencoded)] {
        if let Err(errors) = schemas.validate(wire_type, value) {
            problems.push(format!("{what} fails its schema: {}", errors.join("; ")));
        }
    }
    report.reencoded.push((snapshot.to_owned(), reencoded));
}

/// A `ChainNode` fragment: checked as a node, then inside a `chain/req`.
fn check_node(
    original: &Value,
    snapshot: &str,
    catalog: &Catalog,
    schemas: &Schemas,
    report: &mut Report,
) {
    let node: ChainNode = match serde_json::from_value(original.clone()) {
        Ok(node) => node,
        Err(e) => {
            report
                .problems
                .push(format!("neither a message nor a ChainNode: {e}"));
            return;
        }
    };
    match serde_json::to_value(&node) {
        Ok(reencoded) => {
            compare_model(
                "ChainNode",
                original,
                &reencoded,
                "$",
                catalog,
                &mut report.problems,
            );
            match serde_json::from_value::<ChainNode>(reencoded.clone()) {
                Ok(again) if again == node => {}
                Ok(again) => report
                    .problems
                    .push(format!("decode(encode(node)) != node: {again:?}")),
                Err(e) => report
                    .problems
                    .push(format!("re-encoded node does not decode: {e}")),
            }
            for (what, value) in [("node", original), ("re-encoded node", &reencoded)] {
                if let Err(errors) = schemas.validate("ChainNode", value) {
                    report
                        .problems
                        .push(format!("{what} fails its schema: {}", errors.join("; ")));
                }
            }
            report.reencoded.push((snapshot.to_owned(), reencoded));
        }
        Err(e) => report.problems.push(format!("node does not encode: {e}")),
    }

    let chain = chain_with_node(original);
    let bytes = serde_json::to_vec(&chain).unwrap_or_default();
    let mut inner = Report {
        name: report.name.clone(),
        problems: Vec::new(),
        reencoded: Vec::new(),
    };
    check_message(
        &bytes,
        &chain,
        &format!("{snapshot}__in_chain"),
        catalog,
        schemas,
        &mut inner,
    );
    report.problems.extend(
        inner
            .problems
            .into_iter()
            .map(|p| format!("in a chain/req: {p}")),
    );
    report.reencoded.extend(inner.reencoded);
}

/// Compares a message's original fields with its re-encoding.
pub fn compare_fields(
    wire_type: &str,
    original: &Value,
    reencoded: &Value,
    catalog: &Catalog,
    problems: &mut Vec<String>,
) {
    // `a2e` is an input alias of `version`.
    let mut original = original.clone();
    if let Value::Object(map) = &mut original
        && !map.contains_key("version")
        && let Some(version) = map.remove("a2e")
    {
        map.insert("version".into(), version);
    }
    compare_model(wire_type, &original, reencoded, "$", catalog, problems);
}

/// Compares an instance of `model` with its re-encoding: every original field
/// must come back with the same value, and every added field must hold the
/// default a freshly decoded minimal instance has (or a fresh id or time).
pub fn compare_model(
    model: &str,
    original: &Value,
    reencoded: &Value,
    path: &str,
    catalog: &Catalog,
    problems: &mut Vec<String>,
) {
    let (Value::Object(orig), Value::Object(re)) = (original, reencoded) else {
        json::diff(original, reencoded, path, problems);
        return;
    };
    let Some(entry) = catalog.entry(model) else {
        problems.push(format!("{path}: defaults.json has no entry for `{model}`"));
        return;
    };
    for (key, value) in orig {
        let here = json::join(path, key);
        let Some(back) = re.get(key) else {
            problems.push(format!("{here}: dropped by the re-encoding (was {value})"));
            continue;
        };
        match entry.nested.get(key) {
            None => json::diff(value, back, &here, problems),
            Some(nested) => compare_nested(
                &nested.model,
                nested.shape,
                value,
                back,
                &here,
                catalog,
                problems,
            ),
        }
    }
    let added: Vec<(&String, &Value)> = re.iter().filter(|(k, _)| !orig.contains_key(*k)).collect();
    if added.is_empty() {
        return;
    }
    let minimal = match catalog.minimal_reencoded(model) {
        Ok(m) => m,
        Err(e) => {
            problems.push(format!("{path}: minimal `{model}` does not decode: {e}"));
            return;
        }
    };
    for (key, value) in added {
        let here = json::join(path, key);
        if let Some(spec) = catalog
            .spec_default(model, key)
            .filter(|d| catalog::is_fresh(d))
        {
            if let Err(e) = catalog::check_fresh(spec, value) {
                problems.push(format!("{here}: added by the re-encoding: {e}"));
            }
            continue;
        }
        match minimal.get(key) {
            Some(default) if json::equal(default, value) => {}
            Some(default) => problems.push(format!(
                "{here}: added by the re-encoding as {value}, but its default is {default}"
            )),
            None => problems.push(format!(
                "{here}: added by the re-encoding as {value}, though a minimal `{model}` has no such field"
            )),
        }
    }
}

fn compare_nested(
    model: &str,
    shape: Shape,
    original: &Value,
    reencoded: &Value,
    path: &str,
    catalog: &Catalog,
    problems: &mut Vec<String>,
) {
    match (shape, original, reencoded) {
        (Shape::One, Value::Object(_), _) => {
            compare_model(model, original, reencoded, path, catalog, problems);
        }
        (Shape::List, Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                compare_model(model, x, y, &format!("{path}[{i}]"), catalog, problems);
            }
        }
        (Shape::Map, Value::Object(a), Value::Object(b)) => {
            let mut keys_a: Vec<&String> = a.keys().collect();
            let mut keys_b: Vec<&String> = b.keys().collect();
            keys_a.sort();
            keys_b.sort();
            if keys_a != keys_b {
                problems.push(format!("{path}: keys {keys_a:?} came back as {keys_b:?}"));
                return;
            }
            for (key, x) in a {
                if let Some(y) = b.get(key) {
                    compare_model(model, x, y, &json::join(path, key), catalog, problems);
                }
            }
        }
        _ => json::diff(original, reencoded, path, problems),
    }
}
