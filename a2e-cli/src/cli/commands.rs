//! What each subcommand does.

use std::process::ExitCode;
use std::sync::Arc;

use a2e_host::config::HostConfig;
use a2e_host::{Compose, Host, HostBuilder, transport};
use a2e_telemetry::{Telemetry, TelemetryGuard};

use super::signal::wait_for_signal;
use super::{Cli, Command, RunsCommand};

/// Exit code for invalid input (bad file, bad flags).
const INVALID: u8 = 2;

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("a2e: {message}");
    ExitCode::from(INVALID)
}

/// The variable that names the cluster's NATS server when `--cluster` does not.
pub(crate) const CLUSTER_ENV: &str = "A2E_CLUSTER";

/// The cluster `--cluster` names, else `A2E_CLUSTER` (when set and not empty).
fn cluster_url(cli: &Cli) -> Option<String> {
    cli.cluster.clone().or_else(|| {
        std::env::var(CLUSTER_ENV)
            .ok()
            .filter(|url| !url.trim().is_empty())
    })
}

fn load_config(cli: &Cli) -> Result<HostConfig, String> {
    let mut config = match &cli.config {
        Some(path) => HostConfig::load(path).map_err(|e| e.to_string())?,
        None => HostConfig::default(),
    };
    if let Some(root) = &cli.root {
        // A mistyped root would otherwise serve (or read the journal of) a
        // workspace the person did not mean, empty and silent.
        if !root.is_dir() {
            return Err(format!("--root {}: no such directory", root.display()));
        }
        config.root = root.clone();
    }
    if let Some(url) = cluster_url(cli) {
        config.cluster.nats_url = url;
    }
    config
        .commands
        .allow
        .extend(cli.allow_commands.iter().cloned());
    // OAuth tokens of mounted servers live in the data directory.
    let data = config.data_path();
    for server in &mut config.mcp.servers {
        let server = server.config_mut();
        if let Some(oauth) = &mut server.oauth
            && oauth.token_file.is_none()
        {
            oauth.token_file = Some(a2e_mcp::oauth::default_token_file(&data, &server.name));
        }
    }
    Ok(config)
}

/// Telemetry as `[telemetry]` and the `OTEL_*` variables say (off by default).
pub fn telemetry(cli: &Cli) -> Result<(Telemetry, TelemetryGuard), String> {
    let config = match &cli.config {
        Some(_) => load_config(cli)?.telemetry,
        None => a2e_telemetry::TelemetryConfig::default(),
    };
    let config = config.with_env().map_err(|e| e.to_string())?;
    Telemetry::init(&config).map_err(|e| e.to_string())
}

/// The host of `cli`, as the configuration describes it
/// ([`HostBuilder::from_config`]); `a2e serve` also opens its run journal and
/// resumes its unfinished runs ([`HostBuilder::start`]).
async fn build_host(cli: &Cli, telemetry: Telemetry) -> Result<Arc<Host>, String> {
    let mut builder = HostBuilder::from_config(load_config(cli)?, telemetry);
    // Only the commands that may start processes probe the sandbox.
    if matches!(
        cli.command,
        Command::Serve { .. }
            | Command::Run { .. }
            | Command::Skill { .. }
            | Command::Runs {
                command: RunsCommand::Fork { .. }
            }
    ) && let Some(sandbox) = sandbox().await
    {
        builder = builder.with_sandbox(sandbox);
    }
    match &cli.command {
        Command::Serve { ws, http, .. } => builder
            .serving_live_view(ws.is_some() || http.is_some())
            .start()
            .await
            .map_err(|e| e.to_string()),
        _ => builder
            .mount()
            .await
            .and_then(HostBuilder::build)
            .map_err(|e| e.to_string()),
    }
}

/// Makes the binary its own sandbox wrapper for every command it starts
/// (unavailable layers are logged once; without a sandbox commands start
/// directly).
async fn sandbox() -> Option<Arc<a2e_sandbox::Sandbox>> {
    let wrapper = match a2e_sandbox::Wrapper::current_exe(super::super::SANDBOX_EXEC) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "no sandbox for commands: cannot find this binary");
            return None;
        }
    };
    match a2e_sandbox::Sandbox::new(wrapper, a2e_sandbox::SandboxConfig::default()).await {
        Ok(sandbox) => Some(Arc::new(sandbox)),
        Err(e) => {
            tracing::warn!(error = %e, "no sandbox for commands");
            None
        }
    }
}

