//! What an A2E plugin author needs: the tool and skill plugin traits, typed
//! tools, the call context, the small error a call returns ([`Error`]:
//! refused with a kind, failed with a source, cancelled, timed out), and [`serve`], which
//! serves a plugin's tools over stdio — with [`a2e_proto`], [`schemars`],
//! [`serde`] and [`serde_json`] re-exported.
//!
//! A typed tool is a closure over an argument struct: the struct's type gives
//! the tool's parameters and JSON Schema, and a call's arguments are parsed
//! into it (a wrong shape is a `schema_violation` naming the JSON path). The
//! struct derives `Deserialize` and `JsonSchema` from the plugin crate's own
//! `serde` and `schemars` dependencies (the same major versions as this
//! crate's, which cargo then builds once), so it needs no attributes naming
//! where those crates are.
//!
//! ```
//! use a2e_plugin::{Error, Toolbox};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! /// What `repeat` takes.
//! #[derive(Deserialize, JsonSchema)]
//! struct RepeatArgs {
//!     /// The text to repeat.
//!     text: String,
//!     /// How often.
//!     times: u32,
//! }
//!
//! let notes = Toolbox::new("notes").tool("repeat", "Repeat a text", |args: RepeatArgs, _cx| async move {
//!     let times = usize::try_from(args.times).map_err(|_| Error::failed("too many"))?;
//!     Ok(args.text.repeat(times))
//! });
//! # use a2e_plugin::{CallContext, DynToolPlugin};
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! # let args = a2e_plugin::serde_json::json!({"text": "ab", "times": 3});
//! # let out = rt.block_on(notes.call_dyn("repeat", args.as_object().unwrap().clone(), CallContext::detached())).unwrap();
//! # assert_eq!(out.data, "ababab");
//! # assert_eq!(notes.tools()[0].input_parameters.len(), 2);
//! ```
//!
//! The same tool in the trait form, for a tool with state of its own, is a
//! [`TypedTool`] added with [`Toolbox::with`]; a provider of many tools whose
//! list changes implements [`ToolPlugin`] itself. [`serve`] serves a plugin's
//! tools over standard input and output (the crate's `examples/notes.rs` is a
//! plugin binary's whole `main.rs`): the `a2e` host mounts such a binary with
//! a `[[plugins]]` entry, and an agent can talk to it directly. A plugin in
//! another language answers the same protocol (the repository's
//! `docs/plugin-protocol.md`). The `a2e` host (crate `a2e-host`) also runs
//! the same plugin types in process, beside its own tools, skills and chains.
//!
//! A skill ([`SkillPlugin`]) reaches the host that runs it through the narrow
//! [`HostHandle`] in its [`SkillCall`]: the tools on offer, a tool call and a
//! skill call in the skill's own session; events go out through
//! [`CallContext::emit`].
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod closure;
pub mod content;
mod context;
mod error;
mod serve;
mod skill;
mod tool;
mod typed;

pub use a2e_proto;
pub use schemars;
pub use serde;
pub use serde_json;

pub use closure::FnTool;
pub use content::{Content, EmbeddedResource};
pub use context::{CallContext, EventSink, Extensions, Identity, shared_str};
pub use error::{Cause, Error, Refusal, Result};
pub use serve::serve;
pub use skill::{DynSkillPlugin, HostHandle, SkillCall, SkillOutput, SkillPlugin};
pub use tool::{DynToolPlugin, ToolOutput, ToolPlugin};
pub use typed::{Toolbox, TypedTool, parse_args, schema_of};
