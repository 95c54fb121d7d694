//! The MCP client a call came from, so that a tool or a skill can reach it
//! (sampling, elicitation, log messages): the link travels in the call's
//! context, put there by the MCP backend of the client's connection, and
//! nested calls (a skill's tool calls, a chain skill's nodes) carry it on.

use a2e_mcp::ClientLink;

use crate::plugin::CallContext;

/// The MCP client a call came from (`None` for a call over A2E, or from a
/// client that has gone).
pub fn client_of(ctx: &CallContext) -> Option<ClientLink> {
    ctx.extensions
        .get::<ClientLink>()
        .filter(|link| !link.is_closed())
        .cloned()
}
