//! Error codes of every capability (a2e-core.md §3), as one open enum.

open_enum! {
    /// A machine-readable error code. Lowercase on the wire; unknown codes survive.
    pub struct ErrorCode {
        /// The line was not JSON or not UTF-8.
        PARSE_ERROR = "parse_error",
        /// A general runtime failure.
        RUNTIME_ERROR = "runtime_error",
        /// Not a message: not an object, no `type`, unknown `type`, or over a limit.
        INVALID_MESSAGE = "invalid_message",
        /// The major protocol version is not 1.
        VERSION_MISMATCH = "version_mismatch",
        /// Not authorised (no handshake, capability not accepted, bad token).
        UNAUTHORIZED = "unauthorized",
        /// A known message or arguments of the wrong shape.
        SCHEMA_VIOLATION = "schema_violation",
        /// A wall-clock limit ran out.
        TIMEOUT = "timeout",
        /// The work was cancelled before it finished: its session ended, its
        /// chain was cancelled or aborted, the host shut down. Not in the specs'
        /// tables; this host's choice (docs/protocol-decisions.md).
        CANCELLED = "cancelled",
        /// A sandbox ran out of memory.
        OUT_OF_MEMORY = "out_of_memory",
        /// A sandbox crashed.
        SANDBOX_CRASH = "sandbox_crash",
        /// No tool of that name.
        UNKNOWN_TOOL = "unknown_tool",
        /// A tool call refused by policy.
        TOOL_DENIED = "tool_denied",
        /// A person denied a call that waited for approval (this host's
        /// extension: docs/approvals.md).
        DENIED = "denied",
        /// Nobody decided on a call that waited for approval before its rule's
        /// time ran out (this host's extension: docs/approvals.md).
        APPROVAL_TIMEOUT = "approval_timeout",
        /// A tool ran and failed.
        TOOL_ERROR = "tool_error",
        /// No skill of that name.
        UNKNOWN_SKILL = "unknown_skill",
        /// A skill ran and failed.
        SKILL_ERROR = "skill_error",
        /// A chain's graph has a cycle.
        CHAIN_CYCLE = "chain_cycle",
        /// A chain node failed.
        CHAIN_NODE_ERROR = "chain_node_error",
        /// No process of that id.
        UNKNOWN_PROC = "unknown_proc",
        /// The process has exited.
        PROC_DEAD = "proc_dead",
        /// The session's process limit is reached.
        PROC_LIMIT = "proc_limit",
        /// MCP: no such server.
        SERVER_NOT_FOUND = "server_not_found",
        /// MCP: server unavailable.
        UNAVAILABLE = "unavailable",
        /// MCP: no such tool.
        TOOL_NOT_FOUND = "tool_not_found",
        /// MCP: no such resource.
        RESOURCE_NOT_FOUND = "resource_not_found",
        /// MCP: no such prompt.
        PROMPT_NOT_FOUND = "prompt_not_found",
        /// MCP: transport failure.
        TRANSPORT_ERROR = "transport_error",
        /// MCP: protocol failure.
        PROTOCOL_ERROR = "protocol_error",
        /// MCP: sampling refused.
        SAMPLING_REFUSED = "sampling_refused",
        /// MCP: capability missing.
        CAPABILITY_MISSING = "capability_missing",
    }
}

impl ErrorCode {
    /// Whether a caller may retry after this error (a2e-core.md §3; unknown codes: no).
    pub fn retryable(&self) -> bool {
        [
            Self::RUNTIME_ERROR,
            Self::TIMEOUT,
            Self::CANCELLED,
            Self::OUT_OF_MEMORY,
            Self::SANDBOX_CRASH,
            Self::TOOL_ERROR,
            Self::SKILL_ERROR,
        ]
        .contains(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_codes_round_trip() {
        for code in ErrorCode::KNOWN {
            let json = serde_json::to_string(code).unwrap();
            let back: ErrorCode = serde_json::from_str(&json).unwrap();
            assert_eq!(&back, code);
            assert!(back.is_known());
        }
        let odd: ErrorCode = serde_json::from_str("\"quota_exceeded\"").unwrap();
        assert!(!odd.is_known());
        assert_eq!(serde_json::to_string(&odd).unwrap(), "\"quota_exceeded\"");
    }

    #[test]
    fn retryable_follows_the_core_table() {
        assert!(ErrorCode::TIMEOUT.retryable());
        assert!(!ErrorCode::PARSE_ERROR.retryable());
        assert!(!ErrorCode::new("whatever").retryable());
    }
}
