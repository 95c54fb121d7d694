//! JSON Schemas (draft 2020-12) of every message and data model.

use schemars::JsonSchema;
use serde_json::Value;

use crate::capability::Capability;
use crate::chains::*;
use crate::core::*;
use crate::envelope::WireType;
use crate::event::{ArtifactData, LogData, ProgressData, StatusData};
use crate::extensions::*;
use crate::proc::*;
use crate::skills::*;
use crate::tools::*;

/// Fields whose default is made fresh on every message; a schema must not freeze one.
const FRESH_DEFAULTS: &[&str] = &["id", "ts", "created_at"];

/// Per message type, further fields with a fresh default.
fn fresh_fields(wire_type: &str) -> &'static [&'static str] {
    match wire_type {
        "handshake/resp" => &["session_id"],
        "chain/req" => &["chain_id"],
        _ => &[],
    }
}

fn schema_of<T: JsonSchema>(fresh: &[&str]) -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    // Only the message's own properties carry its fresh fields.
    if let Some(Value::Object(props)) = value.get_mut("properties") {
        for name in fresh {
            if let Some(Value::Object(prop)) = props.get_mut(*name) {
                prop.remove("default");
            }
        }
    }
    tidy(&mut value);
    value
}

/// Strips frozen fresh defaults everywhere, and gives unsigned integers the
/// upper bound their `format` implies (validators do not check formats).
fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for name in FRESH_DEFAULTS {
                    if let Some(Value::Object(prop)) = props.get_mut(*name) {
                        prop.remove("default");
                    }
                }
            }
            let max = match map.get("format").and_then(Value::as_str) {
                Some("uint32") => Some(Value::from(u32::MAX)),
                Some("uint64" | "uint") => Some(Value::from(u64::MAX)),
                Some("int64") => Some(Value::from(i64::MAX)),
                _ => None,
            };
            if let Some(max) = max {
                map.entry("maximum").or_insert(max);
                if map.get("format").and_then(Value::as_str) == Some("int64") {
                    map.entry("minimum").or_insert(Value::from(i64::MIN));
                }
            }
            map.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// `(type, schema)` of each of the listed message types.
macro_rules! schemas_of {
    ($($t:ty),+ $(,)?) => {
        vec![$( (<$t as WireType>::TYPE, schema_of::<$t>(fresh_fields(<$t as WireType>::TYPE))) ),+]
    };
}

/// The schemas of the specifications' messages (`spec`) or of the wire
/// extensions (`extensions`), from the one list of messages.
macro_rules! message_schemas {
    (spec: [$($spec:ty),+ $(,)?], extensions: [$($ext:ty),+ $(,)?] $(,)?) => {
        (schemas_of!($($spec),+), schemas_of!($($ext),+))
    };
}

/// `(type, schema)` for every message type the specifications define, in
/// their order.
pub fn message_schemas() -> Vec<(&'static str, Value)> {
    for_each_message!(message_schemas).0
}

/// `(model name, schema)` for every data model and event payload.
pub fn model_schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("Capability", schema_of::<Capability>(&[])),
        ("ToolDefinition", schema_of::<ToolDefinition>(&[])),
        ("ToolParameter", schema_of::<ToolParameter>(&[])),
        ("ToolResult", schema_of::<ToolResult>(&[])),
        ("SkillDefinition", schema_of::<SkillDefinition>(&[])),
        ("SkillResult", schema_of::<SkillResult>(&[])),
        ("SkillStatus", schema_of::<SkillStatus>(&[])),
        ("LLMConfig", schema_of::<LLMConfig>(&[])),
        ("ChainNode", schema_of::<ChainNode>(&[])),
        ("ProgressData", schema_of::<ProgressData>(&[])),
        ("StatusData", schema_of::<StatusData>(&[])),
        ("ArtifactData", schema_of::<ArtifactData>(&[])),
        ("LogData", schema_of::<LogData>(&[])),
    ]
}

/// `(type, schema)` of this implementation's wire extensions
/// ([`crate::extensions`]).
pub fn extension_schemas() -> Vec<(&'static str, Value)> {
    for_each_message!(message_schemas).1
}

/// The schema of one message type, by its wire `type` (a specification's or
/// a wire extension's).
pub fn schema_for_type(wire_type: &str) -> Option<Value> {
    let (spec, extensions) = for_each_message!(message_schemas);
    spec.into_iter()
        .chain(extensions)
        .find(|(t, _)| *t == wire_type)
        .map(|(_, s)| s)
}

/// The committed file name of a message schema: `tool/call/req` → `tool.call.req.json`.
pub fn file_name(wire_type: &str) -> String {
    format!("{}.json", wire_type.replace('/', "."))
}
