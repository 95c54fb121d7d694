//! `list_dir`: the entries of a directory, `{name, kind, size}` each, sorted
//! by name, at most `files.max_results` of them.

use std::fs::{self, FileType};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{blocking, io_error};
use crate::builtins::hints::ToolHints;
use crate::builtins::paths::{Resolved, resolve};
use crate::builtins::tool::{Builtin, Done, Env, Spec};
use crate::error::HostResult;
use crate::plugin::CallContext;

/// `list_dir`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListDirArgs {
    /// Directory, relative to the workspace root (default: the root).
    pub path: Option<String>,
}

/// `list_dir`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListDirOutput {
    /// The directory listed, relative to the root
    #[schemars(extend("x-unlisted" = true))]
    pub path: String,
    /// Entries, sorted by name
    #[schemars(extend("x-list-items" = true))]
    pub entries: Vec<DirEntry>,
    /// Entries in the directory, returned or not
    #[schemars(extend("x-unlisted" = true))]
    pub total: usize,
}

/// One entry of a directory.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DirEntry {
    /// Entry name
    pub name: String,
    /// file, dir, symlink or other
    pub kind: &'static str,
    /// Size in bytes (of the link itself for a symlink)
    pub size: u64,
}

/// The `list_dir` tool.
pub(crate) struct ListDir;

impl Builtin for ListDir {
    const SPEC: Spec = Spec {
        name: "list_dir",
        description: "List a directory of the workspace: name, kind (file, dir, symlink) and size of each entry",
        tags: &["fs"],
        idempotent: true,
        hints: ToolHints::new("List directory").read_only(),
    };

    type Args = ListDirArgs;
    type Output = ListDirOutput;

    async fn run(
        env: &Env,
        args: ListDirArgs,
        _ctx: &CallContext,
    ) -> HostResult<Done<ListDirOutput>> {
        let path = args.path.as_deref().unwrap_or("");
        let max = env.files.max_results;
        let resolved = resolve(&env.root, path)?;
        blocking(move || list_blocking(&resolved, max)).await
    }
}

fn kind_name(ft: &FileType) -> &'static str {
    if ft.is_symlink() {
        "symlink"
    } else if ft.is_dir() {
        "dir"
    } else if ft.is_file() {
        "file"
    } else {
        "other"
    }
}

fn list_blocking(resolved: &Resolved, max: usize) -> HostResult<Done<ListDirOutput>> {
    let rel = resolved.relative();
    let reader = fs::read_dir(&resolved.path).map_err(|e| io_error("list", &rel, &e))?;
    let mut entries: Vec<DirEntry> = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|e| io_error("list", &rel, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // DirEntry::metadata does not follow symbolic links.
        let (kind, size) = match entry.metadata() {
            Ok(m) => (kind_name(&m.file_type()), m.len()),
            Err(_) => ("other", 0),
        };
        entries.push(DirEntry { name, kind, size });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let total = entries.len();
    let truncated = total > max;
    entries.truncate(max);
    let summary = format!("{total} entries in {rel}");
    let data = ListDirOutput {
        path: rel,
        entries,
        total,
    };
    Ok(Done::new(data).summary(summary).truncated(truncated))
}
