//! File tools: `read_file`, `write_file`, `list_dir`, `glob`, `grep`, and
//! what they share.
//!
//! Every path goes through [`super::paths::resolve`]; directory walks never
//! follow symbolic links, so they cannot leave the root either. File system
//! work runs on the blocking pool and stops early when the call is cancelled.

use std::fs::{self, File, FileType};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

mod glob;
mod list_dir;
mod read_file;
mod write_file;

pub(crate) use glob::Glob;
pub use glob::GlobArgs;
pub(crate) use list_dir::ListDir;
pub use list_dir::ListDirArgs;
pub(crate) use read_file::ReadFile;
pub use read_file::ReadFileArgs;
use std::path::{Path, PathBuf};
pub(crate) use write_file::WriteFile;
pub use write_file::WriteFileArgs;

use globset::{GlobBuilder, GlobMatcher};
use regex::RegexBuilder;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::*;
use super::paths::{relative_to, resolve};
use crate::config::HostConfig;
use crate::error::{HostError, HostResult};
use crate::plugin::{CallContext, ToolOutput};

/// Bytes looked at to decide whether a file is binary (it is when they hold a NUL).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Longest matched line returned by `grep`; longer ones are cut.
const MAX_MATCH_TEXT_BYTES: usize = 1000;

/// Most directory entries a walk visits before giving up.
const MAX_WALK_ENTRIES: usize = 1_000_000;

async fn blocking<T, F>(f: F) -> HostResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> HostResult<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| HostError::io("file task failed", e.into()))?
}

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

fn glob_matcher(field: &str, pattern: &str) -> HostResult<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| HostError::schema(vec![format!("{field}: {e}")]))
}

fn is_binary(file: &mut File) -> io::Result<bool> {
    let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
    Read::by_ref(file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(head.contains(&0))
}

struct GrepState {
    matches: Vec<Value>,
    max: usize,
    truncated: bool,
    files: usize,
}

fn grep_file(
    path: &Path,
    root: &Path,
    regex: &regex::Regex,
    state: &mut GrepState,
) -> HostResult<()> {
    let Ok(mut file) = File::open(path) else {
        return Ok(());
    };
    if is_binary(&mut file).unwrap_or(true) {
        return Ok(());
    }
    state.files += 1;
    let rel = relative_to(root, path);
    let mut reader = BufReader::new(file);
    let mut buf = Vec::new();
    let mut number = 0u64;
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return Ok(()),
            Ok(_) => {}
        }
        number += 1;
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(['\n', '\r']);
        if regex.is_match(line) {
            if state.matches.len() >= state.max {
                state.truncated = true;
                return Ok(());
            }
            let text = crate::proc::prefix_at_boundary(line, MAX_MATCH_TEXT_BYTES);
            state
                .matches
                .push(json!({"path": rel, "line": number, "text": text}));
        }
    }
}

/// `grep`: `{matches: [{path, line, text}]}` for lines matching a regex, in
/// files under `path` (a directory or one file). Binary files (a NUL in their
/// first 8 KiB) are skipped. `glob` filters files: a pattern with `/` is
/// matched against the path relative to `path`, one without against the file name.
pub(crate) async fn grep(
    config: &HostConfig,
    args: GrepArgs,
    ctx: &CallContext,
) -> HostResult<ToolOutput> {
    let pattern = args.pattern.as_str();
    let ignore_case = args.ignore_case.unwrap_or(false);
    let regex = RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .build()
        .map_err(|e| HostError::schema(vec![format!("pattern: {e}")]))?;
    let filter = match args.glob.as_deref() {
        Some(g) => Some((glob_matcher("glob", g)?, g.contains('/'))),
        None => None,
    };
    let max = args
        .max_matches
        .and_then(|m| usize::try_from(m).ok())
        .map_or(config.files.max_results, |m| {
            m.min(config.files.max_results)
        });
    let path = args.path.as_deref().unwrap_or("");
    let resolved = resolve(&config.root, path)?;
    let cancel = ctx.cancel.clone();
    blocking(move || {
        let mut state = GrepState {
            matches: Vec::new(),
            max,
            truncated: false,
            files: 0,
        };
        let meta = fs::metadata(&resolved.path)
            .map_err(|e| io_error("search", &resolved.relative(), &e))?;
        if meta.is_file() {
            grep_file(&resolved.path, &resolved.root, &regex, &mut state)?;
        } else {
            let mut budget = MAX_WALK_ENTRIES;
            let walked = walk(&resolved.path, &cancel, &mut budget, &mut |p, ft| {
                if !ft.is_file() {
                    return Ok(());
                }
                if let Some((m, by_path)) = &filter {
                    let wanted = if *by_path {
                        p.strip_prefix(&resolved.path).is_ok_and(|r| m.is_match(r))
                    } else {
                        p.file_name().is_some_and(|n| m.is_match(n))
                    };
                    if !wanted {
                        return Ok(());
                    }
                }
                grep_file(p, &resolved.root, &regex, &mut state)?;
                if state.truncated {
                    // Stop the walk: the cap is reached.
                    return Err(HostError::Cancelled);
                }
                Ok(())
            });
            match walked {
                Ok(()) => {}
                Err(HostError::Cancelled) if state.truncated => {}
                Err(e) => return Err(e),
            }
        }
        let count = state.matches.len();
        Ok(ToolOutput {
            data: json!({"matches": state.matches, "files_searched": state.files}),
            summary: Value::String(format!(
                "{count} matching lines in {} files searched",
                state.files
            )),
            truncated: state.truncated,
            exit_code: None,
        })
    })
    .await
}
