//! A mounted server's tools in A2E terms.

use std::collections::HashMap;
use std::sync::Arc;

use a2e_proto::ToolDefinition;
use serde_json::{Map, Value};

use crate::schema::{ArgumentsMismatch, InputValidator, params_from_schema};

/// One tool of a mounted server.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// Its A2E definition: the MCP name, `toolkit` = the server, parameters
    /// converted from the input schema, `defer_loading` from the config.
    pub definition: ToolDefinition,
    /// The full MCP input schema (what arguments are checked against).
    pub input_schema: Arc<Map<String, Value>>,
    /// The MCP output schema, if the tool declares one.
    pub output_schema: Option<Arc<Map<String, Value>>>,
    validator: Arc<InputValidator>,
}

impl McpTool {
    /// Converts an MCP tool of `server`.
    pub fn from_mcp(server: &str, defer_loading: bool, tool: rmcp::model::Tool) -> Self {
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or_default();
        let mut definition = ToolDefinition::new(&tool.name, description);
        definition.input_parameters = params_from_schema(&tool.input_schema);
        if let Some(out) = &tool.output_schema {
            definition.output_parameters = params_from_schema(out);
        }
        definition.toolkit = Some(server.to_owned());
        definition.defer_loading = defer_loading;
        definition.tags = vec!["mcp".into(), server.to_owned()];
        if let Some(a) = &tool.annotations {
            if a.read_only_hint == Some(true) {
                definition.tags.push("read-only".into());
            }
            definition.idempotent =
                a.idempotent_hint == Some(true) || a.read_only_hint == Some(true);
        }
        let validator = Arc::new(InputValidator::new(&tool.input_schema));
        Self {
            definition,
            input_schema: tool.input_schema,
            output_schema: tool.output_schema,
            validator,
        }
    }

    /// The tool's MCP name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The input schema as a JSON value.
    pub fn input_schema_value(&self) -> Value {
        Value::Object((*self.input_schema).clone())
    }

    /// Checks arguments against the full input schema.
    pub fn check_arguments(&self, args: &Map<String, Value>) -> Result<(), ArgumentsMismatch> {
        self.validator.check(args)
    }

    /// [`check_arguments`](Self::check_arguments) for arguments held as a
    /// JSON value (no copy).
    pub fn check_argument_value(&self, args: &Value) -> Result<(), ArgumentsMismatch> {
        self.validator.check_value(args)
    }
}

/// The tools a server listed, by name.
#[derive(Debug, Clone, Default)]
pub struct ToolCatalog {
    tools: Vec<McpTool>,
    by_name: HashMap<String, usize>,
}

impl ToolCatalog {
    /// A catalog of `tools` (a repeated name keeps its first tool).
    pub fn new(tools: Vec<McpTool>) -> Self {
        let mut by_name = HashMap::new();
        for (i, t) in tools.iter().enumerate() {
            by_name.entry(t.name().to_owned()).or_insert(i);
        }
        Self { tools, by_name }
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&McpTool> {
        self.by_name.get(name).and_then(|i| self.tools.get(*i))
    }

    /// All tools, in the server's order.
    pub fn iter(&self) -> impl Iterator<Item = &McpTool> {
        self.tools.iter()
    }

    /// Their names.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name().to_owned()).collect()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
