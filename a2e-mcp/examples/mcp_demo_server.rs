//! A demo MCP server serving a small tool backend through `a2e-mcp`.
//!
//! ```text
//! mcp_demo_server                              # MCP on stdin/stdout
//! mcp_demo_server --http 127.0.0.1:0 [TOKEN]   # Streamable HTTP; prints the URL
//! ```

#[path = "demo/backend.rs"]
mod backend;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let backend = Arc::new(backend::DemoBackend::default());
    let shutdown = CancellationToken::new();
    match args.first().map(String::as_str) {
        None => a2e_mcp::serve_stdio(backend, "a2e-demo", shutdown).await?,
        Some("--http") => {
            let addr = args.get(1).map(String::as_str).unwrap_or("127.0.0.1:0");
            let token = args.get(2).cloned();
            let listener = tokio::net::TcpListener::bind(addr).await?;
            println!("listening http://{}/mcp", listener.local_addr()?);
            a2e_mcp::serve_http(backend, "a2e-demo", listener, token, shutdown).await?;
        }
        Some(other) => return Err(format!("unknown argument `{other}`").into()),
    }
    Ok(())
}
