//! Fields each kind of node needs, and fields it must not have.

use a2e_proto::{ChainNode, NodeKind};
use serde_json::Value;

use super::{Result, invalid};
use crate::error::ValidationError;

/// Fields each kind needs and fields it must not have.
pub(super) fn check_fields(node: &ChainNode) -> Result<()> {
    let kind = &node.kind;
    let id = &node.node_id;
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
    let forbid = |fields: &[(&str, bool)]| -> Result<()> {
        match fields.iter().find(|(_, set)| *set) {
            Some((f, _)) => Err(unexpected(f)),
            None => Ok(()),
        }
    };
    let runnable_only = [
        ("input", !node.input.is_empty()),
        ("input_map", !node.input_map.is_empty()),
    ];
    let branch_only = [
        ("condition", !node.condition.is_empty()),
        ("true_node", !node.true_node.is_empty()),
        ("false_node", !node.false_node.is_empty()),
    ];
    let map_only = [
        ("items_path", !node.items_path.is_empty()),
        ("map_node", !node.map_node.is_empty()),
    ];
    if *kind == NodeKind::TOOL || *kind == NodeKind::SKILL || *kind == NodeKind::PROC {
        forbid(&branch_only)?;
        forbid(&map_only)?;
        if *kind == NodeKind::PROC {
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
    } else if *kind == NodeKind::BRANCH {
        forbid(&runnable_only)?;
        forbid(&map_only)?;
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
    } else if *kind == NodeKind::MAP {
        forbid(&runnable_only)?;
        forbid(&branch_only)?;
        if node.items_path.is_empty() {
            return Err(missing("items_path"));
        }
        if node.map_node.is_empty() {
            return Err(missing("map_node"));
        }
    } else {
        return Err(ValidationError::UnknownKind {
            node_id: id.clone(),
            kind: kind.to_string(),
        });
    }
    Ok(())
}
