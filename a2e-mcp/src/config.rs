//! Configuration of one mounted MCP server.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::McpError;

/// One MCP server to mount as a toolkit: a stdio command or a Streamable HTTP
/// URL, plus how it is loaded and how long it may take.
///
/// In a TOML host configuration:
///
/// ```toml
/// [[mcp_servers]]
/// name = "time"
/// command = "mcp-server-time"
/// args = ["--local-timezone", "UTC"]
///
/// [[mcp_servers]]
/// name = "everything"
/// url = "http://127.0.0.1:3001/mcp"
/// bearer_token_env = "EVERYTHING_TOKEN"
/// defer_loading = true
/// ```
///
/// Exactly one of `command` and `url` must be set. The name must be 1–64
/// characters of `A–Z a–z 0–9 _ -` (it becomes the toolkit name and the
/// `server.` prefix of colliding tool names, see [`crate::names`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Server name: the toolkit name of its tools.
    pub name: String,
    /// Stdio: the program to run, alone (`"prog"`, its arguments in
    /// `args`) or with its arguments (`["prog", "arg", …]`, as
    /// `[[plugins]]` write it; `args` then follow them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandLine>,
    /// Stdio: its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Stdio: environment variables added to the host's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Stdio: working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP: the endpoint URL (`http://…/mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Streamable HTTP: extra request headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Streamable HTTP: a bearer token (sent as `Authorization: Bearer …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<String>,
    /// Streamable HTTP: the environment variable holding the bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    /// Keep this server's tools out of the plain `tool/list`; they are found by
    /// search (`query` + `include_deferred`).
    #[serde(default)]
    pub defer_loading: bool,
    /// Start the server when it is mounted (and again after a crash) instead
    /// of on first use.
    #[serde(default)]
    pub eager: bool,
    /// Seconds the server has to answer `initialize`.
    #[serde(default = "default_init_timeout")]
    pub init_timeout_secs: u64,
    /// Upper limit for one tool call, in seconds (a call's own, shorter
    /// timeout wins).
    #[serde(default = "default_call_timeout")]
    pub call_timeout_secs: u64,
    /// First restart delay after a crash or failed start, in milliseconds;
    /// it doubles with each consecutive failure.
    #[serde(default = "default_backoff_initial")]
    pub restart_backoff_ms: u64,
    /// Longest restart delay, in milliseconds.
    #[serde(default = "default_backoff_max")]
    pub restart_backoff_max_ms: u64,
    /// What the server's `elicitation/create` requests get (A2E has no
    /// channel back to a person): `decline` (the default), or `defaults`:
    /// a form whose every required field has a default is accepted with the
    /// defaults, any other is declined.
    #[serde(default, skip_serializing_if = "ElicitationPolicy::is_decline")]
    pub elicitation: ElicitationPolicy,
    /// Whether the server's `sampling/createMessage` requests are answered by
    /// one of the host's model providers (refused when not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingConfig>,
    /// Streamable HTTP: OAuth 2.1 authorization (see [`crate::oauth`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<crate::oauth::OAuthConfig>,
    /// The MCP revision the host starts with (unset: `auto` over Streamable
    /// HTTP, `2025-11-25` over stdio, where a server that is sent an unknown
    /// first request may drop its pipe or leave it unanswered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Revision>,
}

/// How a mounted server's connection starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Revision {
    /// `server/discover` first (MCP 2026-07-28), `initialize` when the server
    /// does not know it.
    #[serde(rename = "auto")]
    Auto,
    /// `initialize` (MCP 2025-11-25, a session).
    #[serde(rename = "2025-11-25")]
    Initialize,
    /// `server/discover` only (MCP 2026-07-28, stateless).
    #[serde(rename = "2026-07-28")]
    Discover,
}

/// A program to run: its name alone, or its name and leading arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CommandLine {
    /// `command = "prog"`.
    Program(String),
    /// `command = ["prog", "arg", …]`.
    Argv(Vec<String>),
}

impl CommandLine {
    /// The program and the arguments written with it.
    pub fn split(&self) -> (Option<&str>, &[String]) {
        match self {
            Self::Program(program) => (Some(program.as_str()), &[]),
            Self::Argv(argv) => match argv.split_first() {
                Some((program, args)) => (Some(program.as_str()), args),
                None => (None, &[]),
            },
        }
    }
}

impl From<&str> for CommandLine {
    fn from(program: &str) -> Self {
        Self::Program(program.to_owned())
    }
}

/// What a mounted server's elicitation requests get.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationPolicy {
    /// Every request is declined, and the reason logged.
    #[default]
    Decline,
    /// A form whose required fields all have defaults is accepted with the
    /// defaults; any other request is declined.
    Defaults,
}

