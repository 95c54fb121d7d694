//! The error a plugin's call returns: refused (with a kind), failed (with a
//! source), cancelled or timed out.
//!
//! It is small on purpose: a plugin says what happened, and the host that
//! runs the plugin decides how that is answered on the wire (its own error
//! type is the one place where wire codes are chosen). [`serve`](crate::serve),
//! which answers an agent directly, uses [`Error::code`].

use std::sync::Arc;

use a2e_proto::{ErrorCode, ErrorMessage};

/// Why a plugin's call did not succeed.
///
/// Build one with the named constructors: [`Error::denied`],
/// [`Error::invalid_argument`], [`Error::unauthorized`] refuse the call
/// before it did anything; [`Error::failed`], [`Error::failed_because`] and
/// [`Error::io`] say it ran and failed.
///
/// ```
/// use a2e_plugin::{Error, Refusal};
///
/// let e = Error::invalid_argument("$.times", "must be at most 10");
/// assert!(e.is_refusal());
/// assert_eq!(e.code().as_str(), "schema_violation");
/// assert!(matches!(e, Error::Refused { kind: Refusal::InvalidArguments(_), .. }));
///
/// let io = std::io::Error::other("disk full");
/// let e = Error::io("writing the notes", io);
/// assert_eq!(e.to_string(), "writing the notes: disk full");
/// assert!(std::error::Error::source(&e).is_some());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Refused before it did anything (answered with an `error` message; a
    /// retry with the same input fails the same way).
    Refused {
        /// Why it was refused.
        kind: Refusal,
        /// What is wrong (for [`Refusal::UnknownTool`] and
        /// [`Refusal::UnknownSkill`], the name).
        message: String,
    },
    /// Ran and failed (answered in the result, `success: false`).
    Failed {
        /// What was being done, or what went wrong.
        message: String,
        /// The underlying error, if there is one.
        source: Option<Cause>,
    },
    /// Cancelled (the caller went away, the session ended, a chain aborted).
    Cancelled,
    /// A wall-clock limit ran out.
    TimedOut {
        /// The limit, in seconds.
        secs: u64,
    },
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Refused by policy: an allow-list, a confinement, a disabled tool
    /// (`tool_denied`).
    Denied,
    /// Arguments of the wrong shape (`schema_violation`): every violation as
    /// `path: what`.
    InvalidArguments(Vec<String>),
    /// The caller may not do this (`unauthorized`).
    Unauthorized,
    /// No tool of that name (`unknown_tool`).
    UnknownTool,
    /// No skill of that name (`unknown_skill`).
    UnknownSkill,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused { kind, message } => match kind {
                Refusal::Denied => write!(f, "denied: {message}"),
                Refusal::Unauthorized => write!(f, "unauthorized: {message}"),
                Refusal::UnknownTool => write!(f, "unknown tool `{message}`"),
                Refusal::UnknownSkill => write!(f, "unknown skill `{message}`"),
                Refusal::InvalidArguments(_) => f.write_str(message),
            },
            Self::Failed {
                message,
                source: Some(source),
            } => write!(f, "{message}: {source}"),
            Self::Failed {
                message,
                source: None,
            } => f.write_str(message),
            Self::Cancelled => f.write_str("cancelled"),
            Self::TimedOut { secs } => write!(f, "timed out after {secs} s"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Failed {
                source: Some(source),
                ..
            } => Some(source),
            _ => None,
        }
    }
}

impl Error {
    /// Refused by policy (`tool_denied`): an allow-list, a confinement.
    pub fn denied(why: impl Into<String>) -> Self {
        Self::refused(Refusal::Denied, why)
    }

    /// Refused: the caller may not do this (`unauthorized`).
    pub fn unauthorized(why: impl Into<String>) -> Self {
        Self::refused(Refusal::Unauthorized, why)
    }

    /// Refused: the argument at `path` is wrong (`schema_violation`).
    pub fn invalid_argument(path: &str, what: impl std::fmt::Display) -> Self {
        Self::invalid_arguments(vec![format!("{path}: {what}")])
    }

    /// Refused: the arguments are wrong, each violation as `path: what`
    /// (`schema_violation`).
    pub fn invalid_arguments(violations: Vec<String>) -> Self {
        let message = match violations.as_slice() {
            [one] => format!("invalid arguments: {one}"),
            many => format!(
                "invalid arguments ({} problems): {}",
                many.len(),
                many.join("; ")
            ),
        };
        Self::refused(Refusal::InvalidArguments(violations), message)
    }

    /// Refused: no tool named `name` (`unknown_tool`).
    pub fn unknown_tool(name: impl Into<String>) -> Self {
        Self::refused(Refusal::UnknownTool, name)
    }

    fn refused(kind: Refusal, message: impl Into<String>) -> Self {
        Self::Refused {
            kind,
            message: message.into(),
        }
    }

    /// The call ran and failed.
    pub fn failed(why: impl Into<String>) -> Self {
        Self::Failed {
            message: why.into(),
            source: None,
        }
    }

    /// The call ran and failed while `context`, because of `error` (kept as
    /// the source).
    pub fn failed_because(
        context: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Failed {
            message: context.into(),
            source: Some(Cause::new(error)),
        }
    }

    /// An I/O operation failed while the call ran.
    pub fn io(context: impl Into<String>, error: std::io::Error) -> Self {
        Self::failed_because(context, error)
    }

    /// Whether the call was refused before anything ran, rather than failed.
    pub fn is_refusal(&self) -> bool {
        matches!(self, Self::Refused { .. })
    }

    /// The wire code a plugin served by [`serve`](crate::serve) answers with.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Refused { kind, .. } => match kind {
                Refusal::Denied => ErrorCode::TOOL_DENIED,
                Refusal::InvalidArguments(_) => ErrorCode::SCHEMA_VIOLATION,
                Refusal::Unauthorized => ErrorCode::UNAUTHORIZED,
                Refusal::UnknownTool => ErrorCode::UNKNOWN_TOOL,
                Refusal::UnknownSkill => ErrorCode::UNKNOWN_SKILL,
            },
            Self::Failed { .. } => ErrorCode::TOOL_ERROR,
            Self::Cancelled => ErrorCode::CANCELLED,
            Self::TimedOut { .. } => ErrorCode::TIMEOUT,
        }
    }

    /// The `error` message refusing request `req_id` (for a refusal; a
    /// failure is answered in the result instead).
    pub fn to_error_message(&self, req_id: &str) -> ErrorMessage {
        let mut msg = ErrorMessage::new(req_id, self.code(), self.to_string());
        if let Self::Refused { kind, .. } = self {
            // Refused input does not get better by retrying.
            msg.retryable = false;
            if let Refusal::InvalidArguments(violations) = kind {
                msg.detail.insert(
                    "violations".into(),
                    serde_json::Value::from(violations.clone()),
                );
            }
        }
        msg
    }
}

/// The underlying error of a failure, shared by clones of it; two causes
/// are equal when they say the same.
#[derive(Debug, Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Wraps `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

/// The result of a plugin's call.
pub type Result<T, E = Error> = std::result::Result<T, E>;
