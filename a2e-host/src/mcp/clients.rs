//! The connected MCP clients, by the A2E session their connection runs in, so
//! that a tool or a skill can reach the client it was called from
//! (sampling, elicitation, log messages).

use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use a2e_mcp::ClientLink;

use crate::plugin::CallContext;

static CLIENTS: LazyLock<RwLock<HashMap<String, ClientLink>>> = LazyLock::new(Default::default);

pub(super) fn attach(session_id: &str, link: ClientLink) {
    let mut map = CLIENTS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.insert(session_id.to_owned(), link);
}

pub(super) fn detach(session_id: &str) {
    let mut map = CLIENTS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.remove(session_id);
}

/// The MCP client of session `session_id`, when the session is an MCP
/// connection whose client has initialized.
pub fn client_of_session(session_id: &str) -> Option<ClientLink> {
    let map = CLIENTS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.get(session_id).filter(|l| !l.is_closed()).cloned()
}

/// The MCP client a call came from (`None` for a call over A2E, or from a
/// client that has gone).
pub fn client_of(ctx: &CallContext) -> Option<ClientLink> {
    client_of_session(&ctx.session_id)
}