/// Runs the parsed command.
pub async fn run(cli: Cli, telemetry: Telemetry) -> ExitCode {
    if let Command::Mcp { command } = &cli.command {
        // Setting a server up: inspect it even when it does not work yet.
        return match load_config(&cli) {
            Ok(config) => super::inspect::mcp(&config, command).await,
            Err(e) => fail(e),
        };
    }
    if let Command::Graph {
        file,
        format,
        out,
        run,
    } = &cli.command
    {
        // A picture of a file needs no host; a run's states come from the
        // journal of the configuration.
        let format = super::graph::choose_format(*format, out.as_deref());
        let states = match run {
            Some(run) => match load_config(&cli) {
                Ok(config) => match super::graph::run_states(&config, run).await {
                    Ok(states) => Some(states),
                    Err(code) => return code,
                },
                Err(e) => return fail(e),
            },
            None => None,
        };
        return super::graph::graph_file(file, format, out.as_deref(), states.as_ref());
    }
    if let Command::Runs {
        command: RunsCommand::Fork { id, from, input },
    } = &cli.command
    {
        // A fork runs its nodes: it needs a host.
        return match build_host(&cli, telemetry).await {
            Ok(host) => super::runs::fork(&host, id, from, input.as_deref()).await,
            Err(e) => fail(e),
        };
    }
    if let Command::Runs { command } = &cli.command {
        // The journal is read (and marked) without a host.
        return match load_config(&cli) {
            Ok(config) => super::runs::runs(&config, command).await,
            Err(e) => fail(e),
        };
    }
    let host = match build_host(&cli, telemetry).await {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    match &cli.command {
        Command::Serve {
            stdio,
            ws,
            http,
            mcp_stdio,
            mcp_http,
            a2a,
            acmp_ws,
        } => {
            let _acmp = match acmp_ws {
                Some(addr) => match super::acmp::start_acmp_ws(&host, addr).await {
                    Ok(server) => {
                        if !*mcp_stdio
                            && !*stdio
                            && mcp_http.is_none()
                            && a2a.is_none()
                            && ws.is_none()
                            && http.is_none()
                        {
                            wait_for_signal().await;
                            eprintln!("a2e: shutting down");
                            server.shutdown.cancel();
                            return match server.handle.await {
                                Ok(Ok(())) => ExitCode::SUCCESS,
                                Ok(Err(e)) => fail(format!("ACMP server failed: {e}")),
                                Err(e) => fail(format!("ACMP server failed: {e}")),
                            };
                        }
                        Some(server)
                    }
                    Err(e) => return fail(e),
                },
                None => None,
            };
            if *mcp_stdio {
                return super::inspect::serve_mcp_stdio(host).await;
            }
            if *stdio && ws.is_none() && http.is_none() {
                transport::stdio::serve_stdio(host).await;
                return ExitCode::SUCCESS;
            }
            if *stdio {
                // The agent on stdio, and listeners beside it (their live
                // view lists the stdio session); all end with stdin.
                let (state, servers) = match start_net(&host, ws.as_deref(), http.as_deref()).await
                {
                    Ok(started) => started,
                    Err(code) => return code,
                };
                transport::stdio::serve_stdio_beside(host, Some(state.clone())).await;
                state.shutdown_token().cancel();
                return wait_servers(servers).await;
            }
            if let Some(addr) = mcp_http {
                return super::inspect::serve_mcp_http(host, addr).await;
            }
            if let Some(addr) = a2a {
                return super::inspect::serve_a2a(host, addr).await;
            }
            if ws.is_none() && http.is_none() {
                return fail(
                    "choose a transport: --stdio, --ws ADDR, --http ADDR, --mcp-stdio, --mcp-http ADDR, --a2a ADDR or --acmp-ws ADDR",
                );
            }
            serve_net(host, ws.as_deref(), http.as_deref()).await
        }
        Command::Run {
            file,
            input,
            detach: true,
            ..
        } => match super::catalog::refuse(&host, file, input.as_deref()).await {
            Some(refused) => refused,
            None => super::runs::detach(&host, file, input.as_deref()).await,
        },
        Command::Run {
            file,
            input,
            events,
            vars,
            detach: false,
        } => match super::catalog::refuse(&host, file, input.as_deref()).await {
            Some(refused) => refused,
            None => super::run::run_file(&host, file, input.as_deref(), *events, vars).await,
        },
        Command::Mcp { .. } | Command::Graph { .. } | Command::Runs { .. } => ExitCode::SUCCESS,
        Command::Memory { command } => super::inspect::memory(&host, command).await,
        Command::Validate { file } => match super::catalog::refuse(&host, file, None).await {
            Some(refused) => refused,
            None => super::run::validate_file(&host, file),
        },
        Command::Tools { query, json } => {
            let req = a2e_proto::ToolListRequest {
                query: query.clone().unwrap_or_default(),
                include_deferred: query.is_some(),
                ..Default::default()
            };
            // Every mounted server is listed (each starts once, here).
            host.registry().load_tools(true).await;
            for tool in host.list_tools(&req) {
                if *json {
                    super::run::print_out(&serde_json::to_string(&tool).unwrap_or_default());
                } else {
                    super::run::print_out(&format!("{:<16} {}", tool.name, tool.description));
                }
            }
            ExitCode::SUCCESS
        }
        Command::Skills { json } => {
            super::skill::list(&host, *json);
            ExitCode::SUCCESS
        }
        Command::Skill {
            name,
            input,
            events,
            timeout,
            llm_override,
        } => {
            super::skill::run_skill(
                &host,
                name,
                input.as_deref(),
                *events,
                *timeout,
                llm_override.as_deref(),
            )
            .await
        }
        Command::Schema { r#type } => match r#type {
            None => {
                for t in a2e_proto::Message::TYPES {
                    super::run::print_out(t);
                }
                ExitCode::SUCCESS
            }
            Some(t) => match a2e_proto::schema::schema_for_type(t) {
                Some(schema) => {
                    super::run::print_out(
                        &serde_json::to_string_pretty(&schema).unwrap_or_default(),
                    );
                    ExitCode::SUCCESS
                }
                None => fail(format!(
                    "unknown message type `{t}`; `a2e schema` lists them"
                )),
            },
        },
    }
}

/// Serves WebSocket and/or HTTP+SSE until SIGTERM or SIGINT, then shuts down
/// gracefully: stop accepting, drain calls in flight, close every session.
async fn serve_net(host: Arc<Host>, ws: Option<&str>, http: Option<&str>) -> ExitCode {
    let (state, servers) = match start_net(&host, ws, http).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    let shutdown = state.shutdown_token().clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        eprintln!("a2e: shutting down");
        shutdown.cancel();
    });
    wait_servers(servers).await
}

