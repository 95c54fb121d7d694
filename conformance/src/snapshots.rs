//! The committed insta snapshots of every re-encoded fixture, read back
//! without insta so that [`crate::run_all`] can check them outside `cargo test`.

use serde_json::Value;

use crate::fixtures::snapshots_dir;

/// The snapshot name of a fixture: its name with `/` written `__`.
pub fn snapshot_name(fixture_name: &str) -> String {
    fixture_name.replace('/', "__")
}

/// The body of an insta `.snap` file: everything after its `---` header.
pub fn snap_body(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    rest.get(end + "\n---\n".len()..)
}

/// The committed JSON snapshot called `name`, or `None` when there is none.
pub fn committed(name: &str) -> Result<Option<Value>, String> {
    let path = snapshots_dir().join(format!("{name}.snap"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read snapshot {name}: {e}")),
    };
    let body = snap_body(&text).ok_or_else(|| format!("snapshot {name} has no insta header"))?;
    serde_json::from_str(body)
        .map(Some)
        .map_err(|e| format!("snapshot {name} is not JSON: {e}"))
}

/// Compares `actual` with the committed snapshot `name`; `Err` says how they differ.
pub fn check(name: &str, actual: &Value) -> Result<(), String> {
    match committed(name)? {
        None => Err(format!(
            "no committed snapshot `{name}` (run `cargo insta test -p conformance --review`)"
        )),
        Some(expected) => {
            let mut out = Vec::new();
            crate::json::diff(&expected, actual, "$", &mut out);
            if out.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "differs from snapshot `{name}`: {}",
                    out.join("; ")
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_follows_the_header() {
        let text = "---\nsource: tests/x.rs\nexpression: v\n---\n{\n  \"a\": 1\n}\n";
        assert_eq!(snap_body(text), Some("{\n  \"a\": 1\n}\n"));
        assert_eq!(snap_body("{}"), None);
    }
}
