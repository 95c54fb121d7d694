//! ACMP error codes (-33001 … -33099) and the `acmp/error` object (Layer 1).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An ACMP error code: an open set, so that codes unknown to this crate survive a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// The provider's minimum price exceeds `max_price_cu` (`data` may carry `min_price_cu`).
    pub const BUDGET_EXCEEDED: Self = Self(-33001);
    /// The capability is not supported.
    pub const CAPABILITY_NOT_FOUND: Self = Self(-33002);
    /// `timeout_ms` exceeded, or liveness lost.
    pub const TIMEOUT: Self = Self(-33003);
    /// Cancelled via `acmp/cancel`.
    pub const CANCELLED: Self = Self(-33004);
    /// Escrow invalid, expired or insufficient.
    pub const ESCROW_INVALID: Self = Self(-33005);
    /// The requested proof cannot be produced.
    pub const PROOF_UNSUPPORTED: Self = Self(-33006);
    /// A requested feature (streaming) was not advertised (`data` may carry `feature`).
    pub const FEATURE_UNSUPPORTED: Self = Self(-33007);
    /// Unspecified provider error.
    pub const INTERNAL: Self = Self(-33099);

    /// First code of the range reserved for ACMP.
    pub const RANGE_START: i32 = -33099;
    /// Last code of the range reserved for ACMP.
    pub const RANGE_END: i32 = -33001;

    /// The name of a known code (`timeout`, …), `None` for others.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::BUDGET_EXCEEDED => "budget_exceeded",
            Self::CAPABILITY_NOT_FOUND => "capability_not_found",
            Self::TIMEOUT => "timeout",
            Self::CANCELLED => "cancelled",
            Self::ESCROW_INVALID => "escrow_invalid",
            Self::PROOF_UNSUPPORTED => "proof_unsupported",
            Self::FEATURE_UNSUPPORTED => "feature_unsupported",
            Self::INTERNAL => "internal",
            _ => return None,
        })
    }

    /// Whether the code lies in the ACMP range -33099 … -33001.
    pub fn is_acmp(self) -> bool {
        (Self::RANGE_START..=Self::RANGE_END).contains(&self.0)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} {name}", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

/// The `data` of an `acmp/error`: the task id and any extra fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorData {
    /// The task the error is about.
    pub task_id: String,
    /// Extra fields (`min_price_cu`, `feature`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An `acmp/error`: the JSON-RPC error object a provider answers an `acmp/invoke` with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[error("{message} ({code})")]
pub struct AcmpError {
    /// The error code.
    pub code: ErrorCode,
    /// A human-readable message.
    pub message: String,
    /// The task id and extras (boxed: errors travel in `Result`s and stay small).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<ErrorData>>,
}

impl AcmpError {
    /// An error about a task.
    pub fn new(code: ErrorCode, task_id: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: Some(Box::new(ErrorData {
                task_id: task_id.into(),
                extra: Map::new(),
            })),
        }
    }

    /// Adds an extra `data` field (e.g. `min_price_cu`).
    #[must_use]
    pub fn with_data(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        if let Some(data) = &mut self.data {
            data.extra.insert(key.into(), value.into());
        }
        self
    }

    /// -33001: the provider's minimum price exceeds `max_price_cu`.
    pub fn budget_exceeded(task_id: impl Into<String>, min_price_cu: f64) -> Self {
        Self::new(ErrorCode::BUDGET_EXCEEDED, task_id, "budget exceeded")
            .with_data("min_price_cu", min_price_cu)
    }

    /// -33002: capability not supported.
    pub fn capability_not_found(task_id: impl Into<String>, capability: &str) -> Self {
        Self::new(
            ErrorCode::CAPABILITY_NOT_FOUND,
            task_id,
            format!("capability not found: {capability}"),
        )
    }

    /// -33003: deadline exceeded or liveness lost.
    pub fn timeout(task_id: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorCode::TIMEOUT, task_id, message)
    }

    /// -33004: cancelled via `acmp/cancel`.
    pub fn cancelled(task_id: impl Into<String>) -> Self {
        Self::new(ErrorCode::CANCELLED, task_id, "cancelled")
    }

    /// -33007: a requested feature was not advertised.
    pub fn feature_unsupported(task_id: impl Into<String>, feature: &str) -> Self {
        Self::new(
            ErrorCode::FEATURE_UNSUPPORTED,
            task_id,
            format!("feature not supported: {feature}"),
        )
        .with_data("feature", feature)
    }

    /// -33099: unspecified provider error.
    pub fn internal(task_id: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL, task_id, message)
    }

    /// The task id carried in `data`, if any.
    pub fn task_id(&self) -> Option<&str> {
        self.data.as_ref().map(|d| d.task_id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn codes_have_names_and_unknown_codes_survive() {
        assert_eq!(ErrorCode::TIMEOUT.name(), Some("timeout"));
        assert_eq!(ErrorCode::INTERNAL.to_string(), "-33099 internal");
        assert!(ErrorCode(-33050).is_acmp());
        assert!(!ErrorCode(-32600).is_acmp());
        let e: AcmpError = serde_json::from_value(
            json!({"code": -33042, "message": "new", "data": {"task_id": "t", "x": 1}}),
        )
        .unwrap();
        assert_eq!(e.code, ErrorCode(-33042));
        assert_eq!(e.code.name(), None);
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"code": -33042, "message": "new", "data": {"task_id": "t", "x": 1}})
        );
    }

    #[test]
    fn named_constructors_carry_extras() {
        let e = AcmpError::budget_exceeded("task_1", 0.01);
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"code": -33001, "message": "budget exceeded",
                   "data": {"task_id": "task_1", "min_price_cu": 0.01}})
        );
        assert_eq!(e.task_id(), Some("task_1"));
        assert_eq!(
            AcmpError::feature_unsupported("t", "input_streaming")
                .data
                .unwrap()
                .extra["feature"],
            "input_streaming"
        );
    }
}
