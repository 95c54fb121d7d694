//! `cargo xtask schema [--check]`: the committed JSON Schemas of every wire type.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Every schema file the code defines: path relative to the root → contents.
fn expected() -> Result<BTreeMap<PathBuf, String>, String> {
    let mut files = BTreeMap::new();
    let mut add = |path: PathBuf, schema: &serde_json::Value| -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(schema).map_err(|e| e.to_string())?;
        text.push('\n');
        files.insert(path, text);
        Ok(())
    };
    for (wire_type, schema) in a2e_proto::schema::message_schemas() {
        add(
            PathBuf::from("schemas/a2e").join(a2e_proto::schema::file_name(wire_type)),
            &schema,
        )?;
    }
    for (wire_type, schema) in a2e_proto::schema::extension_schemas() {
        add(
            PathBuf::from("schemas/a2e/ext").join(a2e_proto::schema::file_name(wire_type)),
            &schema,
        )?;
    }
    for (name, schema) in a2e_proto::schema::model_schemas() {
        add(
            PathBuf::from(format!("schemas/a2e/models/{name}.json")),
            &schema,
        )?;
    }
    for (stem, schema) in extra_schemas() {
        add(PathBuf::from(format!("schemas/acmp/{stem}.json")), &schema)?;
    }
    for (name, schema) in a2a_proto::schema::schemas() {
        add(PathBuf::from(format!("schemas/a2a/{name}.json")), &schema)?;
    }
    add(
        PathBuf::from("schemas/ontheia/chain.json"),
        &ontheia::schema::document_schema(),
    )?;
    Ok(files)
}

fn extra_schemas() -> Vec<(&'static str, serde_json::Value)> {
    acmp_dag::schema::schemas()
}

/// Files under `schemas/` that the code no longer defines.
fn stale(expected: &BTreeMap<PathBuf, String>) -> Vec<PathBuf> {
    let root = crate::root();
    let mut found = Vec::new();
    let mut dirs = vec![root.join("schemas")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(rel) = path.strip_prefix(&root)
                && !expected.contains_key(rel)
            {
                found.push(rel.to_path_buf());
            }
        }
    }
    found.sort();
    found
}

/// Writes the schemas, or (with `check`) fails when the committed ones differ.
pub fn run(check: bool) -> Result<(), String> {
    let root = crate::root();
    let files = expected()?;
    let mut drift = Vec::new();
    for (rel, text) in &files {
        let path = root.join(rel);
        let current = std::fs::read_to_string(&path).ok();
        if current.as_deref() == Some(text.as_str()) {
            continue;
        }
        if check {
            drift.push(format!(
                "{} is {}",
                rel.display(),
                if current.is_some() {
                    "out of date"
                } else {
                    "missing"
                }
            ));
        } else {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("wrote {}", rel.display());
        }
    }
    for rel in stale(&files) {
        if check {
            drift.push(format!("{} is no longer generated", rel.display()));
        } else {
            std::fs::remove_file(root.join(&rel)).map_err(|e| format!("{}: {e}", rel.display()))?;
            eprintln!("removed {}", rel.display());
        }
    }
    if drift.is_empty() {
        eprintln!("{} schema files up to date", files.len());
        Ok(())
    } else {
        Err(format!(
            "schemas drifted from the code:\n  {}\nrun `cargo xtask schema` and commit the result",
            drift.join("\n  ")
        ))
    }
}
