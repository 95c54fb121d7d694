//! A provider reached over MCP on a child process's stdin/stdout (one JSON-RPC
//! message per line), e.g. another host's `a2e serve --mcp-stdio`. The bearer
//! token goes to the child in `A2E_ACMP_BEARER`. The child runs in a process
//! group of its own and is killed with it when the connection ends.

use std::sync::{Arc, Weak};

use acmp_dag::remote::{Connection, Connector};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The environment variable carrying the bearer token to a stdio provider.
pub const BEARER_ENV: &str = "A2E_ACMP_BEARER";

/// Starts a provider process per connection.
#[derive(Debug, Clone)]
pub struct StdioConnector {
    argv: Vec<String>,
    token: Option<String>,
}

impl StdioConnector {
    /// A connector running `argv`, handing it `token`.
    pub fn new(argv: Vec<String>, token: Option<String>) -> Self {
        Self { argv, token }
    }
}

impl Connector for StdioConnector {
    fn connect(&self) -> BoxFuture<'static, Result<Arc<Connection>, String>> {
        let argv = self.argv.clone();
        let token = self.token.clone();
        Box::pin(async move {
            let (program, args) = argv.split_first().ok_or("command: empty")?;
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit());
            if let Some(token) = token {
                cmd.env(BEARER_ENV, token);
            }
            let mut child =
                crate::proc::spawn_group(&mut cmd).map_err(|e| format!("{program}: {e}"))?;
            let mut stdin = child.child.stdin.take().ok_or("no stdin")?;
            let stdout = child.child.stdout.take().ok_or("no stdout")?;
            let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
            let conn = Arc::new(Connection::new(tx));
            tokio::spawn(async move {
                while let Some(msg) = rx.recv().await {
                    let mut line = msg.to_string();
                    line.push('\n');
                    if stdin.write_all(line.as_bytes()).await.is_err() {
                        break;
                    }
                }
                drop(stdin);
                // The group guard kills what is left of the provider.
                let _ = tokio::time::timeout(std::time::Duration::from_secs(2), child.child.wait())
                    .await;
                drop(child);
            });
            let weak: Weak<Connection> = Arc::downgrade(&conn);
            tokio::spawn(async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let Some(conn) = weak.upgrade() else { break };
                    conn.deliver_text(&line);
                }
                if let Some(conn) = weak.upgrade() {
                    conn.close();
                }
            });
            Ok(conn)
        })
    }
}
