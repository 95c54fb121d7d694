//! Host errors and the one place where they map to wire codes.

use a2e_proto::{ErrorCode, ErrorMessage};

/// Why a request was refused or a call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostError {
    /// No tool of that name.
    #[error("unknown tool `{0}`")]
    UnknownTool(String),
    /// No skill of that name.
    #[error("unknown skill `{0}`")]
    UnknownSkill(String),
    /// A skill that exists but may not be called (not `Published`, or `Blocked`).
    #[error("{0}")]
    SkillUnavailable(String),
    /// A chain refused at validation (`chain_cycle` or `schema_violation`).
    #[error("{message}")]
    InvalidChain {
        /// `chain_cycle` or `schema_violation`.
        code: ErrorCode,
        /// What is wrong, naming the node and field.
        message: String,
        /// `{node_id, field}` (and `cycle` for a cycle).
        detail: serde_json::Map<String, serde_json::Value>,
    },
    /// Refused by policy (allow-lists, path confinement, disabled tool).
    #[error("denied: {0}")]
    Denied(String),
    /// Arguments or a message of the wrong shape.
    #[error("{message}")]
    Schema {
        /// Summary.
        message: String,
        /// Every violation: `path: what`.
        violations: Vec<String>,
    },
    /// Not allowed in this session (no handshake, capability not accepted).
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// A wall-clock limit ran out.
    #[error("timed out after {0} s")]
    Timeout(u64),
    /// Cancelled (session ended, chain aborted).
    #[error("cancelled")]
    Cancelled,
    /// A tool ran and failed.
    #[error("{0}")]
    Tool(String),
    /// A skill ran and failed.
    #[error("{0}")]
    Skill(String),
    /// Process capability errors.
    #[error("{message}")]
    Proc {
        /// `unknown_proc`, `proc_dead` or `proc_limit`.
        code: ErrorCode,
        /// What happened.
        message: String,
    },
    /// Anything else that went wrong inside the host.
    #[error("{0}")]
    Runtime(String),
}

impl HostError {
    /// The wire code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::UnknownTool(_) => ErrorCode::UNKNOWN_TOOL,
            Self::UnknownSkill(_) => ErrorCode::UNKNOWN_SKILL,
            Self::SkillUnavailable(_) => ErrorCode::SKILL_ERROR,
            Self::Denied(_) => ErrorCode::TOOL_DENIED,
            Self::Schema { .. } => ErrorCode::SCHEMA_VIOLATION,
            Self::Unauthorized(_) => ErrorCode::UNAUTHORIZED,
            Self::Timeout(_) | Self::Cancelled => ErrorCode::TIMEOUT,
            Self::Tool(_) => ErrorCode::TOOL_ERROR,
            Self::Skill(_) => ErrorCode::SKILL_ERROR,
            Self::Proc { code, .. } | Self::InvalidChain { code, .. } => code.clone(),
            Self::Runtime(_) => ErrorCode::RUNTIME_ERROR,
        }
    }

    /// Whether this refuses the request before anything ran (answered with an `error`
    /// message) rather than a failure of a call that ran (answered in-band).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::UnknownTool(_)
                | Self::UnknownSkill(_)
                | Self::SkillUnavailable(_)
                | Self::InvalidChain { .. }
                | Self::Denied(_)
                | Self::Schema { .. }
                | Self::Unauthorized(_)
        )
    }

    /// A schema violation listing every problem.
    pub fn schema(violations: Vec<String>) -> Self {
        let message = match violations.as_slice() {
            [one] => format!("invalid arguments: {one}"),
            many => format!(
                "invalid arguments ({} problems): {}",
                many.len(),
                many.join("; ")
            ),
        };
        Self::Schema {
            message,
            violations,
        }
    }

    /// The `error` message answering request `req_id`.
    pub fn to_error_message(&self, req_id: &str) -> ErrorMessage {
        let mut msg = ErrorMessage::new(req_id, self.code(), self.to_string());
        if self.is_refusal() {
            // Refused input does not get better by retrying.
            msg.retryable = false;
        }
        if let Self::InvalidChain { detail, .. } = self {
            msg.detail = detail.clone();
        }
        if let Self::Schema { violations, .. } = self {
            msg.detail.insert(
                "violations".into(),
                serde_json::Value::from(violations.clone()),
            );
        }
        msg
    }
}

/// Shorthand for host results.
pub type HostResult<T> = Result<T, HostError>;
