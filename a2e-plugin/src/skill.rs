//! The skill plugin trait.

use std::future::Future;
use std::sync::Arc;

use a2e_proto::{
    LLMConfig, SkillCallRequest, SkillDefinition, SkillResult, ToolCallRequest, ToolDefinition,
    ToolResult,
};
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::CallContext;
use crate::error::Error;

/// What a skill returns on success.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SkillOutput {
    /// Result data.
    pub data: Value,
    /// Summary for a person.
    pub summary: Value,
    /// Output was cut at a limit.
    pub truncated: bool,
}

impl From<Value> for SkillOutput {
    fn from(data: Value) -> Self {
        Self {
            data,
            ..Self::default()
        }
    }
}

/// What a skill reaches of the host that runs it: the tools and skills of the
/// same host, called as part of the skill's own call (its session, its
/// cancellation, its deadline). Events go out through the call's
/// [`CallContext::emit`].
///
/// Calls answer as the wire does: `Err` is a refusal (unknown name, invalid
/// arguments, denied), `Ok` a result that may say `success: false`.
pub trait HostHandle<E = Error>: Send + Sync + 'static {
    /// The tools the host offers (deferred ones included once loaded).
    fn tools(&self) -> Vec<ToolDefinition>;

    /// Runs a tool in the session and under the cancellation of `ctx`; the
    /// request's own timeout applies, cut to what is left of `ctx`'s deadline.
    fn call_tool<'a>(
        &'a self,
        req: ToolCallRequest,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolResult, E>>;

    /// Runs a skill in the session and under the cancellation of `ctx`.
    fn call_skill<'a>(
        &'a self,
        req: SkillCallRequest,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<SkillResult, E>>;
}

/// Everything a skill call gets besides its arguments.
pub struct SkillCall<E = Error> {
    /// Session, cancellation, deadline and events.
    pub ctx: CallContext,
    /// The host, to call its tools and skills.
    pub host: Arc<dyn HostHandle<E>>,
    /// Model/provider override from the request.
    pub llm_override: Option<LLMConfig>,
    /// Request metadata.
    pub metadata: Map<String, Value>,
}

impl<E> Clone for SkillCall<E> {
    fn clone(&self) -> Self {
        Self {
            ctx: self.ctx.clone(),
            host: self.host.clone(),
            llm_override: self.llm_override.clone(),
            metadata: self.metadata.clone(),
        }
    }
}

/// A provider of skills.
///
/// A call's error is the plugin's [`Error`]; `E` is there for the host, whose
/// own skills return its richer error.
pub trait SkillPlugin<E = Error>: Send + Sync + 'static {
    /// Plugin name (unique among plugins).
    fn name(&self) -> &str;

    /// Dispatch priority; higher first.
    fn priority(&self) -> i32 {
        0
    }

    /// When the highest-priority plugin is exclusive, only it serves.
    fn exclusive(&self) -> bool {
        false
    }

    /// The skills this plugin offers (the host derives `Blocked` from missing tools).
    fn skills(&self) -> Vec<SkillDefinition>;

    /// Runs `skill` with arguments already validated against its `input_schema`.
    fn call(
        &self,
        skill: &str,
        args: Map<String, Value>,
        call: SkillCall<E>,
    ) -> impl Future<Output = Result<SkillOutput, E>> + Send;
}

/// The object-safe form of [`SkillPlugin`], implemented for every `SkillPlugin`.
pub trait DynSkillPlugin<E = Error>: Send + Sync + 'static {
    /// See [`SkillPlugin::name`].
    fn name(&self) -> &str;
    /// See [`SkillPlugin::priority`].
    fn priority(&self) -> i32;
    /// See [`SkillPlugin::exclusive`].
    fn exclusive(&self) -> bool;
    /// See [`SkillPlugin::skills`].
    fn skills(&self) -> Vec<SkillDefinition>;
    /// See [`SkillPlugin::call`].
    fn call_dyn<'a>(
        &'a self,
        skill: &'a str,
        args: Map<String, Value>,
        call: SkillCall<E>,
    ) -> BoxFuture<'a, Result<SkillOutput, E>>;
}

impl<E: 'static, T: SkillPlugin<E>> DynSkillPlugin<E> for T {
    fn name(&self) -> &str {
        SkillPlugin::<E>::name(self)
    }
    fn priority(&self) -> i32 {
        SkillPlugin::<E>::priority(self)
    }
    fn exclusive(&self) -> bool {
        SkillPlugin::<E>::exclusive(self)
    }
    fn skills(&self) -> Vec<SkillDefinition> {
        SkillPlugin::<E>::skills(self)
    }
    fn call_dyn<'a>(
        &'a self,
        skill: &'a str,
        args: Map<String, Value>,
        call: SkillCall<E>,
    ) -> BoxFuture<'a, Result<SkillOutput, E>> {
        Box::pin(SkillPlugin::<E>::call(self, skill, args, call))
    }
}
