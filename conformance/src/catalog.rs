//! The spec's field defaults (`fixtures/defaults.json`) and the typed
//! round trip of every message type and data model by name.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use a2e_proto::{
    Capability, ChainNode, LLMConfig, Message, SkillDefinition, SkillResult, ToolDefinition,
    ToolParameter, ToolResult,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::json;

/// Every data model (non-message type) the catalog may name.
pub const MODELS: &[&str] = &[
    "Capability",
    "ToolDefinition",
    "ToolParameter",
    "ToolResult",
    "SkillDefinition",
    "LLMConfig",
    "SkillResult",
    "ChainNode",
];

/// How a nested field holds its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One value (or `null`).
    One,
    /// A list of values.
    List,
    /// An object whose every value is one.
    Map,
}

/// A nested field's model and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nested {
    /// The model's name (a message type or one of [`MODELS`]).
    pub model: String,
    /// How the field holds it.
    pub shape: Shape,
}

/// The spec's table for one message type or data model.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The smallest valid instance.
    pub minimal: Map<String, Value>,
    /// Field → spec default (`{"$fresh": …}` for values made fresh on every message).
    pub defaults: Map<String, Value>,
    /// Fields whose default the spec leaves open.
    pub unspecified: Vec<String>,
    /// Fields that hold another model.
    pub nested: BTreeMap<String, Nested>,
}

/// The spec's defaults of every message type and data model.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    envelope: Map<String, Value>,
    entries: BTreeMap<String, Entry>,
}

/// Whether `name` is a message type (rather than a data model).
pub fn is_message(name: &str) -> bool {
    Message::TYPES.contains(&name)
}

impl Catalog {
    /// Reads `fixtures/defaults.json`.
    pub fn load() -> Result<Self, String> {
        Self::from_value(&crate::fixtures::load_json("defaults.json")?)
    }

    /// Builds a catalog from the JSON form of `defaults.json`.
    pub fn from_value(value: &Value) -> Result<Self, String> {
        let envelope = value
            .pointer("/envelope/defaults")
            .and_then(Value::as_object)
            .cloned()
            .ok_or("defaults.json: no envelope.defaults object")?;
        let types = value
            .get("types")
            .and_then(Value::as_object)
            .ok_or("defaults.json: no types object")?;
        let mut entries = BTreeMap::new();
        for (name, entry) in types {
            entries.insert(name.clone(), parse_entry(name, entry)?);
        }
        Ok(Self { envelope, entries })
    }

    /// The table of `name`.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name)
    }

    /// Every message type and model the catalog describes.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The spec default of `field` of `name`, the envelope's included.
    pub fn spec_default(&self, name: &str, field: &str) -> Option<&Value> {
        let own = self.entries.get(name).and_then(|e| e.defaults.get(field));
        match own {
            Some(value) => Some(value),
            None if is_message(name) => self.envelope.get(field),
            None => None,
        }
    }

    /// Every spec default of `name`, the envelope's first for a message.
    pub fn all_defaults(&self, name: &str) -> Map<String, Value> {
        let mut all = Map::new();
        if is_message(name) {
            all.extend(self.envelope.clone());
        }
        if let Some(entry) = self.entries.get(name) {
            all.extend(entry.defaults.clone());
        }
        all
    }

    /// The minimal instance of `name`, decoded and re-encoded: the decoder's defaults.
    pub fn minimal_reencoded(&self, name: &str) -> Result<Map<String, Value>, String> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| format!("defaults.json has no entry for `{name}`"))?;
        match reencode(name, &Value::Object(entry.minimal.clone()))? {
            Value::Object(map) => Ok(map),
            other => Err(format!(
                "minimal `{name}` re-encodes as {}",
                json::type_name(&other)
            )),
        }
    }
}

