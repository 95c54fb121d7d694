//! The DAG format (Layer 2 §3): tasks and the edges between them.

use serde::{Deserialize, Serialize};

use crate::Task;

/// A job decomposed into tasks with explicit data dependencies.
///
/// A DAG is a buyer-side orchestration plan, never sent on the wire: providers only see
/// single tasks. Build one in code or decode it with [`crate::decode::from_json_str`], then
/// check it with [`crate::ValidatedDag::new`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Dag {
    /// Unique id of the DAG (`dag_<random>`).
    pub dag_id: String,
    /// The tasks.
    pub tasks: Vec<Task>,
    /// The data dependencies; may be empty (a batch of independent tasks).
    pub edges: Vec<Edge>,
}

impl Dag {
    /// An empty DAG.
    pub fn new(dag_id: impl Into<String>) -> Self {
        Self {
            dag_id: dag_id.into(),
            tasks: Vec::new(),
            edges: Vec::new(),
        }
    }

    /// Adds a task.
    #[must_use]
    pub fn with_task(mut self, task: Task) -> Self {
        self.tasks.push(task);
        self
    }

    /// Adds an edge.
    #[must_use]
    pub fn with_edge(mut self, edge: Edge) -> Self {
        self.edges.push(edge);
        self
    }
}

/// An unconditional data dependency: `to` consumes the output of `from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Edge {
    /// `task_id` of the upstream task.
    pub from: String,
    /// `task_id` of the downstream task.
    pub to: String,
    /// Whether `to` may start on partial output of `from` (Layer 2 §5); `false` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_eligible: Option<bool>,
}

impl Edge {
    /// A plain edge.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Self {
        Self {
            from: from.into(),
            to: to.into(),
            stream_eligible: None,
        }
    }

    /// An edge with `stream_eligible: true`.
    pub fn streaming(from: impl Into<String>, to: impl Into<String>) -> Self {
        Self {
            stream_eligible: Some(true),
            ..Self::new(from, to)
        }
    }

    /// Whether the edge is marked `stream_eligible`.
    pub fn is_stream_eligible(&self) -> bool {
        self.stream_eligible.unwrap_or(false)
    }
}
