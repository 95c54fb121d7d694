//! Tidy check: no public function of a library crate returns
//! `Result<_, String>`. Errors are types with sources, so that a caller can
//! tell them apart and a wire code is chosen in one place.
//!
//! The command line (`a2e-cli`), the conformance suite (whose check failures
//! are messages for a person) and `xtask` are exempt.

use std::path::Path;

/// Crates that are not libraries for others to call.
const EXEMPT: &[&str] = &["a2e-cli", "conformance", "xtask", "target"];

/// `file:line: signature` of every public function returning
/// `Result<_, String>` in the workspace's library crates.
pub fn string_errors(root: &Path) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    let entries =
        std::fs::read_dir(root).map_err(|e| format!("cannot list {}: {e}", root.display()))?;
    let mut crates: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !EXEMPT.contains(&n))
        })
        .collect();
    crates.sort();
    for krate in crates {
        for path in crate::rust_source::rust_files(&krate.join("src")) {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let shown = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            for (line, signature) in public_string_errors(crate::rust_source::without_tests(&text))
            {
                found.push(format!("{shown}:{line}: {signature}"));
            }
        }
    }
    Ok(found)
}

/// The 1-based line and first line of every `pub fn` / `pub async fn` in
/// `text` whose return type is `Result<…, String>`.
pub fn public_string_errors(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        if !(trimmed.starts_with("pub fn ") || trimmed.starts_with("pub async fn ")) {
            continue;
        }
        // The signature runs to the body's `{` or a trait item's `;`.
        let rest = text.get(start..).unwrap_or_default();
        let end = rest.find(['{', ';']).unwrap_or(rest.len());
        let signature: String = rest
            .get(..end)
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let Some((_, returned)) = signature.rsplit_once("->") else {
            continue;
        };
        let returned = returned.split(" where ").next().unwrap_or_default().trim();
        if returned.starts_with("Result<") && returned.replace(' ', "").ends_with(",String>") {
            let number = text.get(..start).unwrap_or_default().matches('\n').count() + 1;
            found.push((number, trimmed.trim_end().to_owned()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_public_function_of_a_library_returns_a_string_error() {
        let found = string_errors(&crate::root()).unwrap();
        assert!(
            found.is_empty(),
            "public functions returning Result<_, String>:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn string_errors_are_found_across_lines_and_typed_ones_pass() {
        let text = "pub fn a() -> Result<u8, String> {}\n\
                    pub async fn b(\n    x: u8,\n) -> Result<Vec<u8>, String>\nwhere T: X {}\n\
                    pub fn c() -> Result<u8, MyError> {}\n\
                    pub(crate) fn d() -> Result<u8, String> {}\n\
                    pub fn e() -> Result<String, Error> {}\n";
        let found: Vec<usize> = public_string_errors(text)
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(found, [1, 2]);
    }
}
