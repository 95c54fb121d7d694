//! The tool plugin trait.

use std::future::Future;

use a2e_proto::ToolDefinition;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::CallContext;
use crate::error::Error;

/// What a tool returns on success.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// Result data.
    pub data: Value,
    /// Summary for a person.
    pub summary: Value,
    /// Output was cut at a limit.
    pub truncated: bool,
    /// Exit code of a process the tool ran.
    pub exit_code: Option<i64>,
}

impl From<Value> for ToolOutput {
    fn from(data: Value) -> Self {
        Self {
            data,
            ..Self::default()
        }
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Value::String(text).into()
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        Value::String(text.to_owned()).into()
    }
}

/// A provider of tools.
///
/// A call's error is the plugin's [`Error`] (refused, failed, cancelled, timed
/// out); `E` is there for the host, whose own tools return its richer error.
///
/// ```
/// use a2e_plugin::{CallContext, ToolOutput, ToolPlugin};
/// use a2e_plugin::Error;
/// use a2e_proto::{ToolDefinition, ToolParameter};
/// use serde_json::{Map, Value};
///
/// struct Echo;
///
/// impl ToolPlugin for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn tools(&self) -> Vec<ToolDefinition> {
///         vec![ToolDefinition::new("echo", "Returns its arguments")
///             .param(ToolParameter::new("text", "string", "What to echo").required())]
///     }
///     async fn call(&self, _tool: &str, args: Map<String, Value>, _ctx: CallContext) -> Result<ToolOutput, Error> {
///         Ok(Value::Object(args).into())
///     }
/// }
/// ```
pub trait ToolPlugin<E = Error>: Send + Sync + 'static {
    /// Plugin name (unique among plugins).
    fn name(&self) -> &str;

    /// Dispatch priority; higher first (a2e-core.md §6).
    fn priority(&self) -> i32 {
        0
    }

    /// When the highest-priority plugin is exclusive, only it serves.
    fn exclusive(&self) -> bool {
        false
    }

    /// The tools this plugin offers.
    fn tools(&self) -> Vec<ToolDefinition>;

    /// The JSON Schema that a call's arguments are validated against (compiled
    /// once at registration). By default it is derived from the tool's
    /// parameters ([`ToolDefinition::input_schema`]); a plugin whose tools come
    /// with a fuller schema (typed tools, mounted MCP tools) returns that.
    fn input_schema(&self, tool: &ToolDefinition) -> Value {
        tool.input_schema()
    }

    /// Runs `tool` with arguments already validated against its parameters.
    fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> impl Future<Output = Result<ToolOutput, E>> + Send;

    /// Brings in tools that load on first use (mounted MCP servers that are
    /// not `eager`): the host asks before a `tool/list` (`include_deferred`
    /// when the list searches deferred tools too) and when a call names a
    /// tool it does not know. Returns whether [`tools`](Self::tools) may now
    /// list something else; the host then brings its registry in line: new
    /// tools join, changed definitions replace the old, and tools no longer
    /// listed leave. By default a plugin's tools are all known when it is
    /// registered.
    fn load_tools(&self, include_deferred: bool) -> impl Future<Output = bool> + Send {
        let _ = include_deferred;
        std::future::ready(false)
    }
}

/// The object-safe form of [`ToolPlugin`], implemented for every `ToolPlugin`.
pub trait DynToolPlugin<E = Error>: Send + Sync + 'static {
    /// See [`ToolPlugin::name`].
    fn name(&self) -> &str;
    /// See [`ToolPlugin::priority`].
    fn priority(&self) -> i32;
    /// See [`ToolPlugin::exclusive`].
    fn exclusive(&self) -> bool;
    /// See [`ToolPlugin::tools`].
    fn tools(&self) -> Vec<ToolDefinition>;
    /// See [`ToolPlugin::input_schema`].
    fn input_schema(&self, tool: &ToolDefinition) -> Value;
    /// See [`ToolPlugin::call`].
    fn call_dyn<'a>(
        &'a self,
        tool: &'a str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, E>>;
    /// See [`ToolPlugin::load_tools`].
    fn load_tools_dyn(&self, include_deferred: bool) -> BoxFuture<'_, bool>;
}

impl<E: 'static, T: ToolPlugin<E>> DynToolPlugin<E> for T {
    fn name(&self) -> &str {
        ToolPlugin::<E>::name(self)
    }
    fn priority(&self) -> i32 {
        ToolPlugin::<E>::priority(self)
    }
    fn exclusive(&self) -> bool {
        ToolPlugin::<E>::exclusive(self)
    }
    fn tools(&self) -> Vec<ToolDefinition> {
        ToolPlugin::<E>::tools(self)
    }
    fn input_schema(&self, tool: &ToolDefinition) -> Value {
        ToolPlugin::<E>::input_schema(self, tool)
    }
    fn call_dyn<'a>(
        &'a self,
        tool: &'a str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, E>> {
        Box::pin(ToolPlugin::<E>::call(self, tool, args, ctx))
    }
    fn load_tools_dyn(&self, include_deferred: bool) -> BoxFuture<'_, bool> {
        Box::pin(ToolPlugin::<E>::load_tools(self, include_deferred))
    }
}
