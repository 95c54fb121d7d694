//! A plugin's small error ([`a2e_plugin::Error`]) in the host, the host's
//! error as an authored skill sees it, and how the registry takes plugins of
//! either kind ([`PluginError`]).
//!
//! Plugins written against `a2e-plugin` return its four-way error; the host's
//! own tools and skills (built-ins, MCP mounts, plugin processes, chain, LLM,
//! Ontheia and program skills) return [`HostError`] and are stored as they
//! are. An authored plugin is wrapped once, at registration, so that its
//! errors become the host's and the handle its skills get answers with its
//! own error type.

use std::future::Future;
use std::sync::Arc;

use a2e_plugin::{
    DynSkillPlugin, DynToolPlugin, Error, HostHandle, Refusal, SkillCall, SkillOutput, SkillPlugin,
    ToolOutput, ToolPlugin,
};
use a2e_proto::{
    SkillCallRequest, SkillDefinition, SkillResult, ToolCallRequest, ToolDefinition, ToolResult,
};
use futures::TryFutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::HostError;
use crate::plugin::CallContext;

impl HostError {
    /// A tool plugin's error: a failure is `tool_error`.
    pub fn of_tool(error: Error) -> Self {
        Self::of_plugin(error, Self::Tool, |context, source| Self::ToolFailed {
            context,
            source,
        })
    }

    /// A skill plugin's error: a failure is `skill_error`.
    pub fn of_skill(error: Error) -> Self {
        Self::of_plugin(error, Self::Skill, |context, source| Self::SkillFailed {
            context,
            source,
        })
    }

    fn of_plugin(
        error: Error,
        failed: fn(String) -> Self,
        failed_because: fn(String, a2e_plugin::Cause) -> Self,
    ) -> Self {
        match error {
            Error::Refused { kind, message } => match kind {
                Refusal::InvalidArguments(violations) => Self::Schema {
                    message,
                    violations,
                },
                Refusal::Unauthorized => Self::Unauthorized(message),
                Refusal::UnknownTool => Self::UnknownTool(message),
                Refusal::UnknownSkill => Self::UnknownSkill(message),
                // Denied, and whatever refusal a later plugin crate adds.
                _ => Self::Denied(message),
            },
            Error::Failed {
                message,
                source: Some(source),
            } => failed_because(message, source),
            Error::Failed {
                message,
                source: None,
            } => failed(message),
            Error::Cancelled => Self::Cancelled,
            Error::TimedOut { secs } => Self::Timeout(secs),
            other => Self::Runtime(other.to_string()),
        }
    }
}

impl From<Error> for HostError {
    fn from(error: Error) -> Self {
        Self::of_tool(error)
    }
}

/// What an authored skill sees of a host error (a call it made through its
/// [`HostHandle`] was refused or failed): a refusal stays a refusal of the
/// nearest kind, a failure keeps its source.
impl From<HostError> for Error {
    fn from(error: HostError) -> Self {
        let refused = |kind, message| Error::Refused { kind, message };
        match error {
            HostError::UnknownTool(name) => refused(Refusal::UnknownTool, name),
            HostError::UnknownSkill(name) => refused(Refusal::UnknownSkill, name),
            HostError::Denied(why) | HostError::SkillUnavailable(why) => {
                refused(Refusal::Denied, why)
            }
            HostError::Schema {
                message,
                violations,
            } => refused(Refusal::InvalidArguments(violations), message),
            HostError::InvalidChain { message, .. } | HostError::InvalidMessage(message) => {
                refused(Refusal::InvalidArguments(vec![message.clone()]), message)
            }
            HostError::Unauthorized(why) => refused(Refusal::Unauthorized, why),
            e @ HostError::CapabilityNotAccepted(_) => {
                refused(Refusal::Unauthorized, e.to_string())
            }
            HostError::Cancelled => Error::Cancelled,
            HostError::Timeout(secs) => Error::TimedOut { secs },
            HostError::ToolFailed { context, source }
            | HostError::SkillFailed { context, source }
            | HostError::Io { context, source } => Error::Failed {
                message: context,
                source: Some(source),
            },
            other => Error::failed(other.to_string()),
        }
    }
}

/// The error a plugin's calls return, as the registry takes it: the plugin
/// SDK's small [`Error`] (the plugin is wrapped so that its errors become the
/// host's), or [`HostError`] itself for the host's own tools and skills
/// (stored as they are).
pub trait PluginError: Sized + Send + 'static {
    /// `plugin`'s tools, answering with the host's error.
    fn tools(plugin: impl ToolPlugin<Self>) -> Arc<dyn DynToolPlugin<HostError>>;
    /// `plugin`'s skills, answering with the host's error.
    fn skills(plugin: impl SkillPlugin<Self>) -> Arc<dyn DynSkillPlugin<HostError>>;
}

impl PluginError for HostError {
    fn tools(plugin: impl ToolPlugin<Self>) -> Arc<dyn DynToolPlugin<HostError>> {
        Arc::new(plugin)
    }
    fn skills(plugin: impl SkillPlugin<Self>) -> Arc<dyn DynSkillPlugin<HostError>> {
        Arc::new(plugin)
    }
}

impl PluginError for Error {
    fn tools(plugin: impl ToolPlugin<Self>) -> Arc<dyn DynToolPlugin<HostError>> {
        Arc::new(Authored(plugin))
    }
    fn skills(plugin: impl SkillPlugin<Self>) -> Arc<dyn DynSkillPlugin<HostError>> {
        Arc::new(Authored(plugin))
    }
}

