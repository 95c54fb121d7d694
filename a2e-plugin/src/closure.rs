//! Typed tools from closures: [`Toolbox::tool`].

use std::future::Future;
use std::marker::PhantomData;

use a2e_proto::ToolDefinition;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::{CallContext, Error, ToolOutput, Toolbox, TypedTool};

/// A typed tool made of a definition and an async function of its arguments
/// (built by [`Toolbox::tool`]).
pub struct FnTool<A, F> {
    definition: ToolDefinition,
    f: F,
    args: PhantomData<fn() -> A>,
}

impl<A, F> FnTool<A, F> {
    /// A tool named `name`, described by `description`, that runs `f`.
    pub fn new(name: &str, description: &str, f: F) -> Self {
        Self {
            definition: ToolDefinition::new(name, description),
            f,
            args: PhantomData,
        }
    }

    /// The same tool with its definition changed by `edit` (tags, flags,
    /// output schema); the parameters still come from the arguments' type.
    pub fn define(mut self, edit: impl FnOnce(ToolDefinition) -> ToolDefinition) -> Self {
        self.definition = edit(self.definition);
        self
    }
}

impl<A, F, Fut, O, E> TypedTool<E> for FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send,
    O: Into<ToolOutput>,
{
    type Args = A;

    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    async fn call(&self, args: A, ctx: CallContext) -> Result<ToolOutput, E> {
        (self.f)(args, ctx).await.map(Into::into)
    }
}

impl<E: From<Error> + Send + 'static> Toolbox<E> {
    /// Adds a tool made of a closure: its name and description, and an async
    /// function of its typed arguments and the call's context. The arguments'
    /// type gives the tool's parameters and JSON Schema; what the function
    /// returns becomes the result's `data` (a [`serde_json::Value`], a
    /// `String`, or a whole [`ToolOutput`]).
    pub fn tool<A, F, Fut, O>(self, name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send,
        O: Into<ToolOutput>,
    {
        self.with(FnTool::new(name, description, f))
    }
}
