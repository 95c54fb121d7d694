//! What validation reports: violated rules (errors) and warnings.

use std::fmt;

use crate::path::PathError;

/// Which end of an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeEnd {
    /// `from`.
    From,
    /// `to`.
    To,
}

impl fmt::Display for EdgeEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::From => "from",
            Self::To => "to",
        })
    }
}

/// A violated rule: each names the task and field concerned where there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// `dag_id` is empty.
    #[error("dag_id: empty")]
    EmptyDagId,
    /// More tasks than [`crate::ValidationLimits::max_tasks`]; nothing else is checked.
    #[error("tasks: {count} tasks exceed the limit of {max}")]
    TooManyTasks {
        /// Tasks in the DAG.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A task with an empty `task_id`.
    #[error("tasks[{index}].task_id: empty")]
    EmptyTaskId {
        /// Position in `tasks`.
        index: usize,
    },
    /// A task with an empty `capability`.
    #[error("task \"{task_id}\": capability: empty")]
    EmptyCapability {
        /// The task.
        task_id: String,
    },
    /// Two tasks with the same `task_id`.
    #[error("task \"{task_id}\": task_id: duplicate (tasks[{index}] repeats tasks[{first_index}])")]
    DuplicateTaskId {
        /// The repeated id.
        task_id: String,
        /// Position of the first task with the id.
        first_index: usize,
        /// Position of the repeat.
        index: usize,
    },
    /// An edge naming a task that is not in `tasks`.
    #[error("edges[{edge_index}].{end}: unknown task \"{task_id}\"")]
    UnknownEdgeTask {
        /// Position in `edges`.
        edge_index: usize,
        /// Which end names it.
        end: EdgeEnd,
        /// The unknown id.
        task_id: String,
    },
    /// The same `from → to` twice.
    #[error("edges[{edge_index}]: duplicate edge {from} → {to} (first at edges[{first_index}])")]
    DuplicateEdge {
        /// Position of the repeat.
        edge_index: usize,
        /// Position of the first.
        first_index: usize,
        /// Upstream task.
        from: String,
        /// Downstream task.
        to: String,
    },
    /// A cycle; the path starts and ends at the same task.
    #[error("cycle: {}", path.join(" → "))]
    Cycle {
        /// The tasks on the cycle, the first repeated at the end.
        path: Vec<String>,
    },
    /// `from_task` / `from_tasks` names a task that is not in `tasks`.
    #[error("task \"{task_id}\": {field}: unknown task \"{source_task}\"")]
    UnknownSourceTask {
        /// The referencing task.
        task_id: String,
        /// `input.source.from_task` or `input.source.from_tasks[i]`.
        field: String,
        /// The unknown id.
        source_task: String,
    },
    /// `from_task` / `from_tasks` without the matching edge into the referencing task.
    #[error(
        "task \"{task_id}\": {field}: references \"{source_task}\" but there is no edge {source_task} → {task_id}"
    )]
    MissingSourceEdge {
        /// The referencing task.
        task_id: String,
        /// `input.source.from_task` or `input.source.from_tasks[i]`.
        field: String,
        /// The referenced task.
        source_task: String,
    },
    /// `from_tasks: []`.
    #[error("task \"{task_id}\": input.source.from_tasks: empty")]
    EmptyFromTasks {
        /// The referencing task.
        task_id: String,
    },
    /// A `field` outside the path grammar.
    #[error("task \"{task_id}\": input.source.field: {error}")]
    InvalidPath {
        /// The referencing task.
        task_id: String,
        /// The parse error (path, offset, reason).
        error: PathError,
    },
    /// Deeper than [`crate::ValidationLimits::max_depth`].
    #[error("depth {depth} exceeds the limit of {max} (task \"{task_id}\" is at depth {depth})")]
    TooDeep {
        /// The DAG's depth.
        depth: usize,
        /// The limit.
        max: usize,
        /// A task at the deepest level.
        task_id: String,
    },
    /// Broader than [`crate::ValidationLimits::max_breadth`].
    #[error("breadth {breadth} exceeds the limit of {max} ({breadth} tasks at depth {level})")]
    TooBroad {
        /// Tasks at the broadest level.
        breadth: usize,
        /// The limit.
        max: usize,
        /// That level (roots are depth 1).
        level: usize,
    },
}

impl ValidationError {
    /// The task concerned, if the rule is about one task.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            Self::EmptyCapability { task_id }
            | Self::DuplicateTaskId { task_id, .. }
            | Self::UnknownSourceTask { task_id, .. }
            | Self::MissingSourceEdge { task_id, .. }
            | Self::EmptyFromTasks { task_id }
            | Self::InvalidPath { task_id, .. }
            | Self::TooDeep { task_id, .. } => Some(task_id),
            _ => None,
        }
    }

    /// The field concerned, as a path: `capability`, `input.source.from_tasks[1]`,
    /// `edges[3].to`, …
    pub fn field(&self) -> Option<String> {
        Some(match self {
            Self::EmptyDagId => "dag_id".to_owned(),
            Self::TooManyTasks { .. } => "tasks".to_owned(),
            Self::EmptyTaskId { index } => format!("tasks[{index}].task_id"),
            Self::EmptyCapability { .. } => "capability".to_owned(),
            Self::DuplicateTaskId { .. } => "task_id".to_owned(),
            Self::UnknownEdgeTask {
                edge_index, end, ..
            } => format!("edges[{edge_index}].{end}"),
            Self::DuplicateEdge { edge_index, .. } => format!("edges[{edge_index}]"),
            Self::UnknownSourceTask { field, .. } | Self::MissingSourceEdge { field, .. } => {
                field.clone()
            }
            Self::EmptyFromTasks { .. } => "input.source.from_tasks".to_owned(),
            Self::InvalidPath { .. } => "input.source.field".to_owned(),
            Self::Cycle { .. } | Self::TooDeep { .. } | Self::TooBroad { .. } => return None,
        })
    }
}

/// Something legal that will not behave as its author may expect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationWarning {
    /// A `stream_eligible` edge whose downstream selects a sub-field: it will not stream.
    #[error(
        "edges[{edge_index}] {from} → {to}: stream_eligible ignored: task \"{to}\" selects field `{field}`, and a field cannot be evaluated on a partial stream"
    )]
    StreamWithSubField {
        /// Position in `edges`.
        edge_index: usize,
        /// Upstream task.
        from: String,
        /// Downstream task.
        to: String,
        /// The sub-field.
        field: String,
    },
    /// A `stream_eligible` edge into a `from_tasks` aggregation: it will not stream.
    #[error(
        "edges[{edge_index}] {from} → {to}: stream_eligible ignored: task \"{to}\" aggregates several outputs (from_tasks)"
    )]
    StreamIntoAggregation {
        /// Position in `edges`.
        edge_index: usize,
        /// Upstream task.
        from: String,
        /// Downstream task.
        to: String,
    },
    /// A `stream_eligible` edge whose downstream does not take its input from `from`.
    #[error(
        "edges[{edge_index}] {from} → {to}: stream_eligible ignored: task \"{to}\" does not take its input from \"{from}\""
    )]
    StreamWithoutReference {
        /// Position in `edges`.
        edge_index: usize,
        /// Upstream task.
        from: String,
        /// Downstream task.
        to: String,
    },
}

/// The outcome of validating a DAG: every violated rule, and warnings.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
#[error("invalid DAG: {}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct ValidationReport {
    /// Violated rules; empty when the DAG is valid.
    pub errors: Vec<ValidationError>,
    /// Warnings.
    pub warnings: Vec<ValidationWarning>,
}

impl ValidationReport {
    /// Whether no rule is violated.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }
}
