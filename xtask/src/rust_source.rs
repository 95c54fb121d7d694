//! Reading a crate's Rust sources, as the tidy checks do: its files, and a
//! file's code without its test module.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir` but the test modules (`tests.rs`), sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = all_rust_files(dir);
    files.retain(|path| path.file_name().is_some_and(|n| n != "tests.rs"));
    files
}

/// Every `.rs` file under `dir`, sorted.
pub fn all_rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The code of a file without its `#[cfg(test)]` module: tests may reach anywhere.
pub fn without_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => text.get(..at).unwrap_or(text),
        None => text,
    }
}
