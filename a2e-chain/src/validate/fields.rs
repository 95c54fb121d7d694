//! Fields each kind of node needs, and fields it must not have.

use a2e_proto::{ChainNode, NodeKind};
use serde_json::Value;

use super::{Result, invalid};
use crate::error::ValidationError;

/// The kinds, as shared constants: a kind read from the wire owns its
/// string, and the plan's kind is cloned into every runner call.
static TOOL: NodeKind = NodeKind::TOOL;
static SKILL: NodeKind = NodeKind::SKILL;
static PROC: NodeKind = NodeKind::PROC;
static BRANCH: NodeKind = NodeKind::BRANCH;
static MAP: NodeKind = NodeKind::MAP;

/// The kind-specific fields, in the bit order of `check_fields`.
const FIELDS: [&str; 7] = [
    "input",
    "input_map",
    "condition",
    "true_node",
    "false_node",
    "items_path",
    "map_node",
];
/// `input`, `input_map`: tool, skill and proc only.
const RUNNABLE_ONLY: u8 = 0b000_0011;
/// `condition`, `true_node`, `false_node`: branch only.
const BRANCH_ONLY: u8 = 0b001_1100;
/// `items_path`, `map_node`: map only.
const MAP_ONLY: u8 = 0b110_0000;

/// A node's kind, read once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `tool`
    Tool,
    /// `skill`
    Skill,
    /// `proc`
    Proc,
    /// `branch`
    Branch,
    /// `map`
    Map,
}

impl Kind {
    fn of(kind: &NodeKind) -> Option<Self> {
        Some(match kind.as_str() {
            "tool" => Self::Tool,
            "skill" => Self::Skill,
            "proc" => Self::Proc,
            "branch" => Self::Branch,
            "map" => Self::Map,
            _ => return None,
        })
    }

    /// The shared constant.
    pub(super) fn constant(self) -> &'static NodeKind {
        match self {
            Self::Tool => &TOOL,
            Self::Skill => &SKILL,
            Self::Proc => &PROC,
            Self::Branch => &BRANCH,
            Self::Map => &MAP,
        }
    }
}

/// Fields each kind needs and fields it must not have; the node's kind.
pub(super) fn check_fields(node: &ChainNode) -> Result<Kind> {
    let kind = &node.kind;
    let id = &node.node_id;
    let Some(class) = Kind::of(kind) else {
        return Err(ValidationError::UnknownKind {
            node_id: id.clone(),
            kind: kind.to_string(),
        });
    };
    let missing = |field: &str| ValidationError::MissingField {
        node_id: id.clone(),
        field: field.into(),
        kind: kind.to_string(),
    };
    let unexpected = |field: &str| ValidationError::UnexpectedField {
        node_id: id.clone(),
        field: field.into(),
        kind: kind.to_string(),
    };
    // Which of the kind-specific fields are set, one bit each (in the
    // order of `FIELDS`): one pass, then a mask per kind.
    let set = u8::from(!node.input.is_empty())
        | u8::from(!node.input_map.is_empty()) << 1
        | u8::from(!node.condition.is_empty()) << 2
        | u8::from(!node.true_node.is_empty()) << 3
        | u8::from(!node.false_node.is_empty()) << 4
        | u8::from(!node.items_path.is_empty()) << 5
        | u8::from(!node.map_node.is_empty()) << 6;
    let forbid = |mask: u8| -> Result<()> {
        match set & mask {
            0 => Ok(()),
            hit => Err(unexpected(
                FIELDS
                    .get(hit.trailing_zeros() as usize)
                    .copied()
                    .unwrap_or(""),
            )),
        }
    };
    if !node.approval.is_empty() {
        if !matches!(class, Kind::Tool | Kind::Skill) {
            return Err(unexpected("approval"));
        }
        if !node.approval_required() {
            return Err(invalid(id, "approval", "expected \"required\""));
        }
    }
    if matches!(class, Kind::Tool | Kind::Skill | Kind::Proc) {
        forbid(BRANCH_ONLY | MAP_ONLY)?;
        if class == Kind::Proc {
            if !node.input.contains_key("cmd") && !node.input_map.contains_key("cmd") {
                return Err(missing("input.cmd"));
            }
        } else if node.name.is_empty() {
            return Err(missing("name"));
        }
        match node.input.get("timeout") {
            None => {}
            Some(Value::Number(n)) if n.as_f64().is_some_and(|t| t >= 0.0 && t.is_finite()) => {}
            Some(_) => {
                return Err(invalid(
                    id,
                    "input.timeout",
                    "expected a number of seconds >= 0",
                ));
            }
        }
    } else if class == Kind::Branch {
        forbid(RUNNABLE_ONLY | MAP_ONLY)?;
        if node.condition.is_empty() {
            return Err(missing("condition"));
        }
        if node.true_node.is_empty() && node.false_node.is_empty() {
            return Err(missing("true_node"));
        }
        if node.true_node == node.false_node {
            return Err(invalid(
                id,
                "false_node",
                "names the same node as true_node",
            ));
        }
    } else {
        forbid(RUNNABLE_ONLY | BRANCH_ONLY)?;
        if node.items_path.is_empty() {
            return Err(missing("items_path"));
        }
        if node.map_node.is_empty() {
            return Err(missing("map_node"));
        }
    }
    Ok(class)
}
