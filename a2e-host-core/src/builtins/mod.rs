//! Built-in tools, confined to the workspace root.
//!
//! Each tool is one file (the file tools under `fs/`) holding all of it: its
//! argument type, its result type, its spec (name, description, tags, hints)
//! and its run, as a `Builtin` (`tool.rs`); what clients are told of it is
//! derived from there (`output.rs`). A new tool is such a file, an entry in
//! `all()` and its name in `config::ALL_BUILTINS`.
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
//! served. Paths are resolved relative to the root,
//! absolute ones only under it, never out of it through `..` or a symbolic
//! link (refused with `tool_denied`). Results that hit a cap set `truncated`.
//!
//! Text: file contents and response bodies come back as UTF-8 text when they
//! are UTF-8, else decoded lossily and labelled `"encoding": "utf-8-lossy"`;
//! `"encoding": "base64"` in the arguments returns the exact bytes instead.
//!
//! Exit codes: `run_command` succeeds whenever the program ran to its end,
//! whatever its exit code; the code is in `exit_code` (of the data and of the
//! result), `null` with `signal` set when a signal ended it. A timeout or a
//! cancellation is a failure (`timeout`).

pub mod args;
mod fs;
mod hints;
mod http_request;
mod output;
pub mod paths;
mod run_command;
mod split_text;
pub(crate) mod text;
mod text_stats;
mod tool;
mod transform;

use std::sync::{Arc, LazyLock};

use a2e_proto::ToolDefinition;

use crate::config::HostConfig;
use crate::error::HostError;
use crate::plugin::{ToolPlugin, Toolbox};
use tool::{Entry, Env, entry};

pub use hints::ToolHints;
pub use http_request::{MAX_REDIRECTS, host_allowed};

/// Every built-in, in listing order.
fn all() -> [Entry; 10] {
    [
        entry::<fs::ReadFile>(),
        entry::<fs::WriteFile>(),
        entry::<fs::ListDir>(),
        entry::<fs::Glob>(),
        entry::<fs::Grep>(),
        entry::<run_command::RunCommand>(),
        entry::<http_request::HttpRequest>(),
        entry::<split_text::SplitText>(),
        entry::<text_stats::TextStats>(),
        entry::<transform::Transform>(),
    ]
}

/// Every built-in tool, whether enabled or not.
fn toolbox(env: Arc<Env>) -> Toolbox<HostError> {
    all().iter().fold(Toolbox::returning("builtin"), |t, e| {
        e.add_to(t, env.clone())
    })
}

/// Every built-in tool's definition, whether enabled or not.
pub fn definitions() -> Vec<ToolDefinition> {
    let env = Env {
        config: Arc::new(HostConfig::default()),
        launcher: crate::proc::Launcher::default(),
    };
    ToolPlugin::tools(&toolbox(Arc::new(env)))
}

/// The hints of the built-in tool `tool`, if it is one.
pub fn builtin_hints(tool: &str) -> Option<ToolHints> {
    // Derived once: every MCP `tools/list` asks for each built-in's.
    static HINTS: LazyLock<Vec<(&str, ToolHints)>> =
        LazyLock::new(|| all().iter().map(|e| (e.name, e.hints())).collect());
    HINTS
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, hints)| hints.clone())
}

/// The built-in tools the configuration enables, as one toolbox (the plugin
/// `builtin`), their commands started directly.
pub fn tools(config: Arc<HostConfig>) -> Toolbox<HostError> {
    tools_with_launcher(config, crate::proc::Launcher::default())
}

/// The built-in tools the configuration enables, their commands started by
/// `launcher`.
pub fn tools_with_launcher(
    config: Arc<HostConfig>,
    launcher: crate::proc::Launcher,
) -> Toolbox<HostError> {
    let enabled = config.clone();
    let env = Arc::new(Env { config, launcher });
    toolbox(env).retain(|d| enabled.builtin_enabled(&d.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::CallContext;
    use serde_json::{Map, Value};

    /// What clients are told of every built-in: its A2E definition, the
    /// schema its arguments are validated against and its hints, as one JSON
    /// document (key order as on the wire).
    fn listing() -> String {
        let config = HostConfig {
            builtins: crate::config::ALL_BUILTINS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            ..HostConfig::default()
        };
        let enabled = tools(Arc::new(config));
        let tools: Vec<Value> = definitions()
            .into_iter()
            .map(|def| {
                let input_schema = ToolPlugin::input_schema(&enabled, &def);
                let hints = builtin_hints(&def.name).map(|h| {
                    serde_json::json!({
                        "title": h.title,
                        "read_only": h.read_only,
                        "destructive": h.destructive,
                        "open_world": h.open_world,
                        "output_schema": h.output_schema,
                    })
                });
                serde_json::json!({"definition": def, "input_schema": input_schema, "hints": hints})
            })
            .collect();
        serde_json::to_string_pretty(&tools).unwrap() + "\n"
    }

    /// The built-ins' listing is pinned byte for byte: a change to a name,
    /// description, parameter, tag, hint or output schema shows up here first.
    #[test]
    fn the_listing_matches_its_snapshot() {
        let actual = listing();
        let expected = include_str!("listing.snapshot.json");
        assert!(
            actual == expected,
            "the built-ins' listing changed; it is now:\n{actual}"
        );
    }

    #[test]
    fn only_enabled_tools_are_listed() {
        let config = HostConfig {
            builtins: vec!["read_file".into(), "grep".into()],
            ..HostConfig::default()
        };
        let tools = tools(Arc::new(config));
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
        let tools = tools(Arc::new(config));
        let err = ToolPlugin::call(&tools, "list_dir", Map::new(), CallContext::detached())
            .await
            .unwrap_err();
        assert_eq!(err, HostError::UnknownTool("list_dir".into()));
    }

    #[tokio::test]
    async fn a_wrong_shape_is_a_schema_violation_naming_its_path() {
        let tools = tools(Arc::new(HostConfig::default()));
        let args: Map<String, Value> =
            serde_json::from_str(r#"{"text": "a b", "top": -1}"#).unwrap();
        let err = ToolPlugin::call(&tools, "text_stats", args, CallContext::detached())
            .await
            .unwrap_err();
        let HostError::Schema { violations, .. } = err else {
            panic!("{err}")
        };
        assert!(violations[0].starts_with("top: "), "{violations:?}");
    }
}
