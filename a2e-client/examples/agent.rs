//! An agent that spawns `a2e serve --stdio`, lists the tools, reads a file,
//! and runs a chain, printing its events as they arrive.
//!
//! ```text
//! cargo build -p a2e-host                      # builds the `a2e` binary
//! cargo run -p a2e-client --example agent -- [ROOT] [FILE]
//! ```
//!
//! The host binary is found, in order: the `A2E_BIN` environment variable;
//! `a2e` next to this example's own target directory (where `cargo build -p
//! a2e-host` puts it); `a2e` on the `PATH`. ROOT (default `.`) is the
//! workspace the host's tools are confined to; FILE (default `README.md`) is
//! the file read, relative to ROOT.

use std::path::PathBuf;

use a2e_client::{Client, ClientError};
use a2e_proto::{A2ECapability, ChainNode, ChainRequest, NodeKind};
use futures::StreamExt;
use serde_json::json;

fn host_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("A2E_BIN") {
        return PathBuf::from(path);
    }
    // target/<profile>/examples/agent → target/<profile>/a2e
    let beside = std::env::current_exe().ok().and_then(|exe| {
        let candidate = exe.parent()?.parent()?.join("a2e");
        candidate.is_file().then_some(candidate)
    });
    beside.unwrap_or_else(|| PathBuf::from("a2e"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = args.next().unwrap_or_else(|| ".".into());
    let file = args.next().unwrap_or_else(|| "README.md".into());

    let binary = host_binary();
    let mut host = tokio::process::Command::new(&binary);
    host.args(["serve", "--stdio", "--root", &root]);
    let client = Client::builder()
        .agent_id("example-agent")
        .capabilities([A2ECapability::TOOLS, A2ECapability::CHAINS])
        .connect_stdio(host)
        .await
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    println!("connected: session {}", client.session_id());

    println!("\ntools:");
    for tool in client.tools().list().await?.iter() {
        println!("  {:<14} {}", tool.name, tool.description);
    }

    println!("\nreading {file}:");
    let read = client
        .tools()
        .call("read_file", json!({"path": file}))
        .await?;
    if read.success {
        let content = read.data["content"].as_str().unwrap_or_default();
        for line in content.lines().take(5) {
            println!("  | {line}");
        }
    } else {
        println!(
            "  failed: {:?} {}",
            read.error_code,
            read.error.unwrap_or_default()
        );
    }

    // A chain: list the root, then grep the file for its first heading.
    let mut list = ChainNode::new("list", NodeKind::TOOL, "list_dir");
    list.input.insert("path".into(), json!("."));
    let mut grep = ChainNode::new("grep", NodeKind::TOOL, "grep");
    grep.input.insert("pattern".into(), json!("^#"));
    grep.input.insert("path".into(), json!("."));
    let req = ChainRequest {
        nodes: vec![list, grep],
        entry_node: "list".into(),
        ..ChainRequest::default()
    };
    println!("\nchain {}:", req.chain_id);
    let mut run = client.chains().run(req).await?;
    while let Some(event) = run.next().await {
        match event.phase.as_str() {
            "error" => println!(
                "  [{}] {:<6} {} {}",
                event.seq, event.phase, event.node_id, event.error
            ),
            _ => println!("  [{}] {:<6} {}", event.seq, event.phase, event.node_id),
        }
    }
    let resp = run.finish().await?;
    println!(
        "  success: {}, nodes run: {}, {} ms",
        resp.success, resp.nodes_run, resp.duration_ms
    );

    match client.tools().call("no_such_tool", json!({})).await {
        Err(ClientError::Protocol { code, message, .. }) => {
            println!("\nrefused as expected: {code}: {message}");
        }
        other => println!("\nunexpected: {other:?}"),
    }
    client.close().await;
    Ok(())
}
