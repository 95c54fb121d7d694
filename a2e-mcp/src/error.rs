//! Errors of the client side (mounting MCP servers) and the server side.

use std::time::Duration;

use a2e_proto::ErrorCode;

/// Everything that can go wrong talking to a mounted MCP server.
///
/// Every variant names the server, so a message shown to an agent or a person
/// says which of several mounted servers failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum McpError {
    /// The server's configuration is unusable.
    #[error("MCP server config `{server}`: {reason}")]
    Config {
        /// Server name (may be empty when the name itself is bad).
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// The stdio server's command could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`: {reason}")]
    Spawn {
        /// Server name.
        server: String,
        /// The command.
        command: String,
        /// The OS error.
        reason: String,
    },
    /// The server did not answer `initialize` in time.
    #[error("MCP server `{server}` did not answer `initialize` within {}s", after.as_secs_f64())]
    InitTimeout {
        /// Server name.
        server: String,
        /// The limit that passed.
        after: Duration,
    },
    /// The `initialize` handshake failed.
    #[error("MCP server `{server}`: initialize failed: {reason}")]
    Init {
        /// Server name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server is waiting out its restart backoff after failures.
    #[error(
        "MCP server `{server}` is unavailable (failed {failures} time(s), next start in {}s): {last_error}",
        retry_in.as_secs_f64()
    )]
    Unavailable {
        /// Server name.
        server: String,
        /// Consecutive failures so far.
        failures: u32,
        /// Time left before the next start attempt.
        retry_in: Duration,
        /// The last failure.
        last_error: String,
    },
    /// The server stopped (crashed, closed its pipes, dropped the connection)
    /// while a request was in flight.
    #[error("MCP server `{server}` stopped during `{what}`{}; it is restarted on next use", stderr_suffix(.stderr_tail))]
    ServerStopped {
        /// Server name.
        server: String,
        /// The request (`tools/call get_time`, `tools/list`).
        what: String,
        /// The last lines the server wrote to stderr, if any.
        stderr_tail: String,
    },
    /// The call ran out of time (`notifications/cancelled` was sent).
    #[error("MCP server `{server}`: `{tool}` timed out after {}s (cancelled)", after.as_secs_f64())]
    Timeout {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
        /// The limit.
        after: Duration,
    },
    /// The caller cancelled the call (`notifications/cancelled` was sent).
    #[error("MCP server `{server}`: `{tool}` was cancelled")]
    Cancelled {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
    },
    /// The server has no tool of that name.
    #[error("MCP server `{server}` has no tool `{tool}`")]
    UnknownTool {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
    },
    /// The arguments do not match the tool's input schema.
    #[error("MCP server `{server}`: arguments of `{tool}` do not match its schema: {reason}")]
    InvalidArguments {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
        /// The first violations, with their JSON paths.
        #[source]
        reason: crate::schema::ArgumentsMismatch,
    },
    /// The server answered with a JSON-RPC error or something unexpected.
    #[error("MCP server `{server}`: `{what}` failed: {reason}")]
    Protocol {
        /// Server name.
        server: String,
        /// The request.
        what: String,
        /// The error.
        reason: String,
    },
    /// The toolkit was shut down.
    #[error("MCP server `{server}` has been shut down")]
    Shutdown {
        /// Server name.
        server: String,
    },
}

fn stderr_suffix(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {tail})")
    }
}

impl McpError {
    /// The A2E error code for a `ToolResult` or error message carrying this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::UnknownTool { .. } => ErrorCode::UNKNOWN_TOOL,
            Self::InvalidArguments { .. } => ErrorCode::SCHEMA_VIOLATION,
            Self::Timeout { .. } => ErrorCode::TIMEOUT,
            _ => ErrorCode::TOOL_ERROR,
        }
    }

    /// The server this error is about.
    pub fn server(&self) -> &str {
        match self {
            Self::Config { server, .. }
            | Self::Spawn { server, .. }
            | Self::InitTimeout { server, .. }
            | Self::Init { server, .. }
            | Self::Unavailable { server, .. }
            | Self::ServerStopped { server, .. }
            | Self::Timeout { server, .. }
            | Self::Cancelled { server, .. }
            | Self::UnknownTool { server, .. }
            | Self::InvalidArguments { server, .. }
            | Self::Protocol { server, .. }
            | Self::Shutdown { server } => server,
        }
    }
}

/// Errors of the server side (serving a backend to MCP clients).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listener or the stdio streams failed.
    #[error("MCP serve: I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A non-loopback address without a bearer token.
    #[error(
        "MCP serve: refusing to serve Streamable HTTP on non-loopback {0} without a bearer token"
    )]
    NotLoopback(std::net::SocketAddr),
    /// The MCP session could not start (the client's `initialize` failed).
    #[error("MCP serve: session failed to start: {0}")]
    Init(String),
    /// The session's task failed.
    #[error("MCP serve: session task failed: {0}")]
    Join(String),
}
