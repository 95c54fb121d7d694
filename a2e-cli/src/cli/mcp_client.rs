//! `a2e mcp call SERVER TOOL` (and `a2e mcp login SERVER`, in `login.rs`):
//! the host as an MCP client of one server, from the command line.

use std::process::ExitCode;
use std::sync::Arc;

use a2e_host::config::HostConfig;
use a2e_mcp::{McpCallOptions, McpServerConfig, McpToolkit};
use serde_json::{Map, Value};

use super::run::print_out;

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("a2e: {message}");
    ExitCode::from(2)
}

/// The server called `target` in the configuration, or, for an `http(s)://`
/// URL that no configured server has, a Streamable HTTP server of that URL
/// named `remote`.
pub(super) fn server_config(config: &HostConfig, target: &str) -> Result<McpServerConfig, String> {
    if let Some(s) = config
        .mcp
        .servers
        .iter()
        .map(|s| s.config())
        .find(|s| s.name == target || s.url.as_deref() == Some(target))
    {
        return Ok(s.clone());
    }
    if target.starts_with("http://") || target.starts_with("https://") {
        return Ok(McpServerConfig::http("remote", target));
    }
    Err(format!(
        "no MCP server `{target}` in the configuration (a name of [[mcp.servers]], or an http(s) URL)"
    ))
}

/// `a2e mcp call SERVER TOOL [--input JSON]`: mounts the server, calls the
/// tool, prints the A2E result as JSON. Exit 0 when the call succeeded, 1
/// when it failed, 2 when it could not be made.
pub(super) async fn call(
    config: &HostConfig,
    target: &str,
    tool: &str,
    input: Option<&str>,
) -> ExitCode {
    let server = match server_config(config, target) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let args: Map<String, Value> = match input.map(serde_json::from_str::<Value>) {
        None => Map::new(),
        Some(Ok(Value::Object(m))) => m,
        Some(Ok(_)) => return fail("--input must be a JSON object"),
        Some(Err(e)) => return fail(format!("--input is not JSON: {e}")),
    };
    let kit = match McpToolkit::new(server) {
        Ok(kit) => kit,
        Err(e) => return fail(e),
    };
    if kit.config().sampling.is_some() {
        match a2e_host::llm::providers(config) {
            Ok(p) => kit.set_sampler(Arc::new(a2e_host::mcp::HostSampler::new(Arc::new(p)))),
            Err(e) => return fail(e),
        }
    }
    let result = kit.call_result(tool, args, McpCallOptions::default()).await;
    kit.shutdown().await;
    print_out(&serde_json::to_string(&result).unwrap_or_default());
    if result.success {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `a2e mcp login SERVER`: the first consent for a server behind OAuth. Prints
/// the authorization URL (and opens it with `$BROWSER` when set), waits for
/// the redirect on a loopback port, stores the tokens (mode 0600) where the
/// server's `oauth.token_file` says (by default the data directory's
/// `mcp-oauth/SERVER.json`). Exit 0 when authorized, 1 when not.
pub(super) async fn login(config: &HostConfig, target: &str) -> ExitCode {
    let server = match server_config(config, target) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let Some(url) = server.url.clone() else {
        return fail(format!(
            "`{}` is a stdio server: OAuth is for Streamable HTTP servers",
            server.name
        ));
    };
    let oauth = server.oauth.clone().unwrap_or_default();
    let file = oauth.token_file_or(&a2e_mcp::oauth::default_token_file(
        &config.data_path(),
        &server.name,
    ));
    let client = match a2e_mcp::http_client() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let challenge = a2e_mcp::oauth::challenge(&client, &url).await;
    if challenge.is_none() {
        print_out(&format!(
            "`{}` asks for no authorization; nothing to do",
            server.name
        ));
        return ExitCode::SUCCESS;
    }
    match a2e_mcp::oauth::authorize(&server.name, &url, &oauth, &file, challenge).await {
        Ok(()) => {
            print_out(&format!(
                "authorized for `{}`; tokens kept in {}",
                server.name,
                file.display()
            ));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("a2e: {e}");
            ExitCode::from(1)
        }
    }
}