fn parse_entry(name: &str, entry: &Value) -> Result<Entry, String> {
    let object = |key: &str| -> Result<Map<String, Value>, String> {
        match entry.get(key) {
            Some(Value::Object(map)) => Ok(map.clone()),
            None => Ok(Map::new()),
            Some(_) => Err(format!("defaults.json: {name}.{key} is not an object")),
        }
    };
    let minimal = match entry.get("minimal") {
        Some(Value::Object(map)) => map.clone(),
        _ => return Err(format!("defaults.json: {name} has no minimal object")),
    };
    let unspecified = match entry.get("unspecified") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("defaults.json: {name}.unspecified holds a non-string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("defaults.json: {name}.unspecified is not a list")),
    };
    let mut nested = BTreeMap::new();
    for (field, spec) in object("nested")? {
        let spec = spec
            .as_str()
            .ok_or_else(|| format!("defaults.json: {name}.nested.{field} is not a string"))?;
        let (model, shape) = if let Some(m) = spec.strip_suffix("[]") {
            (m, Shape::List)
        } else if let Some(m) = spec.strip_suffix("{}") {
            (m, Shape::Map)
        } else {
            (spec, Shape::One)
        };
        if !is_message(model) && !MODELS.contains(&model) {
            return Err(format!(
                "defaults.json: {name}.nested.{field} names unknown model `{model}`"
            ));
        }
        nested.insert(
            field,
            Nested {
                model: model.to_owned(),
                shape,
            },
        );
    }
    Ok(Entry {
        minimal,
        defaults: object("defaults")?,
        unspecified,
        nested,
    })
}

fn typed<T: DeserializeOwned + Serialize>(value: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

/// Decodes `value` as the message type or model `name` and encodes it again.
pub fn reencode(name: &str, value: &Value) -> Result<Value, String> {
    match name {
        "Capability" => typed::<Capability>(value),
        "ToolDefinition" => typed::<ToolDefinition>(value),
        "ToolParameter" => typed::<ToolParameter>(value),
        "ToolResult" => typed::<ToolResult>(value),
        "SkillDefinition" => typed::<SkillDefinition>(value),
        "LLMConfig" => typed::<LLMConfig>(value),
        "SkillResult" => typed::<SkillResult>(value),
        "ChainNode" => typed::<ChainNode>(value),
        message if is_message(message) => {
            let bytes = serde_json::to_vec(value).map_err(|e| e.to_string())?;
            let decoded = a2e_proto::decode(&bytes).map_err(|e| e.to_string())?;
            if matches!(decoded, Message::Unknown(_)) || decoded.type_str() != message {
                return Err(format!("decoded as `{}`", decoded.type_str()));
            }
            serde_json::from_slice(&decoded.to_json()).map_err(|e| e.to_string())
        }
        other => Err(format!("no such message type or model: `{other}`")),
    }
}

/// Checks a value the decoder made fresh: `{"$fresh": "hex:N"}` (N hex digits)
/// or `{"$fresh": "now"}` (a Unix time within ten minutes of now).
pub fn check_fresh(spec: &Value, value: &Value) -> Result<(), String> {
    let kind = spec.get("$fresh").and_then(Value::as_str).unwrap_or("");
    if let Some(digits) = kind.strip_prefix("hex:") {
        let want: usize = digits
            .parse()
            .map_err(|_| format!("bad fresh spec {spec}"))?;
        return match value.as_str() {
            Some(s) if s.len() == want && s.bytes().all(|b| b.is_ascii_hexdigit()) => Ok(()),
            _ => Err(format!(
                "expected a fresh id of {want} hex digits, found {value}"
            )),
        };
    }
    if kind == "now" {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        return match value.as_f64() {
            Some(t) if (t - now).abs() < 600.0 => Ok(()),
            _ => Err(format!(
                "expected the current Unix time (about {now:.0}), found {value}"
            )),
        };
    }
    Err(format!("bad fresh spec {spec}"))
}

/// Whether a default from the table is a fresh-value marker.
pub fn is_fresh(spec: &Value) -> bool {
    spec.get("$fresh").is_some()
}
