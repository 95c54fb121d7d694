//! The packaging check: every library crate built from its packaged form.
//!
//! `cargo package --workspace` publishes the members into a temporary local
//! registry under `target/package/` and builds each crate against the others'
//! packages. Cargo extracts those packages into `$CARGO_HOME/registry/src/-<hash>/`,
//! where the hash names the registry's path, and reuses an extraction that is
//! already there. Our versions do not change between commits, so a machine that
//! packaged this checkout before would build today's crate against yesterday's
//! sources of its dependencies; and a target directory that built them before
//! holds their compiled forms, which cargo keys by name and version only. Both are
//! removed first for our own crates: cargo extracts and builds them afresh from
//! today's packages (the third-party dependencies stay compiled).

use std::path::PathBuf;

/// Packages the workspace's library crates and verifies each builds alone.
pub fn run() -> Result<(), String> {
    let metadata = crate::workspace_metadata()?;
    let members = members(&metadata)?;
    let removed = clear_stale_extractions(&members) + clear_compiled(&members);
    if removed > 0 {
        eprintln!("xtask: removed {removed} earlier extraction(s) and build(s) of our packages");
    }
    let unpublished = unpublished(&metadata)?;
    let mut args = vec!["package", "--workspace"];
    for name in &unpublished {
        args.extend(["--exclude", name.as_str()]);
    }
    args.extend(["--allow-dirty", "--quiet"]);
    // A packaged crate is built outside the workspace, so the workspace's
    // profiles do not reach it: without this, each would compile with full
    // debug info (a2e-host's library alone 234 MB), gigabytes that only
    // check that it builds.
    crate::cargo_env(&args, &[("CARGO_PROFILE_DEV_DEBUG", "false")])
}

/// `(name, version)` of every workspace member, from `cargo metadata`.
fn members(metadata: &serde_json::Value) -> Result<Vec<(String, String)>, String> {
    Ok(packages(metadata)?
        .iter()
        .filter_map(|p| Some((p["name"].as_str()?.into(), p["version"].as_str()?.into())))
        .collect())
}

/// The members that are not packaged: `publish = false` (xtask, the
/// conformance suite, the test kit, the bench harness), which `cargo
/// metadata` gives as an empty list of registries.
fn unpublished(metadata: &serde_json::Value) -> Result<Vec<String>, String> {
    Ok(packages(metadata)?
        .iter()
        .filter(|p| p["publish"].as_array().is_some_and(Vec::is_empty))
        .filter_map(|p| Some(p["name"].as_str()?.to_owned()))
        .collect())
}

fn packages(metadata: &serde_json::Value) -> Result<&Vec<serde_json::Value>, String> {
    metadata["packages"]
        .as_array()
        .ok_or_else(|| "cargo metadata has no `packages`".to_owned())
}

/// Cargo's home: `$CARGO_HOME`, else `~/.cargo`.
fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
}

/// Removes `<name>-<version>` of each member from every local registry's
/// extraction directory (`registry/src/-<hash>`: local registries have no host
/// name, crates.io's directory is `index.crates.io-<hash>`). Returns how many.
fn clear_stale_extractions(members: &[(String, String)]) -> usize {
    let Some(src) = cargo_home().map(|home| home.join("registry").join("src")) else {
        return 0;
    };
    let Ok(entries) = std::fs::read_dir(&src) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for (name, version) in members {
            let dir = entry.path().join(format!("{name}-{version}"));
            if dir.is_dir() && remove(&dir) {
                removed += 1;
            }
        }
    }
    removed
}

/// Removes `dir`; a failure (a read-only cargo home) is reported and left to
/// cargo, which then works as it would have without this step.
fn remove(dir: &std::path::Path) -> bool {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("xtask: cannot remove {}: {e}", dir.display());
            false
        }
    }
}

/// Removes the debug fingerprints of every member (`.fingerprint/<name>-<hash>`),
/// so that the packaged copies are compiled from their sources; cargo rebuilds
/// the workspace's own copies at their next build. Returns how many. The
/// fingerprints are in the build directory: the target directory, or
/// `CARGO_BUILD_BUILD_DIR` when that is set (the packaged copies' paths do
/// not change between versions, so a stale one would be taken as fresh).
fn clear_compiled(members: &[(String, String)]) -> usize {
    let build_dir = std::env::var_os("CARGO_BUILD_BUILD_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(crate::target_dir);
    let fingerprints = build_dir.join("debug").join(".fingerprint");
    let Ok(entries) = std::fs::read_dir(&fingerprints) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        // `<name>-<16 hex>`: the name is everything before the last dash.
        let Some((name, hash)) = file_name.rsplit_once('-') else {
            continue;
        };
        let ours = members.iter().any(|(member, _)| member == name);
        let hashed = hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        if ours && hashed && remove(&entry.path()) {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unpublished_members_are_the_publish_false_ones() {
        let metadata = crate::workspace_metadata().unwrap();
        let unpublished = unpublished(&metadata).unwrap();
        for name in ["xtask", "conformance", "a2e-test-kit", "a2e-bench"] {
            assert!(unpublished.iter().any(|n| n == name), "{unpublished:?}");
        }
        assert!(!unpublished.iter().any(|n| n == "a2e-host"));
    }
}
