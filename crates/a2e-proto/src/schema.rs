//! JSON Schemas (draft 2020-12) of every message and data model.

use schemars::JsonSchema;
use serde_json::Value;

use crate::capability::Capability;
use crate::chains::*;
use crate::core::*;
use crate::envelope::WireType;
use crate::event::{ArtifactData, LogData, ProgressData, StatusData};
use crate::proc::*;
use crate::skills::*;
use crate::tools::*;

/// Fields whose default is made fresh on every call; a schema must not freeze one.
const FRESH_DEFAULTS: &[&str] = &["id", "ts", "created_at", "session_id", "chain_id"];

fn schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    strip_fresh_defaults(&mut value);
    value
}

fn strip_fresh_defaults(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for name in FRESH_DEFAULTS {
                    if let Some(Value::Object(prop)) = props.get_mut(*name) {
                        prop.remove("default");
                    }
                }
            }
            map.values_mut().for_each(strip_fresh_defaults);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_fresh_defaults),
        _ => {}
    }
}

macro_rules! message_schemas {
    ($($t:ty),+ $(,)?) => {
        vec![$( (<$t as WireType>::TYPE, schema_of::<$t>()) ),+]
    };
}

/// `(type, schema)` for every message type, in specification order.
pub fn message_schemas() -> Vec<(&'static str, Value)> {
    message_schemas!(
        HandshakeRequest,
        HandshakeResponse,
        Ping,
        Pong,
        Shutdown,
        ErrorMessage,
        InvokeEvent,
        ToolListRequest,
        ToolListResponse,
        ToolCallRequest,
        ToolCallResponse,
        ToolEvent,
        SkillDiscoverRequest,
        SkillDiscoverResponse,
        SkillCallRequest,
        SkillCallResponse,
        SkillEvent,
        ChainRequest,
        ChainEvent,
        ChainResponse,
        ProcSpawnRequest,
        ProcSpawnResponse,
        ProcWriteRequest,
        ProcWriteResponse,
        ProcReadEvent,
        ProcKillRequest,
        ProcKillResponse,
        ProcStatusRequest,
        ProcStatusResponse,
    )
}

/// `(model name, schema)` for every data model and event payload.
pub fn model_schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("Capability", schema_of::<Capability>()),
        ("ToolDefinition", schema_of::<ToolDefinition>()),
        ("ToolParameter", schema_of::<ToolParameter>()),
        ("ToolResult", schema_of::<ToolResult>()),
        ("SkillDefinition", schema_of::<SkillDefinition>()),
        ("SkillResult", schema_of::<SkillResult>()),
        ("SkillStatus", schema_of::<SkillStatus>()),
        ("LLMConfig", schema_of::<LLMConfig>()),
        ("ChainNode", schema_of::<ChainNode>()),
        ("ProgressData", schema_of::<ProgressData>()),
        ("StatusData", schema_of::<StatusData>()),
        ("ArtifactData", schema_of::<ArtifactData>()),
        ("LogData", schema_of::<LogData>()),
    ]
}

/// The schema of one message type, by its wire `type`.
pub fn schema_for_type(wire_type: &str) -> Option<Value> {
    message_schemas()
        .into_iter()
        .find(|(t, _)| *t == wire_type)
        .map(|(_, s)| s)
}

/// The committed file name of a message schema: `tool/call/req` → `tool.call.req.json`.
pub fn file_name(wire_type: &str) -> String {
    format!("{}.json", wire_type.replace('/', "."))
}
