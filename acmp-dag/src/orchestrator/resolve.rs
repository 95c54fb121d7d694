//! Turning an input reference into the literal input a provider receives.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::orchestrator::outcome::ResolveError;
use crate::path::FieldPath;
use crate::validate::{PlannedInput, sources_in};
use crate::{Payload, Task, TaskInput};

/// Resolves a task's input. `output(i)` is the output of completed task `i`, `name(i)` its
/// id.
///
/// * literal: as is;
/// * `from_task`, no `field` or `field: "data"`: the upstream output `{type, data}` itself;
/// * `from_task` with a deeper `field`: the value found, typed `text` if it is a JSON
///   string and `json` otherwise;
/// * `from_tasks`: a `json` array in `from_tasks` order, of each whole output object
///   `{type, data}` without `field`, or of the value `field` selects in each.
pub(crate) fn resolve<'a>(
    task: &Task,
    planned: &PlannedInput,
    sources: &[u32],
    output: impl Fn(u32) -> Option<&'a Payload>,
    name: impl Fn(u32) -> String,
) -> Result<Payload, ResolveError> {
    let get = |src: u32| {
        output(src).ok_or_else(|| ResolveError::NoOutput {
            source_task: name(src),
        })
    };
    let select = |src: u32, out: &'a Payload, path: &FieldPath| {
        path.evaluate(out).map_err(|error| ResolveError::Path {
            source_task: name(src),
            error,
        })
    };
    match planned {
        PlannedInput::Literal => match &task.input {
            TaskInput::Literal(payload) => Ok(payload.clone()),
            TaskInput::Reference(_) => Err(ResolveError::NoOutput {
                source_task: String::new(),
            }),
        },
        PlannedInput::One { src, path } => {
            let out = get(*src)?;
            match path {
                Some(path) if !path.is_whole_data() => {
                    let value = select(*src, out, path)?;
                    let kind = if value.is_string() { "text" } else { "json" };
                    Ok(Payload::new(kind, value.clone()))
                }
                _ => Ok(out.clone()),
            }
        }
        PlannedInput::Many { srcs, path } => {
            let srcs = sources_in(sources, srcs);
            let mut items = Vec::with_capacity(srcs.len());
            for &src in srcs {
                let out = get(src)?;
                items.push(match path {
                    Some(path) => select(src, out, path)?.clone(),
                    None => whole_output(out),
                });
            }
            Ok(Payload::json(Value::Array(items)))
        }
    }
}

/// `{"type": …, "data": …}` of an output, as a JSON object.
fn whole_output(out: &Payload) -> Value {
    // Cloning a ready-made object skips hashing its two keys again.
    static TEMPLATE: OnceLock<Map<String, Value>> = OnceLock::new();
    let mut whole = TEMPLATE
        .get_or_init(|| {
            let mut m = Map::with_capacity(2);
            m.insert("type".to_owned(), Value::Null);
            m.insert("data".to_owned(), Value::Null);
            m
        })
        .clone();
    for (key, value) in whole.iter_mut() {
        *value = match key.as_str() {
            "type" => Value::String(out.kind.clone()),
            _ => out.data.clone(),
        };
    }
    Value::Object(whole)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn whole_outputs_keep_type_then_data() {
        let out = Payload::json(json!({"a": [1, 2]}));
        let whole = whole_output(&out);
        assert_eq!(whole, json!({"type": "json", "data": {"a": [1, 2]}}));
        assert_eq!(
            serde_json::to_string(&whole).unwrap(),
            r#"{"type":"json","data":{"a":[1,2]}}"#
        );
    }
}