/// A plugin written against the SDK, its errors turned into the host's (in
/// the same future as its call: no second allocation per call).
struct Authored<P>(P);

impl<P: ToolPlugin<Error>> ToolPlugin<HostError> for Authored<P> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn priority(&self) -> i32 {
        self.0.priority()
    }
    fn exclusive(&self) -> bool {
        self.0.exclusive()
    }
    fn tools(&self) -> Vec<ToolDefinition> {
        self.0.tools()
    }
    fn input_schema(&self, tool: &ToolDefinition) -> Value {
        self.0.input_schema(tool)
    }
    // A combinator, not an `async` block: the plugin's future is built at
    // once with the arguments and context moved into it, instead of both
    // waiting in a wrapper's state to be moved again at its first poll.
    fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> impl Future<Output = Result<ToolOutput, HostError>> + Send {
        self.0.call(tool, args, ctx).map_err(HostError::of_tool)
    }
    fn load_tools(&self, include_deferred: bool) -> impl Future<Output = bool> + Send {
        self.0.load_tools(include_deferred)
    }
}

impl<P: SkillPlugin<Error>> SkillPlugin<HostError> for Authored<P> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn priority(&self) -> i32 {
        self.0.priority()
    }
    fn exclusive(&self) -> bool {
        self.0.exclusive()
    }
    fn skills(&self) -> Vec<SkillDefinition> {
        self.0.skills()
    }
    fn call(
        &self,
        skill: &str,
        args: Map<String, Value>,
        call: SkillCall<HostError>,
    ) -> impl Future<Output = Result<SkillOutput, HostError>> + Send {
        let call = SkillCall {
            ctx: call.ctx,
            host: Arc::new(AuthoredHandle(call.host)),
            llm_override: call.llm_override,
            metadata: call.metadata,
        };
        self.0.call(skill, args, call).map_err(HostError::of_skill)
    }
}

/// The host as an authored skill reaches it: the same calls, answered with
/// the SDK's error.
struct AuthoredHandle(Arc<dyn HostHandle<HostError>>);

impl HostHandle<Error> for AuthoredHandle {
    fn tools(&self) -> Vec<ToolDefinition> {
        self.0.tools()
    }
    fn call_tool<'a>(
        &'a self,
        req: ToolCallRequest,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolResult, Error>> {
        let call = self.0.call_tool(req, ctx);
        Box::pin(async move { call.await.map_err(Error::from) })
    }
    fn call_skill<'a>(
        &'a self,
        req: SkillCallRequest,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<SkillResult, Error>> {
        let call = self.0.call_skill(req, ctx);
        Box::pin(async move { call.await.map_err(Error::from) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each of the plugin's errors becomes the host error with the wire code
    /// an agent was answered with before the plugin's error was small.
    #[test]
    fn a_plugin_error_keeps_its_wire_code_in_the_host() {
        let io = std::io::Error::other("disk full");
        let cases = [
            (
                Error::denied("outside the root"),
                "tool_denied",
                "tool_denied",
            ),
            (
                Error::invalid_argument("$.n", "too big"),
                "schema_violation",
                "schema_violation",
            ),
            (Error::unauthorized("no"), "unauthorized", "unauthorized"),
            (Error::unknown_tool("nope"), "unknown_tool", "unknown_tool"),
            (Error::failed("broke"), "tool_error", "skill_error"),
            (Error::io("reading", io), "tool_error", "skill_error"),
            (Error::Cancelled, "cancelled", "cancelled"),
            (Error::TimedOut { secs: 3 }, "timeout", "timeout"),
        ];
        for (error, tool_code, skill_code) in cases {
            let text = error.to_string();
            let as_tool = HostError::of_tool(error.clone());
            assert_eq!(as_tool.code().as_str(), tool_code, "{error:?}");
            assert_eq!(as_tool.to_string(), text, "the message is kept");
            assert_eq!(as_tool.is_refusal(), error.is_refusal());
            let as_skill = HostError::of_skill(error.clone());
            assert_eq!(as_skill.code().as_str(), skill_code, "{error:?}");
        }
    }

    /// A failure keeps its source through both conversions.
    #[test]
    fn a_failure_keeps_its_source_both_ways() {
        let e = Error::io("reading x", std::io::Error::other("gone"));
        let host = HostError::of_tool(e);
        assert!(std::error::Error::source(&host).is_some());
        let back = Error::from(host);
        assert_eq!(back.to_string(), "reading x: gone");
        assert!(std::error::Error::source(&back).is_some());
    }

    /// A refusal an authored skill sees keeps its kind and its violations.
    #[test]
    fn a_host_refusal_reaches_a_skill_as_a_refusal() {
        let e = Error::from(HostError::schema(vec!["$.a: missing".into()]));
        assert_eq!(
            e,
            Error::Refused {
                kind: Refusal::InvalidArguments(vec!["$.a: missing".into()]),
                message: "invalid arguments: $.a: missing".into(),
            }
        );
        assert_eq!(
            Error::from(HostError::UnknownSkill("x".into())).to_string(),
            "unknown skill `x`"
        );
        assert_eq!(
            Error::from(HostError::Timeout(4)),
            Error::TimedOut { secs: 4 }
        );
    }
}
