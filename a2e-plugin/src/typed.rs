//! Typed tools: arguments as a Rust type, schema and parsing from that type.
//!
//! A [`TypedTool`] names its arguments as a `#[derive(Deserialize, JsonSchema)]`
//! type. Its [`ToolDefinition`]'s parameters and the JSON Schema that the host
//! validates calls against both come from that type, and a call's arguments are
//! parsed into it, so the schema and the parsing cannot drift apart. A wrong
//! shape is a `schema_violation` naming the JSON path. A [`Toolbox`] gathers
//! typed tools into one [`ToolPlugin`]:
//!
//! ```
//! use a2e_plugin::{CallContext, ToolOutput, Toolbox, TypedTool};
//! use a2e_plugin::Error;
//! use a2e_proto::ToolDefinition;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! /// Greets someone.
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//!     /// How often (default 1).
//!     times: Option<u32>,
//! }
//!
//! struct Greeter;
//!
//! impl TypedTool for Greeter {
//!     type Args = Greet;
//!     fn definition(&self) -> ToolDefinition {
//!         ToolDefinition::new("greet", "Greets someone")
//!     }
//!     async fn call(&self, args: Greet, _ctx: CallContext) -> Result<ToolOutput, Error> {
//!         let line = format!("hello, {}", args.name);
//!         Ok(serde_json::json!(vec![line; args.times.unwrap_or(1) as usize]).into())
//!     }
//! }
//!
//! let plugin = Toolbox::new("greeter").with(Greeter);
//! # let _ = plugin;
//! ```

use std::future::Future;
use std::sync::Arc;

use a2e_proto::ToolDefinition;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{CallContext, ToolOutput, ToolPlugin};
use crate::error::Error;

/// A tool whose arguments are the type [`TypedTool::Args`]; its error is the
/// plugin's [`Error`] (`E` is there for the host's own tools).
pub trait TypedTool<E = Error>: Send + Sync + 'static {
    /// The arguments: their JSON Schema becomes the tool's parameters.
    type Args: DeserializeOwned + JsonSchema + Send;

    /// Name, description, tags and flags; the input parameters are filled in
    /// from [`TypedTool::Args`].
    fn definition(&self) -> ToolDefinition;

    /// Runs the tool with parsed arguments.
    fn call(
        &self,
        args: Self::Args,
        ctx: CallContext,
    ) -> impl Future<Output = Result<ToolOutput, E>> + Send;
}

/// The JSON Schema (draft 2020-12) of `T`, inlined where schemars allows.
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
    }
    value
}

/// Parses `args` into `T`; a wrong shape is a schema violation naming its path.
pub fn parse_args<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, Error> {
    serde_path_to_error::deserialize(Value::Object(args)).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { "$".to_owned() } else { path };
        Error::invalid_arguments(vec![format!("{path}: {}", e.into_inner())])
    })
}

/// One typed tool, erased.
trait ErasedTool<E>: Send + Sync {
    fn definition(&self) -> &ToolDefinition;
    fn schema(&self) -> &Value;
    fn call<'a>(
        &'a self,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, E>>;
}

struct Erased<T> {
    tool: T,
    definition: ToolDefinition,
    schema: Value,
}

impl<E: From<Error>, T: TypedTool<E>> ErasedTool<E> for Erased<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }
    fn schema(&self) -> &Value {
        &self.schema
    }
    fn call<'a>(
        &'a self,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, E>> {
        Box::pin(async move {
            let args = parse_args::<T::Args>(args)?;
            self.tool.call(args, ctx).await
        })
    }
}

/// A [`ToolPlugin`] made of [`TypedTool`]s.
pub struct Toolbox<E = Error> {
    name: String,
    priority: i32,
    tools: Vec<Arc<dyn ErasedTool<E>>>,
}

impl Toolbox {
    /// An empty toolbox named `name` (the plugin name).
    pub fn new(name: impl Into<String>) -> Self {
        Self::returning(name)
    }
}

impl<E: From<Error> + Send + 'static> Toolbox<E> {
    /// An empty toolbox named `name` whose tools return the error `E` rather
    /// than the plugin's [`Error`] (the host's own tools return its error).
    pub fn returning(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            priority: 0,
            tools: Vec::new(),
        }
    }

    /// The same toolbox with a dispatch priority.
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Adds a typed tool.
    pub fn with<T: TypedTool<E>>(mut self, tool: T) -> Self {
        self.push(tool);
        self
    }

    /// Adds a typed tool in place.
    pub fn push<T: TypedTool<E>>(&mut self, tool: T) {
        let schema = schema_of::<T::Args>();
        let mut definition = tool.definition();
        definition.input_parameters = a2e_proto::params_from_schema(&schema);
        self.tools.push(Arc::new(Erased {
            tool,
            definition,
            schema,
        }));
    }

    /// Keeps only the tools `keep` accepts.
    pub fn retain(mut self, mut keep: impl FnMut(&ToolDefinition) -> bool) -> Self {
        self.tools.retain(|t| keep(t.definition()));
        self
    }

    fn find(&self, name: &str) -> Option<&Arc<dyn ErasedTool<E>>> {
        self.tools.iter().find(|t| t.definition().name == name)
    }
}

impl<E: From<Error> + Send + 'static> ToolPlugin<E> for Toolbox<E> {
    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.tools.iter().map(|t| t.definition().clone()).collect()
    }

    fn input_schema(&self, tool: &ToolDefinition) -> Value {
        self.find(&tool.name)
            .map(|t| t.schema().clone())
            .unwrap_or_else(|| tool.input_schema())
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> Result<ToolOutput, E> {
        let Some(found) = self.find(tool).cloned() else {
            return Err(Error::unknown_tool(tool).into());
        };
        found.call(args, ctx).await
    }
}