impl ElicitationPolicy {
    fn is_decline(&self) -> bool {
        *self == Self::Decline
    }
}

/// How a mounted server's sampling requests are answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingConfig {
    /// The host's model provider (a name of `[[llm.providers]]`).
    pub provider: String,
    /// The model (the provider's default when not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Most tokens of one answer (a request asking for more gets this many).
    #[serde(default = "default_sampling_tokens")]
    pub max_tokens: u32,
}

fn default_sampling_tokens() -> u32 {
    1024
}

fn default_init_timeout() -> u64 {
    30
}
fn default_call_timeout() -> u64 {
    600
}
fn default_backoff_initial() -> u64 {
    500
}
fn default_backoff_max() -> u64 {
    30_000
}

/// How to reach a server: the validated transport part of a config.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// Program.
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// Added environment.
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// Endpoint URL.
        url: String,
        /// Extra headers.
        headers: BTreeMap<String, String>,
        /// Bearer token, resolved from the config or the environment.
        bearer_token: Option<String>,
    },
}

impl McpServerConfig {
    /// A stdio server running `command args…`.
    pub fn stdio(name: &str, command: &str, args: &[&str]) -> Self {
        Self {
            command: Some(command.into()),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            ..Self::empty(name)
        }
    }

    /// A Streamable HTTP server at `url`.
    pub fn http(name: &str, url: &str) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::empty(name)
        }
    }

    fn empty(name: &str) -> Self {
        Self {
            name: name.into(),
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            bearer_token: None,
            bearer_token_env: None,
            defer_loading: false,
            eager: false,
            init_timeout_secs: default_init_timeout(),
            call_timeout_secs: default_call_timeout(),
            restart_backoff_ms: default_backoff_initial(),
            restart_backoff_max_ms: default_backoff_max(),
            elicitation: ElicitationPolicy::Decline,
            sampling: None,
            oauth: None,
            protocol: None,
        }
    }

    /// Checks the config and returns its transport.
    pub fn transport(&self) -> Result<McpTransport, McpError> {
        check_name(&self.name)?;
        let bad = |reason: String| McpError::Config {
            server: self.name.clone(),
            reason,
        };
        if self.init_timeout_secs == 0 || self.call_timeout_secs == 0 {
            return Err(bad("timeouts must be at least one second".into()));
        }
        match (&self.command, &self.url) {
            (Some(line), None) => {
                let (program, leading) = line.split();
                let Some(command) = program.filter(|p| !p.trim().is_empty()) else {
                    return Err(bad("`command` is empty".into()));
                };
                if !self.headers.is_empty()
                    || self.bearer_token.is_some()
                    || self.bearer_token_env.is_some()
                {
                    return Err(bad(
                        "`headers` and bearer tokens apply to `url` servers only".into(),
                    ));
                }
                Ok(McpTransport::Stdio {
                    command: command.to_owned(),
                    args: leading.iter().chain(&self.args).cloned().collect(),
                    env: self.env.clone(),
                    cwd: self.cwd.clone(),
                })
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(bad(format!(
                        "`url` must be http:// or https://, got `{url}`"
                    )));
                }
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err(bad(
                        "`args`, `env` and `cwd` apply to `command` servers only".into(),
                    ));
                }
                for (name, value) in &self.headers {
                    let name_ok = !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
                    if !name_ok || value.bytes().any(|b| b == b'\r' || b == b'\n') {
                        return Err(bad(format!("header `{name}` is not a valid HTTP header")));
                    }
                }
                let bearer_token = match (&self.bearer_token, &self.bearer_token_env) {
                    (Some(_), Some(_)) => {
                        return Err(bad(
                            "set `bearer_token` or `bearer_token_env`, not both".into()
                        ));
                    }
                    (Some(token), None) => Some(token.clone()),
                    (None, Some(var)) => Some(std::env::var(var).map_err(|_| {
                        bad(format!(
                            "environment variable `{var}` (bearer token) is not set"
                        ))
                    })?),
                    (None, None) => None,
                };
                Ok(McpTransport::Http {
                    url: url.clone(),
                    headers: self.headers.clone(),
                    bearer_token,
                })
            }
            (Some(_), Some(_)) => Err(bad("set `command` or `url`, not both".into())),
            (None, None) => Err(bad(
                "set `command` (stdio) or `url` (Streamable HTTP)".into()
            )),
        }
    }

    /// The `initialize` time limit.
    pub fn init_timeout(&self) -> Duration {
        Duration::from_secs(self.init_timeout_secs)
    }

    /// The per-call time limit.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_secs(self.call_timeout_secs)
    }

    /// The restart delay after `failures` consecutive failures (1, 2, …):
    /// `restart_backoff_ms · 2^(failures-1)`, at most `restart_backoff_max_ms`.
    pub fn backoff(&self, failures: u32) -> Duration {
        let initial = Duration::from_millis(self.restart_backoff_ms);
        let max = Duration::from_millis(self.restart_backoff_max_ms).max(initial);
        a2e_http::Backoff::new(initial, max).delay(failures.saturating_sub(1))
    }
}

