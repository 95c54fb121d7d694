//! Tidy check: no crate holds more than [`MAX_SHARE_PERCENT`] of the
//! workspace's source lines (the `.rs` files under each member's `src/`), so
//! that a crate grows into layers of its own before it becomes the house
//! every change passes through.

use std::path::Path;

/// The largest share of the workspace's source lines one crate may hold.
pub const MAX_SHARE_PERCENT: usize = 12;

/// One crate's size.
#[derive(Debug, PartialEq, Eq)]
pub struct Size {
    /// The package's name.
    pub name: String,
    /// Lines of the `.rs` files under its `src/`.
    pub lines: usize,
}

/// The source lines of every member of the workspace, largest first.
pub fn sizes(metadata: &serde_json::Value) -> Result<Vec<Size>, String> {
    let packages = metadata["packages"]
        .as_array()
        .ok_or_else(|| "cargo metadata has no `packages`".to_owned())?;
    let mut sizes = Vec::new();
    for package in packages {
        let (Some(name), Some(manifest)) =
            (package["name"].as_str(), package["manifest_path"].as_str())
        else {
            continue;
        };
        let src = Path::new(manifest)
            .parent()
            .map(|dir| dir.join("src"))
            .unwrap_or_default();
        let mut lines = 0;
        for file in crate::rust_source::all_rust_files(&src) {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            lines += text.lines().count();
        }
        sizes.push(Size {
            name: name.to_owned(),
            lines,
        });
    }
    sizes.sort_by(|a, b| b.lines.cmp(&a.lines).then_with(|| a.name.cmp(&b.name)));
    Ok(sizes)
}

/// The crates above [`MAX_SHARE_PERCENT`] of `sizes`' total, with their
/// share in tenths of a percent.
pub fn too_large(sizes: &[Size]) -> Vec<(&Size, usize)> {
    let total: usize = sizes.iter().map(|s| s.lines).sum();
    sizes
        .iter()
        .filter(|s| s.lines * 100 > total * MAX_SHARE_PERCENT)
        .map(|s| (s, (s.lines * 1000).checked_div(total).unwrap_or(0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(name: &str, lines: usize) -> Size {
        Size {
            name: name.to_owned(),
            lines,
        }
    }

    #[test]
    fn a_crate_above_the_share_is_found() {
        let mut sizes: Vec<Size> = (0..10).map(|i| size(&format!("c{i}"), 87)).collect();
        sizes.push(size("big", 130));
        let found = too_large(&sizes);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0.name, "big");
        assert_eq!(found[0].1, 130);
        let mut sizes: Vec<Size> = (0..10).map(|i| size(&format!("c{i}"), 88)).collect();
        sizes.push(size("exactly", 120));
        assert!(too_large(&sizes).is_empty());
    }

    #[test]
    fn the_workspace_has_no_crate_above_the_share() {
        let metadata = crate::workspace_metadata().unwrap();
        let sizes = sizes(&metadata).unwrap();
        assert!(sizes.iter().any(|s| s.name == "a2e-host" && s.lines > 0));
        let found = too_large(&sizes);
        assert!(found.is_empty(), "{found:?}");
    }
}
