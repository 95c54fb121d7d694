//! Tidy check: every file directly under a crate's `tests/` is compiled. The
//! crates gather their integration tests as modules of one binary
//! (`autotests = false`, one `[[test]]` such as `tests/suite.rs`), so a new
//! `tests/foo.rs` that no target names and no test root declares as a module
//! would never build, and its tests would pass by not running.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `tests/NAME.rs` files that no test target compiles, as paths under `root`.
pub fn orphans(root: &Path) -> Result<Vec<String>, String> {
    let metadata = crate::workspace_metadata()?;
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let Some(manifest) = package["manifest_path"].as_str() else {
            continue;
        };
        let Some(dir) = Path::new(manifest).parent() else {
            continue;
        };
        let roots: Vec<PathBuf> = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.contains(&"test".into()))
            })
            .filter_map(|t| t["src_path"].as_str().map(PathBuf::from))
            .collect();
        for orphan in orphans_in(&dir.join("tests"), &roots) {
            let shown = orphan.strip_prefix(root).unwrap_or(&orphan);
            found.push(shown.display().to_string());
        }
    }
    found.sort();
    Ok(found)
}

/// The files directly under `tests` that are neither one of the test roots
/// `roots` nor declared as a module by one of them.
fn orphans_in(tests: &Path, roots: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(tests) else {
        return Vec::new();
    };
    let mut compiled: BTreeSet<PathBuf> = roots.iter().cloned().collect();
    for root in roots {
        let text = std::fs::read_to_string(root).unwrap_or_default();
        let base = root.parent().unwrap_or(tests);
        compiled.extend(declared_modules(&text).iter().map(|m| base.join(m)));
    }
    let mut orphans: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| !compiled.contains(p))
        .collect();
    orphans.sort();
    orphans
}

/// The files a test root's `mod NAME;` lines name, relative to its directory
/// (`NAME.rs`, or the `#[path = "…"]` just before the declaration).
fn declared_modules(text: &str) -> Vec<String> {
    let mut files = Vec::new();
    let mut path_attr: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("#[path = \"") {
            path_attr = rest.strip_suffix("\"]").map(str::to_owned);
            continue;
        }
        let declared = line
            .strip_prefix("pub ")
            .unwrap_or(line)
            .strip_prefix("mod ")
            .and_then(|rest| rest.strip_suffix(';'));
        if let Some(name) = declared {
            files.push(path_attr.take().unwrap_or_else(|| format!("{name}.rs")));
        } else if !line.starts_with("#[") {
            path_attr = None;
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_read_with_their_path_attributes() {
        let text = "//! doc\n\nmod common;\n#[path = \"a2e_host.rs\"]\nmod host_side;\n\
                    #[cfg(feature = \"ui\")]\nmod ui;\nfn main() {}\nmod inline {\n}\n";
        assert_eq!(
            declared_modules(text),
            ["common.rs", "a2e_host.rs", "ui.rs"]
        );
    }

    #[test]
    fn a_file_no_root_declares_is_an_orphan() {
        let dir = std::env::temp_dir().join(format!("xtask-tidy-tests-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in [
            (
                "suite.rs",
                "mod listed;\n#[path = \"renamed.rs\"]\nmod other;\n",
            ),
            ("listed.rs", ""),
            ("renamed.rs", ""),
            ("alone.rs", ""),
            ("forgotten.rs", ""),
        ] {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let roots = [dir.join("suite.rs"), dir.join("alone.rs")];
        let found = orphans_in(&dir, &roots);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, [dir.join("forgotten.rs")]);
    }
}
