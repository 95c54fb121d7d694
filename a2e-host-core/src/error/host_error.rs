//! The host's error and the one place where it maps to wire codes.

use a2e_plugin::Cause;
use a2e_proto::{ErrorCode, ErrorMessage};

/// Why a request was refused or a call failed.
///
/// The host's own tools and skills build theirs with the named constructors,
/// which say whether the call was refused before it did anything
/// ([`HostError::denied`], [`HostError::invalid_argument`],
/// [`HostError::unauthorized`]) or ran and failed ([`HostError::failed`],
/// [`HostError::io`]); a plugin's [`a2e_plugin::Error`] becomes one when it
/// reaches the host.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
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
    /// A person denied a call that waited for approval (`denied`): a call
    /// that failed, answered in-band, not a refusal — it was accepted and
    /// waited.
    #[error("denied by {by}: {reason}")]
    ApprovalDenied {
        /// Who decided (`operator:NAME`, `client`, …).
        by: String,
        /// Why, as they gave it.
        reason: String,
    },
    /// Nobody decided on a call that waited for approval within its rule's
    /// time (`approval_timeout`).
    #[error("no decision on the call within {0} s of waiting for approval")]
    ApprovalTimeout(u64),
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
    /// A capability the request needs was not accepted at the handshake.
    #[error("capability `{0}` was not accepted for this session")]
    CapabilityNotAccepted(String),
    /// A message that is not a request the receiver takes (an unknown type, a
    /// message only a host sends).
    #[error("{0}")]
    InvalidMessage(String),
    /// The receiver cannot take the request now (shutting down); it may be
    /// sent again elsewhere or later.
    #[error("{0}")]
    Unavailable(String),
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
    /// A tool ran and failed because of an underlying error, kept as the
    /// source (`tool_error`).
    #[error("{context}: {source}")]
    ToolFailed {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: Cause,
    },
    /// A skill ran and failed because of an underlying error (`skill_error`).
    #[error("{context}: {source}")]
    SkillFailed {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: Cause,
    },
    /// Process capability errors.
    #[error("{message}")]
    Proc {
        /// `unknown_proc`, `proc_dead` or `proc_limit`.
        code: ErrorCode,
        /// What happened.
        message: String,
    },
    /// An I/O operation failed (a file, a pipe, a socket, a task).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: Cause,
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
            Self::ApprovalDenied { .. } => ErrorCode::DENIED,
            Self::ApprovalTimeout(_) => ErrorCode::APPROVAL_TIMEOUT,
            Self::Schema { .. } => ErrorCode::SCHEMA_VIOLATION,
            Self::Unauthorized(_) | Self::CapabilityNotAccepted(_) => ErrorCode::UNAUTHORIZED,
            Self::InvalidMessage(_) => ErrorCode::INVALID_MESSAGE,
            Self::Unavailable(_) => ErrorCode::UNAVAILABLE,
            Self::Timeout(_) => ErrorCode::TIMEOUT,
            Self::Cancelled => ErrorCode::CANCELLED,
            Self::Tool(_) | Self::ToolFailed { .. } => ErrorCode::TOOL_ERROR,
            Self::Skill(_) | Self::SkillFailed { .. } => ErrorCode::SKILL_ERROR,
            Self::Proc { code, .. } | Self::InvalidChain { code, .. } => code.clone(),
            Self::Runtime(_) | Self::Io { .. } => ErrorCode::RUNTIME_ERROR,
        }
    }

    /// Refused by policy (`tool_denied`): an allow-list, the workspace confinement.
    pub fn denied(why: impl Into<String>) -> Self {
        Self::Denied(why.into())
    }

    /// Refused: the caller may not do this in this session (`unauthorized`).
    pub fn unauthorized(why: impl Into<String>) -> Self {
        Self::Unauthorized(why.into())
    }

    /// Refused: the argument at `path` is wrong (`schema_violation`).
    pub fn invalid_argument(path: &str, what: impl std::fmt::Display) -> Self {
        Self::schema(vec![format!("{path}: {what}")])
    }

    /// The call ran and failed (`tool_error` for a tool, `skill_error` for a skill).
    pub fn failed(why: impl Into<String>) -> Self {
        Self::Tool(why.into())
    }

    /// The tool ran and failed while `context`, because of `error` (kept as
    /// the source; `tool_error`).
    pub fn tool_failed(
        context: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::ToolFailed {
            context: context.into(),
            source: Cause::new(error),
        }
    }

    /// The skill ran and failed while `context`, because of `error`
    /// (`skill_error`).
    pub fn skill_failed(
        context: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::SkillFailed {
            context: context.into(),
            source: Cause::new(error),
        }
    }

    /// An I/O operation failed while the call ran.
    pub fn io(context: impl Into<String>, error: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source: Cause::new(error),
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
                | Self::CapabilityNotAccepted(_)
                | Self::InvalidMessage(_)
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
        if let Self::CapabilityNotAccepted(name) = self {
            msg.capability_name = name.clone();
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
