//! Turning an input reference into the literal input a provider receives.

use serde_json::{Map, Value};

use crate::orchestrator::outcome::ResolveError;
use crate::path::FieldPath;
use crate::validate::PlannedInput;
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
            let mut items = Vec::with_capacity(srcs.len());
            for &src in srcs {
                let out = get(src)?;
                items.push(match path {
                    Some(path) => select(src, out, path)?.clone(),
                    None => {
                        let mut whole = Map::with_capacity(2);
                        whole.insert("type".to_owned(), Value::String(out.kind.clone()));
                        whole.insert("data".to_owned(), out.data.clone());
                        Value::Object(whole)
                    }
                });
            }
            Ok(Payload::json(Value::Array(items)))
        }
    }
}
