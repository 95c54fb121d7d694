//! Dot paths into JSON values (`data.user.name`, `hits.0.id`): what a
//! template key, a step result's lookup and an edge's source path follow.

use std::borrow::Cow;

use serde_json::Value;

/// Strings longer than this are not parsed as JSON while following a path.
const MAX_PATH_PARSE_BYTES: usize = 1 << 20;

/// Follows a dot path: object keys, array indexes, and into strings that
/// hold JSON. `None` when a segment is missing.
pub fn get_path<'v>(root: &'v Value, path: &str) -> Option<Cow<'v, Value>> {
    let mut current: Cow<'v, Value> = Cow::Borrowed(root);
    for seg in path.split('.') {
        current = match current {
            Cow::Borrowed(v) => step_into_borrowed(v, seg)?,
            Cow::Owned(v) => Cow::Owned(step_into_borrowed(&v, seg)?.into_owned()),
        };
    }
    Some(current)
}

fn step_into_borrowed<'v>(v: &'v Value, seg: &str) -> Option<Cow<'v, Value>> {
    match v {
        Value::Object(m) => m.get(seg).map(Cow::Borrowed),
        Value::Array(items) => seg
            .parse::<usize>()
            .ok()
            .and_then(|i| items.get(i))
            .map(Cow::Borrowed),
        Value::String(s) => {
            let t = s.trim_start();
            if s.len() > MAX_PATH_PARSE_BYTES || !(t.starts_with('{') || t.starts_with('[')) {
                return None;
            }
            let parsed: Value = serde_json::from_str(s).ok()?;
            step_into_borrowed(&parsed, seg).map(|c| Cow::Owned(c.into_owned()))
        }
        _ => None,
    }
}
