//! The server side: a host's tools, resources and prompts served to MCP
//! clients, with logging, progress, sampling and elicitation back to them.
//!
//! A backend implements [`ToolBackend`] (tools; optionally resources,
//! prompts and completions, [`Features`]) and is served over stdio
//! ([`serve_stdio`], [`serve_io`]) or Streamable HTTP ([`serve_http`],
//! [`http_router`]). Every connection declares `tools` and `logging`; a
//! call's `log` events reach the client as `notifications/message` at the
//! level it set, its `progress` events as `notifications/progress` when it
//! sent a progress token, and the backend reaches the client through the
//! call's [`ClientLink`] (sampling, elicitation).

mod backend;
mod client;
mod handler;
mod http;
mod inbox;
mod progress;
mod removed;
mod rounds;
mod updates;

use std::sync::Arc;

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

pub use backend::{
    BackendTool, Features, TaskSupport, TaskTerms, ToolBackend, resource_not_found, unknown_task,
};
pub use client::{CLIENT_REQUEST_LIMIT, ClientLink, ClientRequestError, LogLevel, level_named};
pub use http::{http_router, serve_http};
pub use inbox::{TaskInbox, answer_fits};
pub use progress::ProgressSink;
pub use rounds::{Rounds, STATE_LIFETIME};
pub use updates::ResourceUpdates;

use crate::error::ServeError;
use handler::Handler;

/// Serves `backend` as the MCP server `name` over a byte stream pair until
/// the client closes it or `shutdown` fires.
pub async fn serve_io<B, R, W>(
    backend: Arc<B>,
    name: &str,
    reader: R,
    writer: W,
    shutdown: CancellationToken,
) -> Result<(), ServeError>
where
    B: ToolBackend,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let seal = Arc::new(rounds::StateSeal::with_key(backend.request_state_key()));
    let running = Handler::new(backend, name, seal)
        .serve_with_ct((reader, writer), shutdown)
        .await
        .map_err(|e| ServeError::Init(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Join(e.to_string()))?;
    Ok(())
}

/// Serves `backend` on this process's stdin/stdout (`a2e serve --mcp-stdio`).
pub async fn serve_stdio<B: ToolBackend>(
    backend: Arc<B>,
    name: &str,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let (stdin, stdout) = rmcp::transport::stdio();
    serve_io(backend, name, stdin, stdout, shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2e_proto::ToolDefinition;
    use serde_json::Value;

    #[test]
    fn definitions_become_mcp_tools() {
        let def = ToolDefinition::new("read_file", "Read a file")
            .param(a2e_proto::ToolParameter::new("path", "string", "File").required())
            .idempotent();
        let tool = BackendTool::from(def).to_mcp();
        assert_eq!(tool.name, "read_file");
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            serde_json::json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "File"}}, "required": ["path"]})
        );
        assert_eq!(tool.annotations.and_then(|a| a.idempotent_hint), Some(true));
    }
}
