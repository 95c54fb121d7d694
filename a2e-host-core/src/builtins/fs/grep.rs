//! `grep`: the lines matching a regular expression in the files under a
//! directory (or in one file). Binary files (a NUL in their first 8 KiB) are
//! skipped. `glob` filters files: a pattern with `/` is matched against the
//! path relative to `path`, one without against the file name.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use regex::RegexBuilder;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{MAX_WALK_ENTRIES, blocking, glob_matcher, io_error, walk};
use crate::builtins::hints::ToolHints;
use crate::builtins::paths::{relative_to, resolve};
use crate::builtins::tool::{Builtin, Done, Env, Spec};
use crate::error::{HostError, HostResult};
use crate::plugin::CallContext;

/// Bytes looked at to decide whether a file is binary (it is when they hold a NUL).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Longest matched line returned; longer ones are cut.
const MAX_MATCH_TEXT_BYTES: usize = 1000;

/// `grep`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// Regular expression (Rust regex syntax).
    pub pattern: String,
    /// File or directory to search (default: the root).
    pub path: Option<String>,
    /// Only files matching this glob (by name, or by relative path when it has a `/`).
    pub glob: Option<String>,
    /// Most matching lines to return (capped by the host).
    pub max_matches: Option<u64>,
    /// Match case-insensitively (default false).
    pub ignore_case: Option<bool>,
}

/// `grep`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GrepOutput {
    /// {path, line, text} of each matching line
    pub matches: Vec<GrepMatch>,
    /// Text files searched
    #[schemars(extend("x-unlisted" = true))]
    pub files_searched: usize,
}

/// One matching line.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GrepMatch {
    /// The file, relative to the root
    pub path: String,
    /// The line's number, from 1
    pub line: u64,
    /// The line, cut at a length
    pub text: String,
}

/// The `grep` tool.
pub(crate) struct Grep;

impl Builtin for Grep {
    const SPEC: Spec = Spec {
        name: "grep",
        description: "Search workspace files for lines matching a regular expression",
        tags: &["fs", "search"],
        idempotent: true,
        hints: ToolHints::new("Search file contents").read_only(),
    };

    type Args = GrepArgs;
    type Output = GrepOutput;

    async fn run(env: &Env, args: GrepArgs, ctx: &CallContext) -> HostResult<Done<GrepOutput>> {
        let ignore_case = args.ignore_case.unwrap_or(false);
        let regex = RegexBuilder::new(&args.pattern)
            .case_insensitive(ignore_case)
            .build()
            .map_err(|e| HostError::schema(vec![format!("pattern: {e}")]))?;
        let filter = match args.glob.as_deref() {
            Some(g) => Some((glob_matcher("glob", g)?, g.contains('/'))),
            None => None,
        };
        let cap = env.files.max_results;
        let max = args
            .max_matches
            .and_then(|m| usize::try_from(m).ok())
            .map_or(cap, |m| m.min(cap));
        let path = args.path.as_deref().unwrap_or("");
        let resolved = resolve(&env.root, path)?;
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
            let summary = format!(
                "{} matching lines in {} files searched",
                state.matches.len(),
                state.files
            );
            let data = GrepOutput {
                matches: state.matches,
                files_searched: state.files,
            };
            Ok(Done::new(data).summary(summary).truncated(state.truncated))
        })
        .await
    }
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
    matches: Vec<GrepMatch>,
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
            state.matches.push(GrepMatch {
                path: rel.clone(),
                line: number,
                text: text.to_owned(),
            });
        }
    }
}
