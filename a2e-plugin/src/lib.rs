//! What an A2E plugin author needs: the tool and skill plugin traits, typed
//! tools, the call context, and the error a call returns.
//!
//! A plugin implements [`ToolPlugin`] or [`SkillPlugin`] with native `async fn`;
//! a host stores it behind the object-safe twins [`DynToolPlugin`] /
//! [`DynSkillPlugin`], which every plugin gets for free.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod context;
mod error;
mod skill;
mod tool;
mod typed;

pub use context::{CallContext, EventSink, Identity, shared_str};
pub use error::{Cause, HostError, HostResult};
pub use skill::{DynSkillPlugin, HostHandle, SkillCall, SkillOutput, SkillPlugin};
pub use tool::{DynToolPlugin, ToolOutput, ToolPlugin};
pub use typed::{Toolbox, TypedTool, parse_args, schema_of};
