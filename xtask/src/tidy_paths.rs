//! Tidy check: every file path that `ARCHITECTURE.md` names exists, so the
//! map cannot drift from the tree it describes.
//!
//! A path is a code span (in backticks, outside fenced blocks) with no
//! whitespace that ends in a known file extension (`.rs`, `.md`, `.toml`, …)
//! or in `/` (a folder); a `::item` after a file (`host/calls/mod.rs::supervise`)
//! is dropped. Spans with `/` and neither (`chain/attach`, a wire type;
//! `transport/net`, a module) are not paths, nor are patterns (`{`, `*`).
//!
//! A path with a `/` resolves from the workspace root, from a crate's folder
//! or from a crate's `src/` (`a2e-host/src/mcp/mod.rs`, `tests/host.rs`,
//! `session/outbound.rs`). A bare file name resolves at the workspace root
//! (`BENCHMARKS.md`), or (`decode.rs`) when a file of that name lies anywhere
//! in the crate its table row names (the code map's first cell) or, outside
//! such a row, in any crate.

use std::path::{Path, PathBuf};

/// The file the check reads, relative to the workspace root.
pub const DOC: &str = "ARCHITECTURE.md";

/// Extensions that make a code span a file path.
const EXTENSIONS: &[&str] = &[
    "rs", "md", "toml", "json", "yaml", "yml", "lock", "txt", "sh", "py", "ts", "js", "html",
    "css", "sql", "svg",
];

/// Folders never searched for a bare file name: builds and history.
const SKIPPED_DIRS: &[&str] = &["target", ".git", "node_modules"];

/// One path the document names.
#[derive(Debug, PartialEq, Eq)]
pub struct Named {
    /// Its 1-based line.
    pub line: usize,
    /// The path as written, without a trailing `::item`.
    pub path: String,
    /// The first cell of the table row it stands in, if it stands in one
    /// (the code map's crate).
    pub row: Option<String>,
}

/// The path a code span names, if it names one (see the module doc).
fn path_of(span: &str) -> Option<&str> {
    if span.is_empty()
        || span.contains("://")
        || span
            .chars()
            .any(|c| c.is_whitespace() || "{}*<>|$".contains(c))
    {
        return None;
    }
    let path = span.split("::").next().unwrap_or(span);
    if path.ends_with('/') && path.len() > 1 {
        return Some(path);
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, extension) = name.rsplit_once('.')?;
    (!stem.is_empty() && EXTENSIONS.contains(&extension)).then_some(path)
}

/// The code spans of one line, in order.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// Every path `text` (a Markdown document) names, with its line and row.
pub fn named_paths(text: &str) -> Vec<Named> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let row = line
            .trim_start()
            .strip_prefix('|')
            .and_then(|rest| rest.split('|').next())
            .and_then(|cell| code_spans(cell).first().map(|s| (*s).to_owned()));
        for span in code_spans(line) {
            if let Some(path) = path_of(span) {
                found.push(Named {
                    line: index + 1,
                    path: path.to_owned(),
                    row: row.clone(),
                });
            }
        }
    }
    found
}

/// The workspace's crates: folders directly under `root` with a `Cargo.toml`.
fn crates(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    found.sort();
    found
}

/// Whether a file named `name` lies anywhere under `dir`.
fn holds_file(dir: &Path, name: &str) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                let skipped = path
                    .file_name()
                    .is_some_and(|n| SKIPPED_DIRS.iter().any(|s| n == *s));
                if !skipped {
                    stack.push(path);
                }
            } else if path.file_name().is_some_and(|n| n == name) {
                return true;
            }
        }
    }
    false
}

/// Whether `named` exists in the workspace at `root` (see the module doc).
pub fn resolves(root: &Path, named: &Named) -> bool {
    let all = crates(root);
    let path = named.path.trim_end_matches('/');
    if named.path.contains('/') {
        return root.join(path).exists()
            || all
                .iter()
                .any(|c| c.join(path).exists() || c.join("src").join(path).exists());
    }
    let row_crate = named
        .row
        .as_deref()
        .map(|r| root.join(r))
        .filter(|dir| all.contains(dir));
    if root.join(path).is_file() {
        return true;
    }
    match row_crate {
        Some(dir) => holds_file(&dir, path),
        None => all.iter().any(|c| holds_file(c, path)),
    }
}

/// The paths of `ARCHITECTURE.md` under `root` that do not exist, each as
/// `line: path`.
pub fn missing(root: &Path) -> Result<Vec<String>, String> {
    let text =
        std::fs::read_to_string(root.join(DOC)).map_err(|e| format!("cannot read {DOC}: {e}"))?;
    Ok(named_paths(&text)
        .into_iter()
        .filter(|named| !resolves(root, named))
        .map(|named| format!("{}: `{}`", named.line, named.path))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<String> {
        named_paths(text).into_iter().map(|n| n.path).collect()
    }

    #[test]
    fn every_path_in_architecture_md_exists() {
        let stale = missing(&crate::root()).unwrap();
        assert!(
            stale.is_empty(),
            "paths in {DOC} that do not exist:\n{}",
            stale.join("\n")
        );
    }

    #[test]
    fn files_and_folders_are_paths_and_wire_types_and_commands_are_not() {
        let text = "The map (`a2e-host/src/mcp/mod.rs`, `decode.rs`, `schemas/`, \
                    `host/calls/mod.rs::supervise`) beside `chain/attach`, \
                    `transport/{http,ws}`, `cargo xtask tidy`, `HostError::code`, \
                    `a2e_proto::now`, `https://example.org/a.md` and `0.6`.";
        assert_eq!(
            paths(text),
            [
                "a2e-host/src/mcp/mod.rs",
                "decode.rs",
                "schemas/",
                "host/calls/mod.rs",
            ]
        );
    }

    #[test]
    fn fenced_blocks_are_skipped_and_rows_name_their_crate() {
        let text = "```\n`inside.rs`\n```\n| `a2e-proto` | wire types (`core.rs`) |\n";
        let found = named_paths(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].line, 4);
        assert_eq!(found[0].path, "core.rs");
        assert_eq!(found[0].row.as_deref(), Some("a2e-proto"));
    }

    #[test]
    fn paths_resolve_from_the_root_a_crate_or_its_src() {
        let root = crate::root();
        let at = |path: &str, row: Option<&str>| Named {
            line: 1,
            path: path.to_owned(),
            row: row.map(str::to_owned),
        };
        // From the root, from a crate's folder, from a crate's `src/`.
        assert!(resolves(&root, &at("a2e-chain/src/hash.rs", None)));
        assert!(resolves(&root, &at("tests/host.rs", None)));
        assert!(resolves(&root, &at("session/dispatch.rs", None)));
        assert!(resolves(&root, &at("examples/", None)));
        // Files that moved or never were.
        assert!(!resolves(&root, &at("a2e-host/src/allocator.rs", None)));
        assert!(!resolves(&root, &at("a2e-host/src/main.rs", None)));
        assert!(!resolves(&root, &at("session/no_such_file.rs", None)));
        // A bare name is looked for in its row's crate only.
        assert!(resolves(&root, &at("hash.rs", Some("a2e-chain"))));
        assert!(!resolves(&root, &at("hash.rs", Some("a2e-proto"))));
        assert!(resolves(&root, &at("hash.rs", None)));
        assert!(resolves(&root, &at("BENCHMARKS.md", Some("a2e-chain"))));
        assert!(!resolves(&root, &at("no_such_file.rs", None)));
    }
}
