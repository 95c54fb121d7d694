//! The host with an example plugin set that offers the test tools, resources
//! and prompts of the official MCP conformance suite (`test_simple_text`,
//! `test://static-text`, `test_prompt_with_arguments`, …), served over
//! Streamable HTTP as `a2e serve --mcp-http` serves a host: the same
//! built-ins, skills, workspace resources and skill prompts, plus these.
//!
//! ```text
//! cargo run -p a2e-cli --example mcp_everything -- --root examples/workspace --listen 127.0.0.1:3001
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp --suite all
//! ```
//!
//! It prints `listening on http://ADDR/mcp` on stderr once it accepts
//! connections, and stops on SIGINT.

mod plugins;
mod rounds;
mod tasks;

use std::path::PathBuf;
use std::sync::Arc;

use a2e_host::mcp::McpExtras;
use a2e_host::{Host, HostConfig};
use tokio_util::sync::CancellationToken;

fn usage() -> ! {
    eprintln!("usage: mcp_everything [--root DIR] [--listen ADDR]");
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let mut root = PathBuf::from(".");
    let mut listen = "127.0.0.1:0".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--root", Some(v)) => root = PathBuf::from(v),
            ("--listen", Some(v)) => listen = v,
            _ => usage(),
        }
    }
    let config = HostConfig {
        root,
        ..HostConfig::default()
    };
    let builder = a2e_host::skills::builder_with_skills(Host::builder(config).with_builtins())
        .with_tool_plugin(plugins::ConformanceTools)
        .with_tool_plugin(rounds::RoundTools)
        .with_tool_plugin(tasks::TaskTools);
    let host: Arc<Host> = match builder.build() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("mcp_everything: {e}");
            std::process::exit(2);
        }
    };
    // Tasks are runs of the journal (`runs.db` in the data directory).
    if let Err(e) = a2e_host::runs::enable(&host).await {
        eprintln!("mcp_everything: {e}");
        std::process::exit(2);
    }
    a2e_host::runs::resume_unfinished(&host, &CancellationToken::new()).await;
    let extras = McpExtras::standard(&host).with(McpExtras {
        resources: vec![Arc::new(plugins::ConformanceResources)],
        prompts: vec![
            Arc::new(plugins::ConformancePrompts),
            Arc::new(rounds::RoundPrompts),
        ],
    });
    let listener = match tokio::net::TcpListener::bind(&listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("mcp_everything: cannot listen on {listen}: {e}");
            std::process::exit(2);
        }
    };
    if let Ok(addr) = listener.local_addr() {
        eprintln!("listening on http://{addr}/mcp");
    }
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    if let Err(e) = a2e_host::mcp::serve_http(host, extras, listener, shutdown).await {
        eprintln!("mcp_everything: {e}");
        std::process::exit(1);
    }
}
