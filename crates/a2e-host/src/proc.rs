//! The proc capability: processes per session, each in its own process group.

use std::sync::Arc;

use a2e_proto::{
    ErrorCode, Message, ProcKillRequest, ProcKillResponse, ProcSpawnRequest, ProcSpawnResponse,
    ProcStatusRequest, ProcStatusResponse, ProcWriteRequest, ProcWriteResponse,
};
use tokio::sync::mpsc;

use crate::config::HostConfig;
use crate::error::{HostError, HostResult};

/// Processes of every session.
pub struct ProcManager {
    config: Arc<HostConfig>,
}

fn unavailable() -> HostError {
    HostError::Proc {
        code: ErrorCode::UNKNOWN_PROC,
        message: "process support is not available".into(),
    }
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

    /// `proc/spawn`.
    pub async fn spawn(
        &self,
        _session_id: &str,
        _req: &ProcSpawnRequest,
        _out: mpsc::Sender<Message>,
    ) -> HostResult<ProcSpawnResponse> {
        Err(unavailable())
    }

    /// `proc/write`.
    pub async fn write(
        &self,
        _session_id: &str,
        _req: &ProcWriteRequest,
    ) -> HostResult<ProcWriteResponse> {
        Err(unavailable())
    }

    /// `proc/kill`.
    pub async fn kill(
        &self,
        _session_id: &str,
        _req: &ProcKillRequest,
    ) -> HostResult<ProcKillResponse> {
        Err(unavailable())
    }

    /// `proc/status`.
    pub fn status(
        &self,
        _session_id: &str,
        _req: &ProcStatusRequest,
    ) -> HostResult<ProcStatusResponse> {
        Err(unavailable())
    }
}
