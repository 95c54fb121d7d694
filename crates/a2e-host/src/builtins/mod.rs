//! Built-in tools, confined to the workspace root.

use std::sync::Arc;

use a2e_proto::ToolDefinition;
use serde_json::{Map, Value};

use crate::config::HostConfig;
use crate::error::{HostError, HostResult};
use crate::plugin::{CallContext, ToolOutput, ToolPlugin};

/// The built-in tools the configuration enables.
pub struct BuiltinTools {
    config: Arc<HostConfig>,
}

impl BuiltinTools {
    /// Built-ins per `config`.
    pub fn new(config: Arc<HostConfig>) -> Self {
        Self { config }
    }
}

impl ToolPlugin for BuiltinTools {
    fn name(&self) -> &str {
        "builtin"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        let _ = &self.config;
        Vec::new()
    }

    async fn call(
        &self,
        tool: &str,
        _args: Map<String, Value>,
        _ctx: CallContext,
    ) -> HostResult<ToolOutput> {
        Err(HostError::UnknownTool(tool.into()))
    }
}
