//! Plugin traits: what a tool or skill provider implements (from `a2e-plugin`).
//!
//! A plugin implements [`ToolPlugin`] or [`SkillPlugin`] with native `async fn`;
//! the host stores it behind the object-safe twins [`DynToolPlugin`] /
//! [`DynSkillPlugin`], which every plugin gets for free. A plugin written
//! against the SDK returns its small [`Error`]; the host's own tools and
//! skills implement the same traits with [`HostError`](crate::HostError)
//! (`ToolPlugin<HostError>`), and the registry takes either
//! ([`PluginError`](crate::error::PluginError)).

pub(crate) use a2e_plugin::shared_str;
pub use a2e_plugin::{
    CallContext, DynSkillPlugin, DynToolPlugin, Error, EventSink, Extensions, HostHandle, Identity,
    Refusal, SkillCall, SkillOutput, SkillPlugin, ToolOutput, ToolPlugin, Toolbox, TypedTool,
    parse_args, schema_of,
};
