//! What a step leaves behind: `{output, data, result, error, status}`.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::path::get_path;

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// It ran to the end.
    Success,
    /// It failed; `error` says why.
    Failed,
}

impl StepStatus {
    /// `success` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Success => "success",
            StepStatus::Failed => "failed",
        }
    }
}

/// The stored result of one step, readable as `${steps.<id>.<field>…}`.
/// A skipped step stores nothing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepResult {
    /// The text answer (an object for a `transform` that produced JSON),
    /// truncated as configured; `null` for control steps.
    pub output: Value,
    /// The parsed JSON (extracted and repaired from model output), or the
    /// step's own record (`executedBranchIndex`, `iterations`, …).
    pub data: Value,
    /// `tool`: the whole MCP result; `rest_call`: `{status, ok, body, data}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `success` or `failed`.
    pub status: StepStatus,
    /// Inputs from the step's `inputs` and from edges with `map`.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub inputs: Map<String, Value>,
    /// Warnings (a tool's `isError`, a non-2xx HTTP status, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl StepResult {
    /// A successful result with `output` and `data`.
    pub fn success(output: Value, data: Value) -> StepResult {
        StepResult {
            output,
            data,
            result: None,
            error: None,
            status: StepStatus::Success,
            inputs: Map::new(),
            warnings: Vec::new(),
        }
    }

    /// A failed result.
    pub fn failed(error: String) -> StepResult {
        StepResult {
            output: Value::Null,
            data: Value::Null,
            result: None,
            error: Some(error),
            status: StepStatus::Failed,
            inputs: Map::new(),
            warnings: Vec::new(),
        }
    }

    /// One top-level field as a value.
    pub fn field(&self, name: &str) -> Option<Cow<'_, Value>> {
        Some(match name {
            "output" => Cow::Borrowed(&self.output),
            "data" => Cow::Borrowed(&self.data),
            "result" => Cow::Borrowed(self.result.as_ref()?),
            "error" => Cow::Owned(Value::String(self.error.clone()?)),
            "status" => Cow::Owned(Value::String(self.status.as_str().to_owned())),
            "inputs" => Cow::Owned(Value::Object(self.inputs.clone())),
            "warnings" => Cow::Owned(Value::Array(
                self.warnings.iter().cloned().map(Value::String).collect(),
            )),
            _ => return None,
        })
    }

    /// The value at a dot path (`data.user.name`, `output.hits`, …).
    pub fn lookup(&self, path: &str) -> Option<Cow<'_, Value>> {
        let (head, rest) = match path.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (path, None),
        };
        let root = self.field(head)?;
        match (root, rest) {
            (root, None) => Some(root),
            (Cow::Borrowed(v), Some(r)) => get_path(v, r),
            (Cow::Owned(v), Some(r)) => get_path(&v, r).map(|c| Cow::Owned(c.into_owned())),
        }
    }

    /// The whole result as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
