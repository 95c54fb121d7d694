//! Plugin traits: what a tool or skill provider implements.
//!
//! A plugin implements [`ToolPlugin`] or [`SkillPlugin`] with native `async fn`;
//! the host stores it behind the object-safe twins [`DynToolPlugin`] /
//! [`DynSkillPlugin`], which every plugin gets for free.

mod context;
mod skill;
mod tool;
mod typed;

pub(crate) use context::shared_str;
pub use context::{CallContext, EventSink, Identity};
pub use skill::{DynSkillPlugin, HostHandle, SkillCall, SkillOutput, SkillPlugin};
pub use tool::{DynToolPlugin, ToolOutput, ToolPlugin};
pub use typed::{Toolbox, TypedTool, parse_args, schema_of};
