//! The built-in tools' arguments, as types: each tool's parameters and the JSON
//! Schema its calls are validated against are derived from these, and a call's
//! arguments are parsed into them (see [`crate::plugin::TypedTool`]).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

pub use super::fs::{GlobArgs, GrepArgs, ListDirArgs, ReadFileArgs, WriteFileArgs};
pub use super::run_command::RunCommandArgs;
pub use super::text::Encoding;

/// An HTTP method `http_request` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
#[allow(missing_docs)]
pub enum HttpMethod {
    #[default]
    Get,
    Post,
    Put,
    Delete,
    Patch,
    Head,
}

impl HttpMethod {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Head => "HEAD",
        }
    }
}

/// `http_request`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct HttpRequestArgs {
    /// http:// or https:// URL.
    pub url: String,
    /// HTTP method (default GET).
    pub method: Option<HttpMethod>,
    /// Request headers (name → value).
    pub headers: Option<Map<String, Value>>,
    /// Request body.
    pub body: Option<String>,
    /// Seconds for the whole exchange (default: host setting).
    pub timeout: Option<u64>,
    /// `text` (default: UTF-8, invalid bytes replaced and labelled utf-8-lossy) or `base64` (exact bytes).
    pub encoding: Option<Encoding>,
}

/// The unit `split_text` cuts at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum SplitUnit {
    #[default]
    Paragraph,
    Line,
    Sentence,
    Word,
}

/// `split_text`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SplitTextArgs {
    /// The text.
    pub text: String,
    /// Unit to cut at (default paragraph).
    pub by: Option<SplitUnit>,
    /// Pack consecutive units into chunks of at most this many characters.
    pub size: Option<u64>,
}

/// `text_stats`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TextStatsArgs {
    /// The text.
    pub text: String,
    /// How many frequent words to list (default 5).
    pub top: Option<u64>,
}

/// `transform`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TransformArgs {
    /// JMESPath expression.
    pub expression: String,
    /// The JSON value to evaluate against.
    #[serde(default)]
    pub data: Value,
}
