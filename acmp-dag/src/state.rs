//! Task states (Layer 2 §2) and their one-way transitions.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The state of a task.
///
/// ```text
/// pending → running → completed | failed | cancelled
/// pending → failed | cancelled          (never started)
/// ```
///
/// Transitions are one-way; `completed`, `failed` and `cancelled` are terminal. A task fails
/// from `pending` when it cannot be invoked at all (no provider for its capability, or its
/// input reference does not resolve against the actual upstream output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Created, not yet started by a provider.
    Pending,
    /// Invoked; the provider is executing.
    Running,
    /// Finished successfully (`acmp/result`).
    Completed,
    /// Failed (`acmp/error`, timeout, panic, unresolvable input, no provider).
    Failed,
    /// Cancelled (`acmp/cancel`), directly or because something upstream failed.
    Cancelled,
}

impl TaskState {
    /// Whether the state is terminal.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// Whether `self → next` is an allowed transition.
    pub fn can_transition_to(self, next: Self) -> bool {
        matches!(
            (self, next),
            (
                Self::Pending,
                Self::Running | Self::Failed | Self::Cancelled
            ) | (
                Self::Running,
                Self::Completed | Self::Failed | Self::Cancelled
            )
        )
    }

    /// The wire name: `pending`, `running`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::TaskState::{self, *};

    #[test]
    fn transitions_are_one_way() {
        let all = [Pending, Running, Completed, Failed, Cancelled];
        for from in all {
            for to in all {
                let allowed = from.can_transition_to(to);
                if from.is_terminal() || to == Pending || from == to {
                    assert!(!allowed, "{from} → {to}");
                }
                if to == Completed && from != Running {
                    assert!(!allowed, "{from} → {to}");
                }
            }
        }
        assert!(Pending.can_transition_to(Running));
        assert!(Running.can_transition_to(Cancelled));
        assert_eq!(
            serde_json::to_string(&TaskState::Cancelled).unwrap(),
            "\"cancelled\""
        );
    }
}
