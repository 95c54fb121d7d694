//! What each subcommand does.

use std::process::ExitCode;
use std::sync::Arc;

use a2e_host::config::HostConfig;
use a2e_host::{Host, transport};

use super::{Cli, Command};

/// Exit code for invalid input (bad file, bad flags).
const INVALID: u8 = 2;

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("a2e: {message}");
    ExitCode::from(INVALID)
}

fn load_config(cli: &Cli) -> Result<HostConfig, String> {
    let mut config = match &cli.config {
        Some(path) => HostConfig::load(path).map_err(|e| e.to_string())?,
        None => HostConfig::default(),
    };
    if let Some(root) = &cli.root {
        config.root = root.clone();
    }
    config
        .commands
        .allow
        .extend(cli.allow_commands.iter().cloned());
    Ok(config)
}

fn build_host(cli: &Cli) -> Result<Arc<Host>, String> {
    let config = load_config(cli)?;
    a2e_host::skills::builder_with_skills(Host::builder(config).with_builtins())
        .build()
        .map_err(|e| e.to_string())
}

/// Runs the parsed command.
pub async fn run(cli: Cli) -> ExitCode {
    let host = match build_host(&cli) {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    match &cli.command {
        Command::Serve { stdio } => {
            if !stdio {
                return fail("choose a transport: --stdio");
            }
            transport::stdio::serve_stdio(host).await;
            ExitCode::SUCCESS
        }
        Command::Run {
            file,
            input,
            events,
        } => a2e_host::cli_run::run_file(&host, file, input.as_deref(), *events).await,
        Command::Validate { file } => a2e_host::cli_run::validate_file(&host, file),
        Command::Tools { query } => {
            let req = a2e_proto::ToolListRequest {
                query: query.clone().unwrap_or_default(),
                include_deferred: query.is_some(),
                ..Default::default()
            };
            for tool in host.list_tools(&req) {
                a2e_host::cli_run::print_out(&format!("{:<16} {}", tool.name, tool.description));
            }
            ExitCode::SUCCESS
        }
        Command::Skills => {
            for skill in host.discover_skills(&Default::default()) {
                a2e_host::cli_run::print_out(&format!(
                    "{:<20} {:<10} {}",
                    skill.name, skill.status, skill.description
                ));
            }
            ExitCode::SUCCESS
        }
        Command::Schema { r#type } => match r#type {
            None => {
                for t in a2e_proto::Message::TYPES {
                    a2e_host::cli_run::print_out(t);
                }
                ExitCode::SUCCESS
            }
            Some(t) => match a2e_proto::schema::schema_for_type(t) {
                Some(schema) => {
                    a2e_host::cli_run::print_out(
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