/// Checks a server name: 1–64 of `A–Z a–z 0–9 _ -`.
pub fn check_name(name: &str) -> Result<(), McpError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(McpError::Config {
            server: name.into(),
            reason: "a server name is 1-64 characters of A-Z a-z 0-9 _ -".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_and_http_parse_and_validate() {
        let cfg: McpServerConfig = serde_json::from_value(serde_json::json!({
            "name": "time", "command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
            "env": {"TZ": "UTC"}, "eager": true
        }))
        .unwrap();
        assert!(cfg.eager && !cfg.defer_loading);
        assert_eq!(cfg.init_timeout_secs, 30);
        let McpTransport::Stdio {
            command, args, env, ..
        } = cfg.transport().unwrap()
        else {
            panic!("stdio expected")
        };
        assert_eq!(command, "mcp-server-time");
        assert_eq!(args, ["--local-timezone", "UTC"]);
        assert_eq!(env.get("TZ").map(String::as_str), Some("UTC"));

        let mut http = McpServerConfig::http("ev", "http://127.0.0.1:1/mcp");
        http.bearer_token = Some("t0k".into());
        assert_eq!(
            http.transport().unwrap(),
            McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: BTreeMap::new(),
                bearer_token: Some("t0k".into())
            }
        );
    }

    #[test]
    fn bad_configs_say_what_is_wrong() {
        let both: McpServerConfig = serde_json::from_value(
            serde_json::json!({"name": "x", "command": "a", "url": "http://b"}),
        )
        .unwrap();
        assert!(
            both.transport()
                .unwrap_err()
                .to_string()
                .contains("not both")
        );
        let none = McpServerConfig::empty("x");
        assert!(
            none.transport()
                .unwrap_err()
                .to_string()
                .contains("set `command`")
        );
        let dotted = McpServerConfig::stdio("a.b", "x", &[]);
        assert!(
            dotted
                .transport()
                .unwrap_err()
                .to_string()
                .contains("server name")
        );
        let ftp = McpServerConfig::http("f", "ftp://x");
        assert!(ftp.transport().unwrap_err().to_string().contains("http://"));
        let mut hdr = McpServerConfig::http("h", "http://x");
        hdr.headers.insert("X-A".into(), "v\r\nInjected: 1".into());
        assert!(hdr.transport().unwrap_err().to_string().contains("header"));
        let unknown = serde_json::from_value::<McpServerConfig>(
            serde_json::json!({"name": "x", "command": "a", "comand": "typo"}),
        );
        assert!(unknown.unwrap_err().to_string().contains("comand"));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let cfg = McpServerConfig::stdio("s", "x", &[]);
        assert_eq!(cfg.backoff(1), Duration::from_millis(500));
        assert_eq!(cfg.backoff(2), Duration::from_millis(1000));
        assert_eq!(cfg.backoff(4), Duration::from_millis(4000));
        assert_eq!(cfg.backoff(40), Duration::from_millis(30_000));
    }
}

#[cfg(test)]
mod command_shape_tests {
    use super::*;

    fn stdio_of(toml_line: &str) -> (String, Vec<String>) {
        let config: McpServerConfig =
            serde_json::from_value(serde_json::from_str(toml_line).unwrap()).unwrap();
        match config.transport().unwrap() {
            McpTransport::Stdio { command, args, .. } => (command, args),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_command_is_a_program_with_args_or_a_list() {
        let program = stdio_of(r#"{"name": "t", "command": "srv", "args": ["-v"]}"#);
        let list = stdio_of(r#"{"name": "t", "command": ["srv", "-v"]}"#);
        assert_eq!(program, ("srv".to_owned(), vec!["-v".to_owned()]));
        assert_eq!(list, program);
        let both = stdio_of(r#"{"name": "t", "command": ["srv", "-v"], "args": ["x"]}"#);
        assert_eq!(both.1, ["-v", "x"]);
        let empty: McpServerConfig =
            serde_json::from_str(r#"{"name": "t", "command": []}"#).unwrap();
        assert!(
            empty
                .transport()
                .unwrap_err()
                .to_string()
                .contains("`command` is empty")
        );
    }
}
