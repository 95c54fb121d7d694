//! Errors: validation (before a run), steps (during one) and runs.

use std::fmt;

/// Which rule a document broke. `as_str` is a stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// The text is not JSON (or nests deeper than the parser allows).
    Syntax,
    /// The text is larger than [`crate::limits::MAX_DOCUMENT_BYTES`].
    DocumentSize,
    /// A value has the wrong JSON type.
    Type,
    /// A required field is missing.
    Required,
    /// A key the format does not have.
    UnknownField,
    /// A string is too short or too long.
    Length,
    /// An array has too few or too many items.
    Items,
    /// A number is out of range.
    Range,
    /// A number that must be a whole number is not.
    Integer,
    /// A value outside its set (step type, HTTP method, `output_format`).
    Enum,
    /// Two steps share an id.
    DuplicateId,
    /// A step id that is reserved (`input`, `output`).
    ReservedId,
    /// An edge names a step that does not exist.
    UnknownStep,
    /// The edges form a cycle.
    Cycle,
    /// The longest edge path is longer than 50 steps.
    PathLength,
    /// A field this step type does not take (`steps` on an `llm`, …).
    NotAllowed,
    /// Control steps nest deeper than [`crate::limits::MAX_NESTING`], or the
    /// document holds more than [`crate::limits::MAX_TOTAL_STEPS`] steps.
    Nesting,
}

impl Rule {
    /// The stable code of this rule.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Syntax => "syntax",
            Rule::DocumentSize => "document_size",
            Rule::Type => "type",
            Rule::Required => "required",
            Rule::UnknownField => "unknown_field",
            Rule::Length => "length",
            Rule::Items => "items",
            Rule::Range => "range",
            Rule::Integer => "integer",
            Rule::Enum => "enum",
            Rule::DuplicateId => "duplicate_id",
            Rule::ReservedId => "reserved_id",
            Rule::UnknownStep => "unknown_step",
            Rule::Cycle => "cycle",
            Rule::PathLength => "path_length",
            Rule::NotAllowed => "not_allowed",
            Rule::Nesting => "nesting",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing wrong with a document: where (a JSON path such as
/// `$.steps[2].params.top_k`), which rule, and a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message} ({rule})")]
pub struct ValidationError {
    /// The JSON path of the offending value.
    pub path: String,
    /// The rule it breaks.
    pub rule: Rule,
    /// What is wrong, for people.
    pub message: String,
}

/// Every error found in a document, in document order (never empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl ValidationErrors {
    /// The errors.
    pub fn errors(&self) -> &[ValidationError] {
        &self.0
    }

    /// Whether some error is at `path` with `rule`.
    pub fn has(&self, path: &str, rule: Rule) -> bool {
        self.0.iter().any(|e| e.path == path && e.rule == rule)
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid chain document: ")?;
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// Why a backend call failed. The message becomes the step's `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The host does not provide this step kind.
    #[error("{0} steps are not supported by this host")]
    Unsupported(&'static str),
    /// The host refused (policy, approval, unknown server, …).
    #[error("denied: {0}")]
    Denied(String),
    /// The call failed.
    #[error("{0}")]
    Failed(String),
}

impl BackendError {
    /// A plain failure with a message.
    pub fn failed(message: impl Into<String>) -> BackendError {
        BackendError::Failed(message.into())
    }
}

/// Why a step failed; stored as the step's `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// A backend call failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A template grew past the expansion bound.
    #[error("template expansion exceeds {0} bytes")]
    ExpansionTooLarge(usize),
    /// A value nests deeper than the template bound.
    #[error("value nests deeper than {0} levels")]
    TooDeep(usize),
    /// A parameter is missing or has the wrong type at run time.
    #[error("{0}")]
    Param(String),
    /// A retry ran out of attempts.
    #[error("retry failed after {attempts} attempts: {last}")]
    RetryExhausted {
        /// Attempts made.
        attempts: u64,
        /// The last attempt's failure.
        last: String,
    },
    /// Agent delegation went deeper than allowed.
    #[error("maximum agent delegation depth ({0}) reached")]
    AgentDepth(usize),
    /// A sub-chain from the host is invalid.
    #[error("agent chain is invalid: {0}")]
    InvalidSubChain(String),
    /// A journaled step's recorded failure (on resume), or its observer's
    /// refusal.
    #[error("{0}")]
    Journaled(String),
    /// A sub-step failed inside a retry attempt.
    #[error("step '{step}' failed: {error}")]
    SubStep {
        /// The failing sub-step.
        step: String,
        /// Its error.
        error: String,
    },
    /// A sub-step produced warnings and `fail_on_warnings` is set.
    #[error("step '{step}' warned: {warning}")]
    Warning {
        /// The warning sub-step.
        step: String,
        /// Its first warning.
        warning: String,
    },
    /// `success_when` did not hold after an attempt.
    #[error("success condition '{0}' not met")]
    SuccessNotMet(String),
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// Why a whole run stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The document is invalid; nothing ran.
    #[error(transparent)]
    Invalid(#[from] ValidationErrors),
    /// The caller cancelled the run.
    #[error("run cancelled")]
    Cancelled,
}
