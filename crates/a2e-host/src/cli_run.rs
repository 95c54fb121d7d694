//! `a2e run` and `a2e validate`: chain files on the embedded host.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::host::Host;

/// Runs a chain file; prints the final `chain/resp` on stdout.
pub async fn run_file(
    host: &Arc<Host>,
    file: &Path,
    input: Option<&str>,
    events: bool,
) -> ExitCode {
    let _ = (host, file, input, events);
    ExitCode::from(2)
}

/// Validates a chain file.
pub fn validate_file(host: &Arc<Host>, file: &Path) -> ExitCode {
    let _ = (host, file);
    ExitCode::from(2)
}
