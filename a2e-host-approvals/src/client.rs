//! The caller's MCP client asked to decide (`elicitation/create`): its user
//! sees the call and its (redacted) arguments and approves or denies.

use a2e_host_core::plugin::CallContext;
use a2e_journal::approval::{Decision, Waiting};
use a2e_journal::now_ms;
use a2e_mcp::ClientLink;
use a2e_mcp::rmcp::model::ElicitationAction;
use serde_json::{Value, json};

/// Most bytes of the arguments' JSON text the question shows.
const MAX_SHOWN_ARGS: usize = 2048;

/// The client a call came from, when it takes elicitations.
pub(crate) struct Client(ClientLink);

impl Client {
    /// The MCP client of `ctx`'s call, when it can be asked.
    pub(crate) fn of(ctx: &CallContext) -> Option<Self> {
        ctx.extensions
            .get::<ClientLink>()
            .filter(|link| link.supports_elicitation())
            .cloned()
            .map(Self)
    }

    /// Asks the client's user; a client that cannot answer is never heard
    /// from (the call waits for another decider, or its time).
    pub(crate) async fn decide(&self, waiting: &Waiting) -> Decision {
        let mut shown = serde_json::to_string(&waiting.args).unwrap_or_default();
        if shown.len() > MAX_SHOWN_ARGS {
            let mut end = MAX_SHOWN_ARGS;
            while !shown.is_char_boundary(end) {
                end -= 1;
            }
            shown.truncate(end);
            shown.push('…');
        }
        let message = format!(
            "Approve the call of {} `{}` with {shown}? ({})",
            waiting.target, waiting.name, waiting.reason
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "approve": {"type": "boolean", "title": "Approve",
                            "description": "Run the call with these arguments"},
                "reason": {"type": "string", "title": "Reason",
                           "description": "Why (shown to the agent when denied)"},
            },
            "required": ["approve"],
        });
        let decided = |approved: bool, reason: String| Decision {
            approved,
            args: None,
            reason,
            by: "client".into(),
            at_ms: now_ms(),
        };
        match self.0.elicit(&message, schema).await {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept => {
                    let content = answer.content.unwrap_or(Value::Null);
                    let approved = content.get("approve").and_then(Value::as_bool) == Some(true);
                    let reason = content
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    decided(approved, reason)
                }
                ElicitationAction::Decline => decided(false, "the client's user declined".into()),
                _ => decided(false, "the client's user dismissed the question".into()),
            },
            Err(e) => {
                tracing::info!("approval: the client could not be asked: {e}");
                futures::future::pending().await
            }
        }
    }
}
