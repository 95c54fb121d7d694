//! The built-in tools' arguments, as types: each tool's parameters and the JSON
//! Schema its calls are validated against are derived from these, and a call's
//! arguments are parsed into them (see [`crate::plugin::TypedTool`]). Each is
//! defined in the file of its tool.

pub use super::fs::{GlobArgs, GrepArgs, ListDirArgs, ReadFileArgs, WriteFileArgs};
pub use super::http_request::{HttpMethod, HttpRequestArgs};
pub use super::run_command::RunCommandArgs;
pub use super::split_text::{SplitTextArgs, SplitUnit};
pub use super::text::Encoding;
pub use super::text_stats::TextStatsArgs;
pub use super::transform::TransformArgs;
