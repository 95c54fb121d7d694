//! Errors: why a chain is refused before it runs ([`ValidationError`]) and why
//! a node failed ([`NodeError`]).

use a2e_proto::ErrorCode;
use serde_json::{Map, Value};

/// Why a chain was refused before anything ran. Each error names the node and
/// the field at fault (an empty node id means the request itself, e.g.
/// `entry_node`) and maps to a wire code via [`ValidationError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// Two nodes share an id.
    #[error("node `{node_id}`: duplicate node_id (first declared at position {first})")]
    DuplicateId {
        /// The repeated id.
        node_id: String,
        /// Index in `nodes` of the first node with this id.
        first: usize,
    },
    /// A field names a node that does not exist.
    #[error("{}: `{field}` names unknown node `{target}`", at(node_id))]
    UnknownNode {
        /// The node holding the reference (empty for `entry_node`).
        node_id: String,
        /// The field, e.g. `next_node` or `input_map.text`.
        field: String,
        /// The unknown id.
        target: String,
    },
    /// A field this kind of node needs is empty.
    #[error("node `{node_id}`: a `{kind}` node needs `{field}`")]
    MissingField {
        /// The node.
        node_id: String,
        /// The missing field.
        field: String,
        /// The node's kind.
        kind: String,
    },
    /// A field this kind of node does not take is set.
    #[error("node `{node_id}`: a `{kind}` node does not take `{field}`")]
    UnexpectedField {
        /// The node.
        node_id: String,
        /// The field that should be empty.
        field: String,
        /// The node's kind.
        kind: String,
    },
    /// The node kind is not one this engine runs.
    #[error("node `{node_id}`: unknown kind `{kind}` (expected skill, tool, proc, branch or map)")]
    UnknownKind {
        /// The node.
        node_id: String,
        /// The kind found.
        kind: String,
    },
    /// A field has a value of the wrong shape or a role it cannot play.
    #[error("{}: `{field}`: {message}", at(node_id))]
    InvalidField {
        /// The node (empty for a request-level field).
        node_id: String,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A JMESPath expression does not compile.
    #[error("node `{node_id}`: `{field}`: JMESPath error in `{expression}`: {message}")]
    Expression {
        /// The node.
        node_id: String,
        /// The field holding the expression.
        field: String,
        /// The expression text.
        expression: String,
        /// The parser's message.
        message: String,
    },
    /// The graph has a cycle; `path` lists it, first node repeated at the end.
    #[error("chain has a cycle: {}", path.join(" -> "))]
    Cycle {
        /// The cycle, e.g. `["a", "b", "a"]`.
        path: Vec<String>,
    },
    /// More nodes than [`crate::ChainConfig::max_nodes`].
    #[error("chain has {count} nodes; the limit is {limit}")]
    TooManyNodes {
        /// Nodes declared.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A map fans out over more items than [`crate::ChainConfig::max_map_items`].
    #[error("node `{node_id}`: `items_path` yields {count} items; the limit is {limit}")]
    MapFanOut {
        /// The map node.
        node_id: String,
        /// Items found.
        count: usize,
        /// The limit.
        limit: usize,
    },
}

fn at(node_id: &str) -> String {
    if node_id.is_empty() {
        "chain".to_owned()
    } else {
        format!("node `{node_id}`")
    }
}

impl ValidationError {
    /// The wire code: `chain_cycle` for cycles, `schema_violation` otherwise.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Cycle { .. } => ErrorCode::CHAIN_CYCLE,
            _ => ErrorCode::SCHEMA_VIOLATION,
        }
    }

    /// The node at fault; empty when the fault is in the request itself.
    /// For a cycle, the first node of the cycle.
    pub fn node_id(&self) -> &str {
        match self {
            Self::DuplicateId { node_id, .. }
            | Self::UnknownNode { node_id, .. }
            | Self::MissingField { node_id, .. }
            | Self::UnexpectedField { node_id, .. }
            | Self::UnknownKind { node_id, .. }
            | Self::InvalidField { node_id, .. }
            | Self::Expression { node_id, .. }
            | Self::MapFanOut { node_id, .. } => node_id,
            Self::Cycle { path } => path.first().map_or("", String::as_str),
            Self::TooManyNodes { .. } => "",
        }
    }

    /// The field at fault (`node_id`, `next_node`, `input_map.text`, …);
    /// `nodes` for a cycle or too many nodes.
    pub fn field(&self) -> &str {
        match self {
            Self::DuplicateId { .. } => "node_id",
            Self::UnknownKind { .. } => "kind",
            Self::MapFanOut { .. } => "items_path",
            Self::UnknownNode { field, .. }
            | Self::MissingField { field, .. }
            | Self::UnexpectedField { field, .. }
            | Self::InvalidField { field, .. }
            | Self::Expression { field, .. } => field,
            Self::Cycle { .. } | Self::TooManyNodes { .. } => "nodes",
        }
    }

    /// The `detail` object of a wire `error` message:
    /// `{"node_id": …, "field": …}` plus `"cycle": [...]` for a cycle.
    pub fn detail(&self) -> Map<String, Value> {
        let mut detail = Map::new();
        detail.insert("node_id".into(), Value::from(self.node_id()));
        detail.insert("field".into(), Value::from(self.field()));
        if let Self::Cycle { path } = self {
            detail.insert("cycle".into(), Value::from(path.clone()));
        }
        detail
    }
}

/// A node's failure, as a runner reports it or as the engine records it
/// (timeout, panic, cancellation, a bad expression result).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct NodeError {
    /// Wire code, e.g. `tool_error`, `skill_error`, `timeout`.
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
}

impl NodeError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// A `tool_error`.
    pub fn tool(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::TOOL_ERROR, message)
    }

    /// A `skill_error`.
    pub fn skill(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::SKILL_ERROR, message)
    }

    /// A `runtime_error`.
    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::RUNTIME_ERROR, message)
    }

    /// A `timeout`.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::TIMEOUT, message)
    }
}
