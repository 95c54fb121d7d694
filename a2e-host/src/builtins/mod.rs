//! Built-in tools, confined to the workspace root.
//!
//! | tool | tags | what |
//! |---|---|---|
//! | `read_file` | fs | bytes of a file from `offset`, up to `limit` and `files.read_max_bytes` |
//! | `write_file` | fs | atomic write (temporary file in the same directory, then rename) |
//! | `list_dir` | fs | entries `{name, kind, size}`, sorted, at most `files.max_results` |
//! | `glob` | fs, search | paths matching a glob, sorted, at most `files.max_results` |
//! | `grep` | fs, search | lines matching a regex, binary files skipped |
//! | `run_command` | process | an allowed program, no shell, its own process group |
//! | `http_request` | network, http | one request to an allowed host |
//! | `split_text` | text | cut a text into chunks (paragraph, line, sentence, word; packed by size) |
//! | `text_stats` | text | words, lines, sentences, characters, most frequent words |
//! | `transform` | data | a JMESPath expression over any JSON |
//!
//! Only the tools named in `builtins` of the configuration are listed and
//! served. Paths are resolved by [`paths::resolve`]: relative to the root,
//! absolute ones only under it, never out of it through `..` or a symbolic
//! link (refused with `tool_denied`). Results that hit a cap set `truncated`.
//!
//! Text: file contents and response bodies come back as UTF-8 text when they
//! are UTF-8, else decoded lossily and labelled `"encoding": "utf-8-lossy"`;
//! `"encoding": "base64"` in the arguments returns the exact bytes instead
//! (see [`text`]).
//!
//! Exit codes: `run_command` succeeds whenever the program ran to its end,
//! whatever its exit code; the code is in `exit_code` (of the data and of the
//! result), `null` with `signal` set when a signal ended it. A timeout or a
//! cancellation is a failure (`timeout`).

mod command;
mod compute;
mod fs;
mod http;
pub mod paths;
pub mod text;

use std::collections::BTreeMap;
use std::sync::Arc;

use a2e_proto::{ToolDefinition, ToolParameter};
use serde_json::{Map, Value};

use crate::config::HostConfig;
use crate::error::{HostError, HostResult};
use crate::plugin::{CallContext, ToolOutput, ToolPlugin};

pub use http::{MAX_REDIRECTS, host_allowed};

/// Reading typed arguments; a wrong type is a schema violation.
pub(crate) mod args {
    use serde_json::{Map, Value};

    use crate::error::{HostError, HostResult};

    fn wrong(name: &str, expected: &str) -> HostError {
        HostError::schema(vec![format!("{name}: expected {expected}")])
    }

    /// An optional string (`null` counts as absent).
    pub(crate) fn opt_str<'a>(
        args: &'a Map<String, Value>,
        name: &str,
    ) -> HostResult<Option<&'a str>> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(wrong(name, "string")),
        }
    }

    /// A required string.
    pub(crate) fn req_str<'a>(args: &'a Map<String, Value>, name: &str) -> HostResult<&'a str> {
        opt_str(args, name)?.ok_or_else(|| {
            HostError::schema(vec![format!("{name}: required parameter is missing")])
        })
    }

    /// An optional non-negative integer.
    pub(crate) fn opt_u64(args: &Map<String, Value>, name: &str) -> HostResult<Option<u64>> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| wrong(name, "a non-negative integer")),
        }
    }

    /// An optional boolean.
    pub(crate) fn opt_bool(args: &Map<String, Value>, name: &str) -> HostResult<Option<bool>> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(wrong(name, "boolean")),
        }
    }
}

fn param(name: &str, ty: &str, description: &str) -> ToolParameter {
    ToolParameter::new(name, ty, description)
}

fn one_of(mut p: ToolParameter, values: &[&str]) -> ToolParameter {
    p.r#enum = Some(values.iter().map(|v| (*v).to_owned()).collect());
    p
}

fn object_of(mut p: ToolParameter, props: &[(&str, &str, &str)]) -> ToolParameter {
    let map: BTreeMap<String, ToolParameter> = props
        .iter()
        .map(|(n, t, d)| ((*n).to_owned(), param(n, t, d)))
        .collect();
    p.properties = Some(map);
    p
}

fn encoding_param() -> ToolParameter {
    one_of(
        param(
            "encoding",
            "string",
            "`text` (default: UTF-8, invalid bytes replaced and labelled utf-8-lossy) or `base64` (exact bytes)",
        ),
        text::ENCODINGS,
    )
}

