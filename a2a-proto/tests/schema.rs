//! JSON Schemas: the crate's own (schemars) against what the types write,
//! and, when present, the official one generated from the proto.

use a2a_proto::{AgentCard, SendMessageRequest, StreamResponse};
use serde_json::Value;

use crate::examples::SAMPLE_CARD;

fn validator_of<T: schemars::JsonSchema>() -> jsonschema::Validator {
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap();
    jsonschema::validator_for(&schema).expect("a valid schema")
}

fn assert_valid(validator: &jsonschema::Validator, instance: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{instance:#}");
}

#[test]
fn what_the_types_write_fits_their_own_schemas() {
    let card: AgentCard = a2a_proto::decode(SAMPLE_CARD.as_bytes()).unwrap();
    assert_valid(
        &validator_of::<AgentCard>(),
        &serde_json::to_value(&card).unwrap(),
    );

    let request: SendMessageRequest = a2a_proto::decode(
        br#"{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}, {"raw": "AAE="}, {"url": "https://x"}, {"data": [1, null]}]}}"#,
    )
    .unwrap();
    assert_valid(
        &validator_of::<SendMessageRequest>(),
        &serde_json::to_value(&request).unwrap(),
    );

    let validator = validator_of::<StreamResponse>();
    let item: StreamResponse = a2a_proto::decode(
        br#"{"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "lastChunk": true}}"#,
    )
    .unwrap();
    assert_valid(&validator, &serde_json::to_value(&item).unwrap());
    // The schema of a oneof wants one of its keys.
    assert!(!validator.is_valid(&serde_json::json!({})));
}

/// The official schema is not in the repository of the specification (it is
/// generated at build time from `specification/a2a.proto` by
/// `scripts/proto_to_json_schema.sh`); `tests/data/a2a.json` is the copy the
/// A2A TCK ships (tests/data/README.md). Its `$ref`s name files
/// (`lf.a2a.v1.AgentCard.jsonschema.json`), resolved here to its
/// `definitions` (`Agent Card`).
#[test]
fn a_serialized_card_fits_the_official_schema() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/a2a.json");
    let text = std::fs::read_to_string(&path).expect("the official schema at tests/data/a2a.json");
    let mut bundle: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<String> = bundle["definitions"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    resolve_refs(&mut bundle, &names);
    let validator = |name: &str| {
        let mut schema = bundle["definitions"][name].clone();
        schema["definitions"] = bundle["definitions"].clone();
        jsonschema::validator_for(&schema).unwrap()
    };

    let request: SendMessageRequest = a2a_proto::decode(
        br#"{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}, {"raw": "AAE=", "mediaType": "application/octet-stream"}, {"data": {"k": 1}}]}, "configuration": {"historyLength": 0, "returnImmediately": true}}"#,
    )
    .unwrap();
    assert_valid(
        &validator("Send Message Request"),
        &serde_json::to_value(&request).unwrap(),
    );
    let item: StreamResponse = a2a_proto::decode(
        br#"{"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2024-03-15T18:30:00Z"}}}"#,
    )
    .unwrap();
    assert_valid(
        &validator("Stream Response"),
        &serde_json::to_value(&item).unwrap(),
    );

    let validator = validator("Agent Card");
    let card: AgentCard = a2a_proto::decode(SAMPLE_CARD.as_bytes()).unwrap();
    assert_valid(&validator, &serde_json::to_value(&card).unwrap());
    // A v0.3 card field is not in v1.0's schema.
    let mut old = serde_json::to_value(&card).unwrap();
    old["preferredTransport"] = "JSONRPC".into();
    assert!(!validator.is_valid(&old));
}

fn resolve_refs(value: &mut Value, names: &[String]) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get_mut("$ref") {
                let short = reference
                    .trim_end_matches(".jsonschema.json")
                    .rsplit('.')
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                if let Some(name) = names.iter().find(|n| n.replace(' ', "") == short) {
                    *reference = format!("#/definitions/{}", name.replace(' ', "%20"));
                }
            }
            map.values_mut().for_each(|v| resolve_refs(v, names));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| resolve_refs(v, names)),
        _ => {}
    }
}
