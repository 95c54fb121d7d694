//! File tools: `read_file`, `write_file`, `list_dir`, `glob`, `grep`, and
//! what they share.
//!
//! Every path goes through [`super::paths::resolve`]; directory walks never
//! follow symbolic links, so they cannot leave the root either. File system
//! work runs on the blocking pool and stops early when the call is cancelled.

use std::fs::{self, FileType};
use std::io;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use tokio_util::sync::CancellationToken;

use crate::error::{HostError, HostResult};

mod glob;
mod grep;
mod list_dir;
mod read_file;
mod write_file;

pub(crate) use glob::Glob;
pub use glob::GlobArgs;
pub(crate) use grep::Grep;
pub use grep::GrepArgs;
pub(crate) use list_dir::ListDir;
pub use list_dir::ListDirArgs;
pub(crate) use read_file::ReadFile;
pub use read_file::ReadFileArgs;
pub(crate) use write_file::WriteFile;
pub use write_file::WriteFileArgs;

/// Most directory entries a walk visits before giving up.
const MAX_WALK_ENTRIES: usize = 1_000_000;

/// Runs file system work on the blocking pool, off the runtime's threads.
async fn blocking<T, F>(f: F) -> HostResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> HostResult<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| HostError::io("file task failed", e.into()))?
}

/// An I/O failure as a tool error naming the path relative to the root, as
/// the caller knows it.
fn io_error(what: &str, rel: &str, e: &io::Error) -> HostError {
    match e.kind() {
        io::ErrorKind::NotFound => HostError::Tool(format!("`{rel}` does not exist")),
        io::ErrorKind::PermissionDenied => {
            HostError::Tool(format!("cannot {what} `{rel}`: permission denied"))
        }
        _ => HostError::tool_failed(
            format!("cannot {what} `{rel}`"),
            io::Error::new(e.kind(), e.to_string()),
        ),
    }
}

/// Visits every entry under `dir` depth first (entries of a directory in name
/// order), without following symbolic links. `visit` gets the path and its type.
fn walk(
    dir: &Path,
    cancel: &CancellationToken,
    budget: &mut usize,
    visit: &mut dyn FnMut(&Path, &FileType) -> HostResult<()>,
) -> HostResult<()> {
    let Ok(reader) = fs::read_dir(dir) else {
        return Ok(());
    };
    let mut entries: Vec<(PathBuf, FileType)> = reader
        .filter_map(Result::ok)
        .filter_map(|e| e.file_type().ok().map(|ft| (e.path(), ft)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, ft) in entries {
        if cancel.is_cancelled() {
            return Err(HostError::Cancelled);
        }
        if *budget == 0 {
            return Err(HostError::Tool(format!(
                "too many entries to walk (more than {MAX_WALK_ENTRIES}); narrow the path"
            )));
        }
        *budget -= 1;
        visit(&path, &ft)?;
        if ft.is_dir() {
            walk(&path, cancel, budget, visit)?;
        }
    }
    Ok(())
}

/// A glob whose `*` stays within one directory; a bad pattern is a schema
/// violation of `field`.
fn glob_matcher(field: &str, pattern: &str) -> HostResult<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| HostError::schema(vec![format!("{field}: {e}")]))
}
