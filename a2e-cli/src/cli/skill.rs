//! `a2e skills` and `a2e skill NAME`: list the host's skills, run one.

use std::process::ExitCode;
use std::sync::Arc;

use a2e_host::Host;
use a2e_host::{CallOptions, EventStream};
use a2e_proto::{LLMConfig, Message, Response, SkillCallRequest, SkillCallResponse};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::run::{EXIT_FAILED, EXIT_INVALID, print_events, print_out};

/// What kind of skill a plugin serves, for the listing.
fn kind(plugin: &str) -> &str {
    match plugin {
        "llm_skills" => "llm",
        "chain_skills" => "chain",
        "program_skills" => "program",
        "ontheia_skills" => "ontheia",
        other => other,
    }
}

/// Prints one line per skill: name, status, kind, description; with `json`,
/// one JSON object per line (the skill's definition and its `kind`).
pub(crate) fn list(host: &Arc<Host>, json: bool) {
    for entry in host.registry().skills() {
        let skill = host.effective_skill(&entry.def);
        let kind = kind(entry.plugin.name());
        if json {
            let mut value = serde_json::to_value(&skill).unwrap_or_default();
            if let Some(object) = value.as_object_mut() {
                object.insert("kind".into(), Value::from(kind));
            }
            print_out(&value.to_string());
            continue;
        }
        print_out(&format!(
            "{:<20} {:<10} {:<6} {}",
            skill.name, skill.status, kind, skill.description
        ));
    }
}

fn invalid(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("a2e: {message}");
    ExitCode::from(EXIT_INVALID)
}

fn parse_object(flag: &str, text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "{flag}: expected a JSON object, got {}",
            a2e_proto::json_kind(&other)
        )),
        Err(e) => Err(format!("{flag}: not valid JSON: {e}")),
    }
}

/// Runs one skill: events on stderr (JSON lines) with `events`, the `skill/call/resp`
/// on stdout; exit 0 success, 1 failed, 2 refused or invalid input.
pub(crate) async fn run_skill(
    host: &Arc<Host>,
    name: &str,
    input: Option<&str>,
    events: bool,
    timeout: Option<u64>,
    llm_override: Option<&str>,
) -> ExitCode {
    let arguments = match input.map(|i| parse_object("--input", i)).transpose() {
        Ok(a) => a.unwrap_or_default(),
        Err(e) => return invalid(e),
    };
    let llm_override = match llm_override
        .map(|o| {
            parse_object("--llm-override", o).and_then(|m| {
                serde_json::from_value::<LLMConfig>(Value::Object(m))
                    .map_err(|e| format!("--llm-override: {e}"))
            })
        })
        .transpose()
    {
        Ok(o) => o,
        Err(e) => return invalid(e),
    };
    let req = SkillCallRequest {
        id: uuid::Uuid::new_v4().to_string(),
        name: name.to_owned(),
        arguments,
        streaming: events,
        // 0: the skill's own `timeout_seconds`, else the host's default.
        timeout: timeout.unwrap_or(0),
        llm_override,
        ..SkillCallRequest::default()
    };
    let cancel = CancellationToken::new();
    let interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            interrupt.cancel();
        }
    });
    let (tx, rx) = EventStream::channel(256);
    let printer = tokio::spawn(print_events(rx));
    let mut options = CallOptions::new().cancel(&cancel);
    if events {
        options = options.events(tx);
    } else {
        drop(tx);
    }
    let result = host.call_skill(req.clone(), options).await;
    let _ = printer.await;
    match result {
        Ok(result) => {
            let ok = result.success;
            let mut resp = SkillCallResponse::for_request(&req);
            resp.name = name.to_owned();
            resp.data = Some(result);
            let message = Message::from(resp);
            print_out(&serde_json::to_string_pretty(&message).unwrap_or_default());
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_FAILED)
            }
        }
        Err(e) => invalid(format!("skill `{name}` refused: {e} ({})", e.code())),
    }
}
