//! `a2e mcp …`, `a2e memory …`, and serving the host over MCP.

use std::process::ExitCode;
use std::sync::Arc;

use a2e_host::Host;
use a2e_host::config::HostConfig;
use a2e_memory::{MemoryStore, NamespacePolicy, Principal};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::run::print_out;
use super::signal::wait_for_signal;
use super::{McpCommand, MemoryCommand};

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("a2e: {message}");
    ExitCode::from(2)
}

/// `a2e mcp list | tools SERVER`: starts the servers of the configuration and
/// reports what they offer.
pub(super) async fn mcp(config: &HostConfig, command: &McpCommand) -> ExitCode {
    let servers = &config.mcp.servers;
    match command {
        McpCommand::Login { server } => super::mcp_client::login(config, server).await,
        McpCommand::Call {
            server,
            tool,
            input,
        } => super::mcp_client::call(config, server, tool, input.as_deref()).await,
        McpCommand::List { json } => {
            if servers.is_empty() {
                // JSON lines of no server: nothing (a script reads no lines).
                if !*json {
                    print_out("no MCP servers configured ([[mcp.servers]] in the configuration)");
                }
                return ExitCode::SUCCESS;
            }
            let mut code = ExitCode::SUCCESS;
            for server in servers {
                let row = server_row(server.config()).await;
                if row.error.is_some() {
                    code = ExitCode::from(1);
                }
                if *json {
                    print_out(&row.json().to_string());
                } else {
                    print_out(&row.line());
                }
            }
            code
        }
        McpCommand::Tools { server, json } => {
            let config = match super::mcp_client::server_config(config, server) {
                Ok(c) => c,
                Err(e) => return fail(e),
            };
            let kit = match a2e_mcp::McpToolkit::new(config) {
                Ok(kit) => kit,
                Err(e) => return fail(e),
            };
            if *json {
                let listed = kit.tools().await;
                kit.shutdown().await;
                return match listed {
                    Ok(catalog) => {
                        for tool in catalog.iter() {
                            let line = serde_json::json!({
                                "name": tool.definition.name,
                                "description": tool.definition.description,
                                "inputSchema": *tool.input_schema,
                                "outputSchema": tool.output_schema.as_deref(),
                            });
                            print_out(&line.to_string());
                        }
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("a2e: {e}");
                        ExitCode::from(1)
                    }
                };
            }
            let defs = kit.definitions().await;
            kit.shutdown().await;
            match defs {
                Ok(defs) => {
                    for def in defs {
                        let params: Vec<String> = def
                            .input_parameters
                            .iter()
                            .map(|p| {
                                format!(
                                    "{}{}: {}",
                                    p.name,
                                    if p.required { "" } else { "?" },
                                    p.param_type
                                )
                            })
                            .collect();
                        print_out(&format!(
                            "{:<24} ({}) {}",
                            def.name,
                            params.join(", "),
                            def.description
                        ));
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("a2e: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

/// What `a2e mcp list` says of one server.
struct ServerRow {
    name: String,
    /// Its transport (`None` when its configuration is invalid).
    transport: Option<String>,
    /// How many tools it listed, when it started and listed them.
    tools: Option<usize>,
    /// The MCP revision it spoke, when it started.
    protocol: Option<String>,
    /// Why it is invalid or failed.
    error: Option<String>,
    /// Whether its failure is of its configuration (`invalid`) rather than of
    /// the server (`failed`).
    invalid: bool,
    deferred: bool,
}

impl ServerRow {
    fn line(&self) -> String {
        let Some(transport) = &self.transport else {
            let error = self.error.as_deref().unwrap_or_default();
            return format!("{:<16} invalid: {error}", self.name);
        };
        let state = match (&self.error, self.tools) {
            (Some(e), _) if self.invalid => format!("invalid: {e}"),
            (Some(e), _) => format!("failed: {e}"),
            (None, tools) => format!("ok, {} tools", tools.unwrap_or_default()),
        };
        let state = match &self.protocol {
            Some(revision) if self.error.is_none() => format!("{state}, MCP {revision}"),
            _ => state,
        };
        let deferred = if self.deferred { " (deferred)" } else { "" };
        format!("{:<16} {state}{deferred}  {transport}", self.name)
    }

    fn json(&self) -> Value {
        json!({
            "name": self.name,
            "ok": self.error.is_none(),
            "tools": self.tools,
            "error": self.error,
            "deferred": self.deferred,
            "transport": self.transport,
            "protocol": self.protocol,
        })
    }
}

/// Starts `server`, lists its tools and stops it.
async fn server_row(server: &a2e_mcp::McpServerConfig) -> ServerRow {
    let mut row = ServerRow {
        name: server.name.clone(),
        transport: None,
        tools: None,
        protocol: None,
        error: None,
        invalid: false,
        deferred: server.defer_loading,
    };
    match server.transport() {
        Ok(t) => row.transport = Some(format!("{t:?}")),
        Err(e) => {
            row.error = Some(e.to_string());
            row.invalid = true;
            return row;
        }
    }
    match a2e_mcp::McpToolkit::new(server.clone()) {
        Ok(kit) => {
            let listed = kit.tools().await;
            row.protocol = kit.protocol_version().await;
            kit.shutdown().await;
            match listed {
                Ok(tools) => row.tools = Some(tools.len()),
                Err(e) => row.error = Some(e.to_string()),
            }
        }
        Err(e) => {
            row.error = Some(e.to_string());
            row.invalid = true;
        }
    }
    row
}

/// `a2e memory search | write | list`, over every namespace.
pub(super) async fn memory(host: &Arc<Host>, command: &MemoryCommand) -> ExitCode {
    let memory =
        match a2e_host::memory::Memory::with_policy(host.config(), NamespacePolicy::allow_all()) {
            Ok(m) => m,
            Err(e) => return fail(e),
        };
    let tools = match memory.tools().await {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let who = Principal::default();
    let outcome: Result<Value, String> = match command {
        MemoryCommand::Search {
            query,
            namespaces,
            top_k,
        } => {
            let namespaces = if namespaces.is_empty() {
                match tools.store().namespaces().await {
                    Ok(all) => all.into_iter().map(|n| n.name).collect(),
                    Err(e) => return fail(e),
                }
            } else {
                namespaces.clone()
            };
            if namespaces.is_empty() {
                Ok(json!({"hits": []}))
            } else {
                tools
                    .call(
                        &who,
                        "memory_search",
                        json!({"query": query, "namespaces": namespaces, "top_k": top_k}),
                    )
                    .await
                    .map_err(|e| e.to_string())
            }
        }
        MemoryCommand::Write {
            namespace,
            content,
            metadata,
        } => {
            let metadata = match metadata.as_deref().map(serde_json::from_str::<Value>) {
                None => Value::Null,
                Some(Ok(v @ Value::Object(_))) => v,
                Some(_) => return fail("--metadata must be a JSON object"),
            };
            let mut args = json!({"namespace": namespace, "content": content});
            if !metadata.is_null() {
                args["metadata"] = metadata;
            }
            tools
                .call(&who, "memory_write", args)
                .await
                .map_err(|e| e.to_string())
        }
        MemoryCommand::List => tools
            .store()
            .namespaces()
            .await
            .map(|all| {
                Value::Array(
                    all.into_iter()
                        .map(|n| json!({"namespace": n.name, "count": n.count}))
                        .collect(),
                )
            })
            .map_err(|e| e.to_string()),
    };
    match outcome {
        Ok(value) => {
            print_out(&serde_json::to_string_pretty(&value).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// `a2e serve --mcp-stdio`: the host's tools and skills to one MCP client on
/// stdin/stdout until it goes away (or SIGTERM/SIGINT).
pub(super) async fn serve_mcp_stdio(host: Arc<Host>) -> ExitCode {
    if let Err(e) = host.config().mcp.request_state_key() {
        return fail(e);
    }
    let extras = a2e_host::mcp::McpExtras::standard(&host);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        stop.cancel();
    });
    let backend = match super::acmp::mcp_backend(&host, extras, true) {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    match a2e_host::mcp::serve_backend_stdio(backend, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("MCP over stdio failed: {e}")),
    }
}

/// `a2e serve --mcp-http ADDR`: Streamable HTTP on `/mcp`; loopback only
/// unless the configuration has an `auth_token` (then a bearer token).
pub(super) async fn serve_mcp_http(host: Arc<Host>, addr: &str) -> ExitCode {
    if let Err(e) = host.config().mcp.request_state_key() {
        return fail(e);
    }
    let listener = match a2e_host::transport::net::bind(addr, &host).await {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    if let Ok(local) = listener.local_addr() {
        eprintln!("a2e: serving MCP (Streamable HTTP) on http://{local}/mcp");
    }
    let extras = a2e_host::mcp::McpExtras::standard(&host);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        stop.cancel();
    });
    let token = Some(host.config().auth_token.clone()).filter(|t| !t.is_empty());
    let backend = match super::acmp::mcp_backend(&host, extras, false) {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    match a2e_host::mcp::serve_backend_http(backend, token, listener, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("MCP over HTTP failed: {e}")),
    }
}

/// `a2e serve --a2a ADDR`: the host as an A2A agent; loopback only unless
/// the configuration has an `auth_token` (then a bearer token).
pub(super) async fn serve_a2a(host: Arc<Host>, addr: &str) -> ExitCode {
    let listener = match a2e_host::transport::net::bind(addr, &host).await {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let base = match listener.local_addr() {
        Ok(local) => format!("http://{local}"),
        Err(e) => return fail(format!("A2A listener: {e}")),
    };
    eprintln!("a2e: serving A2A (its card at /.well-known/agent-card.json) on {base}");
    let agent = a2e_host::a2a::A2aAgent::new(host, base);
    match agent.serve(listener, wait_for_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("A2A over HTTP failed: {e}")),
    }
}