/// Every built-in tool's definition, whether enabled or not.
pub fn definitions() -> Vec<ToolDefinition> {
    let read = ToolDefinition::new(
        "read_file",
        "Read a file in the workspace: text (or base64), from a byte offset, up to a byte limit",
    )
    .param(
        param(
            "path",
            "string",
            "File path, relative to the workspace root",
        )
        .required(),
    )
    .param(param(
        "offset",
        "integer",
        "Byte offset to start at (default 0)",
    ))
    .param(param(
        "limit",
        "integer",
        "Most bytes to read (capped by the host)",
    ))
    .param(encoding_param())
    .tags(&["fs", "read"])
    .idempotent();

    let write = ToolDefinition::new(
        "write_file",
        "Write a file in the workspace atomically (replaces it whole)",
    )
    .param(
        param(
            "path",
            "string",
            "File path, relative to the workspace root",
        )
        .required(),
    )
    .param(param("content", "string", "The complete new content (UTF-8 text)").required())
    .param(param(
        "create_dirs",
        "boolean",
        "Create missing parent directories (default false)",
    ))
    .tags(&["fs", "write"])
    .idempotent();

    let list = ToolDefinition::new(
        "list_dir",
        "List a directory of the workspace: name, kind (file, dir, symlink) and size of each entry",
    )
    .param(param(
        "path",
        "string",
        "Directory, relative to the workspace root (default: the root)",
    ))
    .tags(&["fs"])
    .idempotent();

    let glob = ToolDefinition::new(
        "glob",
        "Find workspace paths matching a glob pattern (`*` within a directory, `**` across directories)",
    )
    .param(param("pattern", "string", "Glob, e.g. `**/*.rs`, matched against paths relative to `path`").required())
    .param(param("path", "string", "Directory to search (default: the root)"))
    .tags(&["fs", "search"])
    .idempotent();

    let grep = ToolDefinition::new(
        "grep",
        "Search workspace files for lines matching a regular expression",
    )
    .param(
        param(
            "pattern",
            "string",
            "Regular expression (Rust regex syntax)",
        )
        .required(),
    )
    .param(param(
        "path",
        "string",
        "File or directory to search (default: the root)",
    ))
    .param(param(
        "glob",
        "string",
        "Only files matching this glob (by name, or by relative path when it has a `/`)",
    ))
    .param(param(
        "max_matches",
        "integer",
        "Most matching lines to return (capped by the host)",
    ))
    .param(param(
        "ignore_case",
        "boolean",
        "Match case-insensitively (default false)",
    ))
    .tags(&["fs", "search"])
    .idempotent();

    let run = ToolDefinition::new(
        "run_command",
        "Run an allowed program (no shell) and return its exit code, stdout and stderr; output lines stream as log events",
    )
    .param(param("argv", "array", "Program and arguments, e.g. [\"ls\", \"-l\"]; the program must be allowed").required())
    .param(param("cwd", "string", "Working directory, relative to the workspace root (default: the root)"))
    .param(param("timeout", "integer", "Seconds before the process group is killed (default: host setting)"))
    .param(param("stdin", "string", "Text written to the program's standard input"))
    .param(param("env", "object", "Extra environment variables (name → value)"))
    .tags(&["process"]);

    let http = ToolDefinition::new(
        "http_request",
        "Make an HTTP request to an allowed host and return status, headers and body",
    )
    .param(param("url", "string", "http:// or https:// URL").required())
    .param(one_of(
        param("method", "string", "HTTP method (default GET)"),
        http::METHODS,
    ))
    .param(param("headers", "object", "Request headers (name → value)"))
    .param(param("body", "string", "Request body"))
    .param(param(
        "timeout",
        "integer",
        "Seconds for the whole exchange (default: host setting)",
    ))
    .param(encoding_param())
    .tags(&["network", "http"]);

    let split = ToolDefinition::new(
        "split_text",
        "Split a text into chunks by paragraph, line, sentence or word, optionally packed to a size",
    )
    .param(param("text", "string", "The text").required())
    .param(one_of(
        param("by", "string", "Unit to cut at (default paragraph)"),
        compute::SPLIT_UNITS,
    ))
    .param(param(
        "size",
        "integer",
        "Pack consecutive units into chunks of at most this many characters",
    ))
    .tags(&["text"])
    .idempotent();

    let stats = ToolDefinition::new(
        "text_stats",
        "Count the words, lines, sentences and characters of a text and list its most frequent words",
    )
    .param(param("text", "string", "The text").required())
    .param(param("top", "integer", "How many frequent words to list (default 5)"))
    .tags(&["text"])
    .idempotent();

    let transform = ToolDefinition::new(
        "transform",
        "Evaluate a JMESPath expression over JSON data (select, reshape, sum, sort, join)",
    )
    .param(param("expression", "string", "JMESPath expression").required())
    .param(param("data", "any", "The JSON value to evaluate against"))
    .tags(&["data", "json"])
    .idempotent();

    let mut defs = vec![
        read, write, list, glob, grep, run, http, split, stats, transform,
    ];
    for d in &mut defs {
        d.output_parameters = outputs(&d.name);
    }
    defs
}

