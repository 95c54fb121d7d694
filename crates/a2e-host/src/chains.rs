//! The chain plugin: runs `chain/req` on the a2e-chain engine with the host's
//! tools, skills and processes as node runners.

use std::sync::Arc;

use a2e_proto::{ChainRequest, ChainResponse, Message};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{HostError, HostResult};
use crate::host::Host;

/// Runs a chain request; `Err` is a refusal (invalid chain).
pub async fn run_request(
    host: &Arc<Host>,
    session_id: &str,
    req: &ChainRequest,
    stream: Option<mpsc::Sender<Message>>,
    cancel: &CancellationToken,
) -> HostResult<ChainResponse> {
    let _ = (host, session_id, req, stream, cancel);
    Err(HostError::Runtime("chains are not available yet".into()))
}

/// Progress callback: (nodes settled, total, node id).
pub type ProgressFn = Box<dyn FnMut(usize, usize, &str) + Send>;

/// Runs a chain for host-internal callers (chain skills, the CLI) reporting
/// progress; `Err` is a refusal (invalid chain).
pub async fn run_chain(
    host: &Arc<Host>,
    session_id: &str,
    req: &ChainRequest,
    progress: ProgressFn,
    cancel: &CancellationToken,
) -> HostResult<ChainResponse> {
    let _ = (host, session_id, req, progress, cancel);
    Err(HostError::Runtime("chains are not available yet".into()))
}
