//! Where the fixtures live and how they are read.
//!
//! Fixtures are files under `fixtures/` of this crate, named by their path
//! relative to it without `.json` (`spec/tools/call_req`). They are read at
//! run time, so adding a file adds a check without a rebuild.

use std::path::{Path, PathBuf};

/// The folder holding every fixture.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The folder holding the committed insta snapshots.
pub fn snapshots_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("snapshots")
}

/// One fixture file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixture {
    /// Path below `fixtures/` without `.json`, with `/` separators.
    pub name: String,
    /// The file's bytes, exactly.
    pub bytes: Vec<u8>,
}

impl Fixture {
    /// The fixture's JSON text without the file's final newline: the wire line.
    pub fn line(&self) -> &[u8] {
        self.bytes.strip_suffix(b"\n").unwrap_or(&self.bytes)
    }
}

/// Every `*.json` file below `fixtures/<group>/`, sorted by name.
pub fn load_group(group: &str) -> Result<Vec<Fixture>, String> {
    let root = fixtures_dir();
    let mut files = Vec::new();
    collect(&root.join(group), &mut files)?;
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let bytes =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let relative = path.strip_prefix(&root).unwrap_or(&path).with_extension("");
            let name = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            Ok(Fixture { name, bytes })
        })
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "json") {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads `fixtures/<file>` as JSON.
pub fn load_json(file: &str) -> Result<serde_json::Value, String> {
    let path = fixtures_dir().join(file);
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{file} is not valid JSON: {e}"))
}
