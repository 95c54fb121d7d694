//! Plugin traits: what a tool or skill provider implements (from `a2e-plugin`).
//!
//! A plugin implements [`ToolPlugin`] or [`SkillPlugin`] with native `async fn`;
//! the host stores it behind the object-safe twins [`DynToolPlugin`] /
//! [`DynSkillPlugin`], which every plugin gets for free.

pub(crate) use a2e_plugin::shared_str;
pub use a2e_plugin::{
    CallContext, DynSkillPlugin, DynToolPlugin, EventSink, Extensions, HostHandle, Identity,
    SkillCall, SkillOutput, SkillPlugin, ToolOutput, ToolPlugin, Toolbox, TypedTool, parse_args,
    schema_of,
};
