//! `write_file`: an atomic write (a temporary file in the same directory,
//! then renamed over the target), keeping an existing file's permissions.

use std::fs;
use std::io::Write;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{blocking, io_error};
use crate::builtins::hints::ToolHints;
use crate::builtins::paths::{Resolved, relative_to, resolve};
use crate::builtins::tool::{Builtin, Done, Env, Spec};
use crate::error::{HostError, HostResult};
use crate::plugin::CallContext;

/// `write_file`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// File path, relative to the workspace root.
    pub path: String,
    /// The complete new content (UTF-8 text).
    pub content: String,
    /// Create missing parent directories (default false).
    pub create_dirs: Option<bool>,
}

/// `write_file`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct WriteFileOutput {
    /// The path written, relative to the root
    pub path: String,
    /// Bytes written
    pub bytes_written: usize,
    /// The file did not exist before
    #[schemars(extend("x-unlisted" = true))]
    pub created: bool,
}

/// The `write_file` tool.
pub(crate) struct WriteFile;

impl Builtin for WriteFile {
    const SPEC: Spec = Spec {
        name: "write_file",
        description: "Write a file in the workspace atomically (replaces it whole)",
        tags: &["fs", "write"],
        idempotent: true,
        // Replaces the file whole.
        hints: ToolHints::new("Write file").destructive(),
    };

    type Args = WriteFileArgs;
    type Output = WriteFileOutput;

    async fn run(
        env: &Env,
        args: WriteFileArgs,
        _ctx: &CallContext,
    ) -> HostResult<Done<WriteFileOutput>> {
        let content = args.content;
        let create_dirs = args.create_dirs.unwrap_or(false);
        if content.len() > env.files.write_max_bytes {
            return Err(HostError::Denied(format!(
                "content is {} bytes, over the write limit of {} bytes",
                content.len(),
                env.files.write_max_bytes
            )));
        }
        let resolved = resolve(&env.root, &args.path)?;
        blocking(move || write_blocking(&resolved, content.as_bytes(), create_dirs)).await
    }
}

fn write_blocking(
    resolved: &Resolved,
    content: &[u8],
    create_dirs: bool,
) -> HostResult<Done<WriteFileOutput>> {
    let rel = resolved.relative();
    let target = &resolved.path;
    if target.is_dir() {
        return Err(HostError::Tool(format!("`{rel}` is a directory")));
    }
    let parent = target
        .parent()
        .filter(|p| p.starts_with(&resolved.root))
        .ok_or_else(|| HostError::Tool(format!("`{rel}` has no parent directory")))?;
    if !parent.is_dir() {
        if create_dirs {
            fs::create_dir_all(parent).map_err(|e| io_error("create directories for", &rel, &e))?;
        } else {
            return Err(HostError::Tool(format!(
                "directory `{}` does not exist (set create_dirs to create it)",
                relative_to(&resolved.root, parent)
            )));
        }
    }
    let previous = fs::metadata(target).ok().map(|m| m.permissions());
    let created = previous.is_none();
    let mut tmp = tempfile::Builder::new()
        .prefix(".a2e-write-")
        .suffix(".tmp")
        .tempfile_in(parent)
        .map_err(|e| io_error("write", &rel, &e))?;
    let permissions = previous.unwrap_or_else(|| {
        use std::os::unix::fs::PermissionsExt;
        fs::Permissions::from_mode(0o644)
    });
    tmp.write_all(content)
        .and_then(|()| tmp.as_file().set_permissions(permissions))
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io_error("write", &rel, &e))?;
    // On failure the temporary file is removed when `tmp` drops.
    tmp.persist(target)
        .map_err(|e| io_error("write", &rel, &e.error))?;
    let summary = format!("wrote {} bytes to {rel}", content.len());
    let data = WriteFileOutput {
        path: rel,
        bytes_written: content.len(),
        created,
    };
    Ok(Done::new(data).summary(summary))
}
