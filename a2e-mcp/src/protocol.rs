//! The MCP protocol version a2e speaks as a client: asked for in the
//! toolkit's `initialize` and in the unauthenticated probe that finds a
//! server's OAuth challenge, so both sit below the two.

use rmcp::model::ProtocolVersion;

/// The protocol version a2e asks for in `initialize` (a server that answers
/// with an older one it knows is spoken to in that one).
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;
