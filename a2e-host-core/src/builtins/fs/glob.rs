//! `glob`: the paths under a directory matching a glob pattern, relative to
//! the root, sorted, at most `files.max_results` of them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{MAX_WALK_ENTRIES, blocking, glob_matcher, walk};
use crate::builtins::hints::ToolHints;
use crate::builtins::paths::{relative_to, resolve};
use crate::builtins::tool::{Builtin, Done, Env, Spec};
use crate::error::{HostError, HostResult};
use crate::plugin::CallContext;

/// `glob`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobArgs {
    /// Glob, e.g. `**/*.rs`, matched against paths relative to `path`.
    pub pattern: String,
    /// Directory to search (default: the root).
    pub path: Option<String>,
}

/// `glob`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GlobOutput {
    /// Matching paths relative to the root, sorted
    pub matches: Vec<String>,
    /// Matching paths, returned or not
    #[schemars(extend("x-unlisted" = true))]
    pub total: usize,
}

/// The `glob` tool.
pub(crate) struct Glob;

impl Builtin for Glob {
    const SPEC: Spec = Spec {
        name: "glob",
        description: "Find workspace paths matching a glob pattern (`*` within a directory, `**` across directories)",
        tags: &["fs", "search"],
        idempotent: true,
        hints: ToolHints::new("Find files").read_only(),
    };

    type Args = GlobArgs;
    type Output = GlobOutput;

    /// The pattern is matched against paths relative to `path` (default: the
    /// root); `*` stays within one directory, `**` crosses directories.
    async fn run(env: &Env, args: GlobArgs, ctx: &CallContext) -> HostResult<Done<GlobOutput>> {
        let matcher = glob_matcher("pattern", &args.pattern)?;
        let path = args.path.as_deref().unwrap_or("");
        let resolved = resolve(&env.root, path)?;
        let max = env.files.max_results;
        let cancel = ctx.cancel.clone();
        blocking(move || {
            let rel = resolved.relative();
            if !resolved.path.is_dir() {
                return Err(HostError::Tool(format!("`{rel}` is not a directory")));
            }
            let mut found: Vec<String> = Vec::new();
            let mut budget = MAX_WALK_ENTRIES;
            walk(&resolved.path, &cancel, &mut budget, &mut |p, _| {
                if let Ok(under_base) = p.strip_prefix(&resolved.path)
                    && matcher.is_match(under_base)
                {
                    found.push(relative_to(&resolved.root, p));
                }
                Ok(())
            })?;
            found.sort();
            let total = found.len();
            let truncated = total > max;
            found.truncate(max);
            let data = GlobOutput {
                matches: found,
                total,
            };
            Ok(Done::new(data)
                .summary(format!("{total} paths match"))
                .truncated(truncated))
        })
        .await
    }
}
