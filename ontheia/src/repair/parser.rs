//! The repairing parser.

/// Why a text could not be repaired.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot repair JSON at character {position}: {message}")]
pub struct RepairError {
    /// Character offset.
    pub position: usize,
    /// What went wrong.
    pub message: String,
}

pub(super) fn repair(text: &str) -> Result<String, RepairError> {
    Err(RepairError { position: 0, message: format!("todo {}", text.len()) })
}
