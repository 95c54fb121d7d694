//! `read_file`: the bytes of a file from `offset`, up to `limit` and
//! `files.read_max_bytes`, as text (cut back to a whole UTF-8 sequence when
//! the cap cuts) or base64.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{blocking, io_error};
use crate::builtins::hints::ToolHints;
use crate::builtins::paths::{Resolved, resolve};
use crate::builtins::text::{self, Encoding};
use crate::builtins::tool::{Builtin, Done, Env, Spec};
use crate::error::{HostError, HostResult};
use crate::plugin::CallContext;

/// `read_file`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    /// File path, relative to the workspace root.
    pub path: String,
    /// Byte offset to start at (default 0).
    pub offset: Option<u64>,
    /// Most bytes to read (capped by the host).
    pub limit: Option<u64>,
    /// `text` (default: UTF-8, invalid bytes replaced and labelled utf-8-lossy) or `base64` (exact bytes).
    pub encoding: Option<Encoding>,
}

/// `read_file`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ReadFileOutput {
    /// The path read, relative to the root
    #[schemars(extend("x-unlisted" = true))]
    pub path: String,
    /// The bytes read, as text or base64
    pub content: String,
    /// File size in bytes
    pub size: u64,
    /// Where reading started
    pub offset: u64,
    /// Bytes returned
    pub bytes_read: usize,
    /// utf-8, utf-8-lossy or base64
    pub encoding: &'static str,
    /// The file goes on past the bytes returned
    #[schemars(extend("x-unlisted" = true))]
    pub truncated: bool,
}

/// The `read_file` tool.
pub(crate) struct ReadFile;

impl Builtin for ReadFile {
    const SPEC: Spec = Spec {
        name: "read_file",
        description: "Read a file in the workspace: text (or base64), from a byte offset, up to a byte limit",
        tags: &["fs", "read"],
        idempotent: true,
        hints: ToolHints::new("Read file").read_only(),
    };

    type Args = ReadFileArgs;
    type Output = ReadFileOutput;

    async fn run(
        env: &Env,
        args: ReadFileArgs,
        _ctx: &CallContext,
    ) -> HostResult<Done<ReadFileOutput>> {
        let offset = args.offset.unwrap_or(0);
        let base64 = args.encoding == Some(Encoding::Base64);
        let cap = env.files.read_max_bytes;
        let max = args
            .limit
            .map_or(cap, |l| usize::try_from(l).map_or(cap, |l| l.min(cap)));
        let resolved = resolve(&env.root, &args.path)?;
        blocking(move || read_blocking(&resolved, offset, max, base64)).await
    }
}

fn read_blocking(
    resolved: &Resolved,
    offset: u64,
    max: usize,
    base64: bool,
) -> HostResult<Done<ReadFileOutput>> {
    let rel = resolved.relative();
    let meta = fs::metadata(&resolved.path).map_err(|e| io_error("read", &rel, &e))?;
    if meta.is_dir() {
        return Err(HostError::Tool(format!(
            "`{rel}` is a directory (use list_dir)"
        )));
    }
    let size = meta.len();
    let mut file = File::open(&resolved.path).map_err(|e| io_error("read", &rel, &e))?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| io_error("read", &rel, &e))?;
    let want = u64::try_from(max).unwrap_or(u64::MAX);
    let mut buf = Vec::with_capacity(
        max.min(usize::try_from(size.saturating_sub(offset)).unwrap_or(max)) + 1,
    );
    file.take(want.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| io_error("read", &rel, &e))?;
    let more = buf.len() > max;
    buf.truncate(max);
    if more && !base64 {
        let keep = text::utf8_cut(&buf);
        if keep > 0 {
            buf.truncate(keep);
        }
    }
    let (content, encoding) = text::encode(&buf, base64);
    let summary = format!(
        "read {} of {size} bytes of {rel} from offset {offset}",
        buf.len()
    );
    let data = ReadFileOutput {
        path: rel,
        content,
        size,
        offset,
        bytes_read: buf.len(),
        encoding,
        truncated: more,
    };
    Ok(Done::new(data).summary(summary).truncated(more))
}
