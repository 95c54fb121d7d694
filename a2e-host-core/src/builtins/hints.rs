//! What a client is told about a tool beyond its A2E definition: a title,
//! what the tool does to its world (MCP's `readOnlyHint`, `destructiveHint`,
//! `openWorldHint`) and the JSON Schema of its result.
//!
//! A built-in's title and flags are in its spec, its output schema is derived
//! from its result type (`output.rs`); every built-in answers an object, so
//! each has one.

use serde_json::{Map, Value};

/// A tool's title, hints and output schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolHints {
    /// A name for people.
    pub title: &'static str,
    /// The tool changes nothing.
    pub read_only: bool,
    /// The tool may overwrite or delete what was there (meaningful only when
    /// it is not read-only).
    pub destructive: bool,
    /// The tool reaches beyond the host (the network, whatever a program does).
    pub open_world: bool,
    /// The schema of every successful result's data.
    pub output_schema: Option<Map<String, Value>>,
}

impl ToolHints {
    /// Titled `title`: a tool that changes something, but deletes nothing
    /// and stays within the host, until said otherwise.
    pub(crate) const fn new(title: &'static str) -> Self {
        Self {
            title,
            read_only: false,
            destructive: false,
            open_world: false,
            output_schema: None,
        }
    }

    /// Changes nothing.
    pub(crate) const fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// May overwrite or delete.
    pub(crate) const fn destructive(mut self) -> Self {
        self.destructive = true;
        self
    }

    /// Reaches beyond the host.
    pub(crate) const fn open_world(mut self) -> Self {
        self.open_world = true;
        self
    }

    /// Results are objects with these properties (JSON Schemas by name).
    pub(crate) fn output(mut self, properties: Value) -> Self {
        let mut schema = Map::new();
        schema.insert("type".into(), Value::from("object"));
        schema.insert("properties".into(), properties);
        self.output_schema = Some(schema);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::super::{builtin_hints, definitions};

    #[test]
    fn every_builtin_has_hints_and_an_output_schema() {
        for def in definitions() {
            let hints = builtin_hints(&def.name).unwrap_or_else(|| panic!("{}", def.name));
            assert!(hints.output_schema.is_some(), "{}", def.name);
            assert!(!hints.title.is_empty());
        }
        for reader in ["read_file", "list_dir", "glob", "grep"] {
            assert!(builtin_hints(reader).unwrap().read_only, "{reader}");
        }
        assert!(builtin_hints("write_file").unwrap().destructive);
        assert!(builtin_hints("http_request").unwrap().open_world);
        assert_eq!(builtin_hints("memory_write"), None);
    }
}
