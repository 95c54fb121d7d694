//! A task's input: a literal `{type, data}` or a reference `{source: {…}}` (Layer 2 §1.1).

use serde::de::Error as _;
use serde::ser::SerializeStruct as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::Payload;

/// A task's input: either concrete data or a pointer to other tasks' outputs.
///
/// On the wire the two forms are told apart by their keys: a literal has `type` and `data`, a
/// reference has `source` and no `type`. The forms are mutually exclusive: an object with
/// both, or with neither, is rejected when decoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "RawInput")]
pub enum TaskInput {
    /// Concrete data, `{type, data}`.
    Literal(Payload),
    /// A reference to other tasks' outputs, `{source: {…}}`, resolved by the orchestrator.
    Reference(InputReference),
}

impl TaskInput {
    /// A literal input of the given type.
    pub fn literal(kind: impl Into<String>, data: impl Into<Value>) -> Self {
        Self::Literal(Payload::new(kind, data))
    }

    /// A literal `text` input.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Literal(Payload::text(text))
    }

    /// A reference to the whole output of one task.
    pub fn from_task(task_id: impl Into<String>) -> Self {
        Self::Reference(InputReference {
            source: Source {
                tasks: SourceTasks::One(task_id.into()),
                field: None,
            },
        })
    }

    /// A reference to a field of one task's output, e.g. `data.chunks[0]`.
    pub fn from_task_field(task_id: impl Into<String>, field: impl Into<String>) -> Self {
        Self::Reference(InputReference {
            source: Source {
                tasks: SourceTasks::One(task_id.into()),
                field: Some(field.into()),
            },
        })
    }

    /// A reference to the outputs of several tasks, passed as an ordered array.
    pub fn from_tasks<I, S>(task_ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Reference(InputReference {
            source: Source {
                tasks: SourceTasks::Many(task_ids.into_iter().map(Into::into).collect()),
                field: None,
            },
        })
    }

    /// The reference, if this input is one.
    pub fn as_reference(&self) -> Option<&InputReference> {
        match self {
            Self::Reference(r) => Some(r),
            Self::Literal(_) => None,
        }
    }
}

/// An input reference, `{"source": {…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InputReference {
    /// Which tasks' outputs, and which part of them.
    pub source: Source,
}

/// The `source` of an input reference: `from_task` or `from_tasks` (exactly one), and an
/// optional `field` path.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// `from_task` (one task) or `from_tasks` (several, in order).
    pub tasks: SourceTasks,
    /// Path into the referenced output, e.g. `data.chunks[0]`; `None` passes the whole
    /// `{type, data}` output. Checked against the path grammar by validation.
    pub field: Option<String>,
}

/// The referenced task(s) of a [`Source`].
#[derive(Debug, Clone, PartialEq)]
pub enum SourceTasks {
    /// `from_task`: one task's output.
    One(String),
    /// `from_tasks`: several tasks' outputs, passed as an ordered array.
    Many(Vec<String>),
}

impl SourceTasks {
    /// The referenced task ids, in order.
    pub fn ids(&self) -> &[String] {
        match self {
            Self::One(id) => std::slice::from_ref(id),
            Self::Many(ids) => ids,
        }
    }

    /// The wire field naming the `i`-th referenced task: `input.source.from_task` or
    /// `input.source.from_tasks[i]`.
    pub fn field_name(&self, i: usize) -> String {
        match self {
            Self::One(_) => "input.source.from_task".to_owned(),
            Self::Many(_) => format!("input.source.from_tasks[{i}]"),
        }
    }
}

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 1 + usize::from(self.field.is_some());
        let mut s = serializer.serialize_struct("Source", len)?;
        match &self.tasks {
            SourceTasks::One(id) => s.serialize_field("from_task", id)?,
            SourceTasks::Many(ids) => s.serialize_field("from_tasks", ids)?,
        }
        if let Some(field) = &self.field {
            s.serialize_field("field", field)?;
        }
        s.end()
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct RawSource {
            from_task: Option<String>,
            from_tasks: Option<Vec<String>>,
            field: Option<String>,
        }
        let raw = RawSource::deserialize(deserializer)?;
        let tasks = match (raw.from_task, raw.from_tasks) {
            (Some(_), Some(_)) => {
                return Err(D::Error::custom(
                    "`from_task` and `from_tasks` are mutually exclusive: give one of them",
                ));
            }
            (None, None) => {
                return Err(D::Error::custom(
                    "a source needs `from_task` (one task) or `from_tasks` (several tasks)",
                ));
            }
            (Some(one), None) => SourceTasks::One(one),
            (None, Some(many)) => SourceTasks::Many(many),
        };
        Ok(Self {
            tasks,
            field: raw.field,
        })
    }
}

/// Every key either form may carry, to tell the forms apart with a precise error.
#[derive(Deserialize)]
struct RawInput {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default, deserialize_with = "present")]
    data: Option<Value>,
    source: Option<Source>,
}

/// Tells a present `null` (`Some(Null)`) from an absent key (`None`, via `default`).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl TryFrom<RawInput> for TaskInput {
    type Error = String;

    fn try_from(raw: RawInput) -> Result<Self, Self::Error> {
        match (raw.kind, raw.data, raw.source) {
            (None, None, Some(source)) => Ok(Self::Reference(InputReference { source })),
            (Some(kind), Some(data), None) => Ok(Self::Literal(Payload { kind, data })),
            (kind, data, Some(_)) => Err(format!(
                "an input is a literal (`type`, `data`) or a reference (`source`), not both: \
                 found `source` with {}",
                match (kind.is_some(), data.is_some()) {
                    (true, true) => "`type` and `data`",
                    (true, false) => "`type`",
                    _ => "`data`",
                }
            )),
            (Some(_), None, None) => Err("literal input without `data`".to_owned()),
            (None, Some(_), None) => Err("literal input without `type`".to_owned()),
            (None, None, None) => {
                Err("an input needs `type` and `data` (literal) or `source` (reference)".to_owned())
            }
        }
    }
}

#[cfg(feature = "schema")]
mod schema_impls {
    use std::borrow::Cow;

    use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

    use super::{InputReference, Source, TaskInput};
    use crate::Payload;

    impl JsonSchema for TaskInput {
        fn schema_name() -> Cow<'static, str> {
            "TaskInput".into()
        }

        fn json_schema(generator: &mut SchemaGenerator) -> Schema {
            let literal = generator.subschema_for::<Payload>();
            let reference = generator.subschema_for::<InputReference>();
            json_schema!({
                "description": "A literal input `{type, data}` or an input reference `{source}`; never both.",
                "oneOf": [
                    { "allOf": [literal], "not": { "required": ["source"] } },
                    { "allOf": [reference], "not": { "anyOf": [{ "required": ["type"] }, { "required": ["data"] }] } }
                ]
            })
        }
    }

    impl JsonSchema for Source {
        fn schema_name() -> Cow<'static, str> {
            "Source".into()
        }

        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "The tasks an input reference points to (`from_task` or `from_tasks`, exactly one) and an optional path into their output.",
                "type": "object",
                "properties": {
                    "from_task": { "type": "string", "description": "One task's output." },
                    "from_tasks": {
                        "type": "array",
                        "items": { "type": "string" },
                        "description": "Several tasks' outputs, passed as an ordered array."
                    },
                    "field": {
                        "type": "string",
                        "description": "Path into the referenced `{type, data}` output: `data`, `data.foo.bar`, `data.items[0].name`."
                    }
                },
                "oneOf": [
                    { "required": ["from_task"] },
                    { "required": ["from_tasks"] }
                ]
            })
        }
    }
}