type Servers = Vec<tokio::task::JoinHandle<std::io::Result<()>>>;

/// Binds the WebSocket and HTTP listeners (one when both are on the same
/// address) and serves them until the state's shutdown fires.
async fn start_net(
    host: &Arc<Host>,
    ws: Option<&str>,
    http: Option<&str>,
) -> Result<(Arc<transport::net::NetState>, Servers), ExitCode> {
    use transport::net::{self, NetOptions, NetState, Protocols};
    let mut listeners: Vec<(&str, Protocols)> = Vec::new();
    match (ws, http) {
        (Some(w), Some(h)) if w == h => listeners.push((
            w,
            Protocols {
                ws: true,
                http: true,
            },
        )),
        _ => {
            if let Some(w) = ws {
                listeners.push((
                    w,
                    Protocols {
                        ws: true,
                        http: false,
                    },
                ));
            }
            if let Some(h) = http {
                listeners.push((
                    h,
                    Protocols {
                        ws: false,
                        http: true,
                    },
                ));
            }
        }
    }
    let state = NetState::new(host.clone(), NetOptions::default());
    let mut servers = Vec::new();
    for (addr, protocols) in listeners {
        let listener = match net::bind(addr, host).await {
            Ok(l) => l,
            Err(e) => return Err(fail(e)),
        };
        let local = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| addr.to_owned());
        if protocols.ws {
            eprintln!("a2e: serving WebSocket on ws://{local}/");
        }
        if protocols.http {
            eprintln!("a2e: serving HTTP+SSE on http://{local}/");
        }
        // The live view is on every WebSocket and HTTP listener (the host
        // is built with its `ui` feature).
        eprintln!("a2e: live view on http://{local}/ui");
        let router = a2e_host::compose::router(state.clone(), protocols);
        servers.push(tokio::spawn(net::serve(listener, router, state.clone())));
    }
    Ok((state, servers))
}

/// Waits for the servers to return.
async fn wait_servers(servers: Servers) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for server in servers {
        match server.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => code = fail(format!("server failed: {e}")),
            Err(e) => code = fail(format!("server failed: {e}")),
        }
    }
    code
}
