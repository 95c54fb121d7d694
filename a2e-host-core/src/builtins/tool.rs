//! What a built-in tool is: one type per tool, implementing [`Builtin`], holds
//! its definition ([`Spec`]: name, description, tags, flags, hints), its
//! argument type, its result type and its run. Everything clients are told of
//! the tool comes from there: the A2E definition (input parameters from the
//! arguments, output parameters from the result, see [`super::output`]), the
//! JSON Schema its calls are validated against, and its MCP hints.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use a2e_proto::ToolDefinition;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::hints::ToolHints;
use super::output;
use crate::config::HostConfig;
use crate::error::{HostError, HostResult};
use crate::plugin::{CallContext, ToolOutput, Toolbox, TypedTool};

/// A built-in's definition beyond its argument and result types.
pub(crate) struct Spec {
    /// The tool's name on the wire.
    pub name: &'static str,
    /// What the tool does.
    pub description: &'static str,
    /// Classification tags, in listing order.
    pub tags: &'static [&'static str],
    /// Calling it twice with the same arguments has the effect of calling it once.
    pub idempotent: bool,
    /// Its title and what it does to its world; the output schema is filled
    /// in from the result type.
    pub hints: ToolHints,
}

/// What a run of a built-in yields: its typed data, and what the host reports
/// beside it.
pub(crate) struct Done<T> {
    /// The result's data.
    pub data: T,
    /// A summary for a person.
    pub summary: Option<String>,
    /// Output was cut at a limit.
    pub truncated: bool,
    /// The exit code of a program the tool ran.
    pub exit_code: Option<i64>,
}

impl<T> Done<T> {
    /// `data`, with no summary, nothing cut, no exit code.
    pub fn new(data: T) -> Self {
        Self {
            data,
            summary: None,
            truncated: false,
            exit_code: None,
        }
    }

    /// The same, summarised for a person.
    pub fn summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }

    /// The same, cut at a limit when `truncated`.
    pub fn truncated(mut self, truncated: bool) -> Self {
        self.truncated = truncated;
        self
    }
}

/// What the built-in tools run with: the configuration (which they read
/// through this, as `&HostConfig`) and how commands start.
pub(crate) struct Env {
    pub config: Arc<HostConfig>,
    pub launcher: crate::proc::Launcher,
}

impl std::ops::Deref for Env {
    type Target = HostConfig;

    fn deref(&self) -> &HostConfig {
        &self.config
    }
}

/// A built-in tool, defined in one place.
pub(crate) trait Builtin: 'static {
    /// Name, description, tags, flags and hints.
    const SPEC: Spec;

    /// The arguments: the input parameters and the schema calls are validated
    /// against come from this type, and calls are parsed into it.
    type Args: DeserializeOwned + JsonSchema + Send;

    /// The result's data: the output parameters and the output schema come
    /// from this type, and results are serialized from it.
    type Output: Serialize + JsonSchema;

    /// Runs the tool.
    fn run(
        env: &Env,
        args: Self::Args,
        ctx: &CallContext,
    ) -> impl Future<Output = HostResult<Done<Self::Output>>> + Send;
}

/// The A2E definition of `B`, but for its input parameters (which the
/// toolbox fills in from `B::Args`).
fn definition<B: Builtin>() -> ToolDefinition {
    let spec = &B::SPEC;
    let mut def = ToolDefinition::new(spec.name, spec.description).tags(spec.tags);
    def.idempotent = spec.idempotent;
    def.output_parameters = output::parameters::<B::Output>();
    def
}

/// The hints of `B`, with its output schema.
fn hints<B: Builtin>() -> ToolHints {
    B::SPEC.hints.output(output::properties::<B::Output>())
}

/// `B` as a [`TypedTool`] of a toolbox.
struct Tool<B>(Arc<Env>, PhantomData<fn() -> B>);

impl<B: Builtin> TypedTool<HostError> for Tool<B> {
    type Args = B::Args;

    fn definition(&self) -> ToolDefinition {
        definition::<B>()
    }

    async fn call(&self, args: B::Args, ctx: CallContext) -> HostResult<ToolOutput> {
        let done = B::run(&self.0, args, &ctx).await?;
        let data = serde_json::to_value(&done.data)
            .map_err(|e| HostError::tool_failed("result is not JSON", e))?;
        Ok(ToolOutput {
            data,
            summary: done.summary.map_or(Value::Null, Value::String),
            truncated: done.truncated,
            exit_code: done.exit_code,
        })
    }
}

/// One built-in, its type erased: its name, its hints and how it joins a
/// toolbox.
pub(crate) struct Entry {
    /// The tool's name.
    pub name: &'static str,
    hints: fn() -> ToolHints,
    add: fn(Toolbox<HostError>, Arc<Env>) -> Toolbox<HostError>,
}

impl Entry {
    /// The tool's hints.
    pub fn hints(&self) -> ToolHints {
        (self.hints)()
    }

    /// `toolbox` with the tool added, running with `env`.
    pub fn add_to(&self, toolbox: Toolbox<HostError>, env: Arc<Env>) -> Toolbox<HostError> {
        (self.add)(toolbox, env)
    }
}

/// The entry of `B`.
pub(crate) fn entry<B: Builtin>() -> Entry {
    Entry {
        name: B::SPEC.name,
        hints: hints::<B>,
        add: |toolbox, env| toolbox.with(Tool::<B>(env, PhantomData)),
    }
}
