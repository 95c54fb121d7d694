//! `a2e run` and `a2e validate` check a chain against the host that
//! `--config` and `--root` describe before anything runs: a node naming a
//! tool or skill the host does not offer, or static arguments that break
//! its schema, is refused (exit 2) with the node, the name and the closest
//! known one. The engine's own validation knows the graph only.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use a2e_document::{Document, parse_document};
use a2e_host::Host;

use super::run::EXIT_INVALID;

/// `None` when the document in `file` may run on `host` (or is not a chain,
/// or does not parse: the command itself then says why); else the exit
/// code, the refusal printed.
pub(crate) async fn refuse(host: &Arc<Host>, file: &Path, input: Option<&str>) -> Option<ExitCode> {
    let text = std::fs::read_to_string(file).ok()?;
    let Ok(Document::Chain(req)) = parse_document(&text, input) else {
        return None;
    };
    // The graph's own errors come first, as the run would give them.
    a2e_host::chains::validate(host, &req).ok()?;
    match a2e_host::chains::check_catalog(host, &req).await {
        Ok(()) => None,
        Err(e) => {
            eprintln!("a2e: {}: {e} ({})", file.display(), e.code());
            Some(ExitCode::from(EXIT_INVALID))
        }
    }
}