fn outputs(tool: &str) -> Vec<ToolParameter> {
    match tool {
        "read_file" => vec![
            param("content", "string", "The bytes read, as text or base64"),
            param("size", "integer", "File size in bytes"),
            param("offset", "integer", "Where reading started"),
            param("bytes_read", "integer", "Bytes returned"),
            param("encoding", "string", "utf-8, utf-8-lossy or base64"),
        ],
        "write_file" => vec![
            param("path", "string", "The path written, relative to the root"),
            param("bytes_written", "integer", "Bytes written"),
        ],
        "list_dir" => vec![object_of(
            param("entries", "array", "Entries, sorted by name"),
            &[
                ("name", "string", "Entry name"),
                ("kind", "string", "file, dir, symlink or other"),
                (
                    "size",
                    "integer",
                    "Size in bytes (of the link itself for a symlink)",
                ),
            ],
        )],
        "glob" => vec![param(
            "matches",
            "array",
            "Matching paths relative to the root, sorted",
        )],
        "grep" => vec![param(
            "matches",
            "array",
            "{path, line, text} of each matching line",
        )],
        "run_command" => vec![
            param(
                "exit_code",
                "integer",
                "Exit code (null when a signal ended the program)",
            ),
            param("stdout", "string", "Standard output (capped)"),
            param("stderr", "string", "Standard error (capped)"),
        ],
        "split_text" => vec![
            param("chunks", "array", "The chunks, in order"),
            param("count", "integer", "Number of chunks"),
        ],
        "text_stats" => vec![
            param("words", "integer", "Words (whitespace-separated)"),
            param("lines", "integer", "Lines"),
            param("sentences", "integer", "Sentences"),
            param("chars", "integer", "Characters"),
            param("top_words", "array", "{word, count}, most frequent first"),
        ],
        "transform" => vec![param("result", "any", "The expression's value")],
        "http_request" => vec![
            param("status", "integer", "HTTP status"),
            param("headers", "object", "Response headers (lower-case names)"),
            param("body", "string", "Response body (capped)"),
        ],
        _ => Vec::new(),
    }
}

/// The built-in tools the configuration enables.
pub struct BuiltinTools {
    config: Arc<HostConfig>,
}

impl BuiltinTools {
    /// Built-ins per `config`.
    pub fn new(config: Arc<HostConfig>) -> Self {
        Self { config }
    }
}

impl ToolPlugin for BuiltinTools {
    fn name(&self) -> &str {
        "builtin"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        definitions()
            .into_iter()
            .filter(|d| self.config.builtin_enabled(&d.name))
            .collect()
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> HostResult<ToolOutput> {
        if !self.config.builtin_enabled(tool) {
            return Err(HostError::UnknownTool(tool.into()));
        }
        let config = &self.config;
        match tool {
            "read_file" => fs::read_file(config, &args).await,
            "write_file" => fs::write_file(config, &args).await,
            "list_dir" => fs::list_dir(config, &args).await,
            "glob" => fs::glob(config, &args, &ctx).await,
            "grep" => fs::grep(config, &args, &ctx).await,
            "run_command" => command::run_command(config, &args, &ctx).await,
            "http_request" => http::http_request(config, &args, &ctx).await,
            "split_text" => compute::split_text(&args),
            "text_stats" => compute::text_stats(&args),
            "transform" => compute::transform(&args),
            other => Err(HostError::UnknownTool(other.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_enabled_tools_are_listed() {
        let config = HostConfig {
            builtins: vec!["read_file".into(), "grep".into()],
            ..HostConfig::default()
        };
        let tools = BuiltinTools::new(Arc::new(config));
        let names: Vec<String> = ToolPlugin::tools(&tools)
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, vec!["read_file", "grep"]);
    }

    #[test]
    fn every_tool_is_tagged_and_its_required_params_declared() {
        let defs = definitions();
        assert_eq!(defs.len(), crate::config::ALL_BUILTINS.len());
        for d in &defs {
            assert!(
                crate::config::ALL_BUILTINS.contains(&d.name.as_str()),
                "{}",
                d.name
            );
            assert!(!d.tags.is_empty(), "{} has no tags", d.name);
        }
        let run = defs.iter().find(|d| d.name == "run_command").unwrap();
        let argv = run
            .input_parameters
            .iter()
            .find(|p| p.name == "argv")
            .unwrap();
        assert!(argv.required);
        assert_eq!(argv.param_type, "array");
        let http = defs.iter().find(|d| d.name == "http_request").unwrap();
        let method = http
            .input_parameters
            .iter()
            .find(|p| p.name == "method")
            .unwrap();
        assert_eq!(method.r#enum.as_ref().unwrap().len(), 6);
    }

    #[tokio::test]
    async fn disabled_tool_is_unknown() {
        let config = HostConfig {
            builtins: vec!["read_file".into()],
            ..HostConfig::default()
        };
        let tools = BuiltinTools::new(Arc::new(config));
        let err = ToolPlugin::call(&tools, "list_dir", Map::new(), CallContext::detached())
            .await
            .unwrap_err();
        assert_eq!(err, HostError::UnknownTool("list_dir".into()));
    }

    #[test]
    fn args_reject_wrong_types() {
        let args: Map<String, Value> =
            serde_json::from_str(r#"{"n": -1, "s": 3, "b": "x", "z": null}"#).unwrap();
        assert!(args::opt_u64(&args, "n").is_err());
        assert!(args::opt_str(&args, "s").is_err());
        assert!(args::opt_bool(&args, "b").is_err());
        assert_eq!(args::opt_str(&args, "z").unwrap(), None);
        assert!(args::req_str(&args, "z").is_err());
    }
}
