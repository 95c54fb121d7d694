//! Typed APIs per capability, mirroring the specification's client APIs.

mod chains;
mod invoke;
mod proc;
mod skills;
mod tools;

pub use chains::{AttachTarget, ChainApi};
pub use invoke::InvokeOptions;
pub use proc::{ProcApi, ProcExit, Process};
pub use skills::{SkillApi, SkillCall, SkillQuery};
pub use tools::{ToolApi, ToolCall, ToolQuery};

use serde_json::{Map, Value};

/// Arguments as a JSON object (anything else becomes `{}`).
pub(crate) fn object(arguments: Value) -> Map<String, Value> {
    match arguments {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
