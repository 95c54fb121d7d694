//! A chain checked against the host's catalog before it runs: every tool
//! and skill node names something the host offers, and every node's static
//! arguments meet the callee's schema. The engine's validation knows only
//! the graph; without this a chain naming `read_fil` would run the nodes
//! before it, side effects included, and fail there.

use std::sync::Arc;

use a2e_proto::{ChainNode, ChainRequest, ErrorCode, NodeKind};
use serde_json::{Map, Value};

use crate::error::{HostError, HostResult};
use crate::host::Host;
use crate::registry::ArgsValidator;

/// Checks every `tool` and `skill` node of `req` against what `host`
/// offers (plugins and mounted servers loaded first, so that their tools
/// count): an unknown name is refused with the closest known one, and
/// static arguments that break the callee's schema with the violations.
/// `Err` is a [`HostError::InvalidChain`] naming the node and the field.
pub async fn check_catalog(host: &Arc<Host>, req: &ChainRequest) -> HostResult<()> {
    let registry = host.registry();
    if req.nodes.iter().any(|n| n.kind == NodeKind::TOOL) {
        registry.load_tools(true).await;
    }
    for node in &req.nodes {
        let schema = if node.kind == NodeKind::TOOL {
            match registry.tool(&node.name) {
                Some(entry) => entry.def.input_schema(),
                None => return Err(unknown(node, "tool", &tool_names(host))),
            }
        } else if node.kind == NodeKind::SKILL {
            match registry.skill(&node.name) {
                Some(entry) => Value::Object(entry.def.input_schema.clone()),
                None => return Err(unknown(node, "skill", &skill_names(host))),
            }
        } else {
            continue;
        };
        check_static_input(node, schema)?;
    }
    Ok(())
}

fn tool_names(host: &Host) -> Vec<String> {
    host.registry()
        .tools()
        .into_iter()
        .map(|e| e.def.name.clone())
        .collect()
}

fn skill_names(host: &Host) -> Vec<String> {
    host.registry()
        .skills()
        .into_iter()
        .map(|e| e.def.name.clone())
        .collect()
}

/// The refusal of a node that names a `what` the host does not offer.
fn unknown(node: &ChainNode, what: &str, known: &[String]) -> HostError {
    let hint = crate::search::closest(&node.name, known.iter().map(String::as_str))
        .map(|meant| format!(" (did you mean `{meant}`?)"))
        .unwrap_or_default();
    let code = if what == "tool" {
        ErrorCode::UNKNOWN_TOOL
    } else {
        ErrorCode::UNKNOWN_SKILL
    };
    invalid(
        code,
        format!(
            "node `{}` calls {what} `{}`, which this host does not offer{hint}",
            node.node_id, node.name
        ),
        &node.node_id,
        "name",
    )
}

/// Checks a node's static `input` against `schema`, the callee's: a key its
/// `input_map` sets is not required of it, and `timeout` is the engine's.
fn check_static_input(node: &ChainNode, mut schema: Value) -> HostResult<()> {
    let mapped: Vec<&str> = node.input_map.keys().map(String::as_str).collect();
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|k| k.as_str().is_none_or(|k| !mapped.contains(&k)));
    }
    let mut args: Map<String, Value> = node.input.clone();
    args.remove("timeout");
    for key in &mapped {
        args.remove(*key);
    }
    match ArgsValidator::compile(&schema).check(&args) {
        Ok(()) => Ok(()),
        Err(HostError::Schema { violations, .. }) => Err(invalid(
            ErrorCode::SCHEMA_VIOLATION,
            format!(
                "node `{}`: its input does not fit {} `{}`: {}",
                node.node_id,
                if node.kind == NodeKind::TOOL {
                    "tool"
                } else {
                    "skill"
                },
                node.name,
                violations.join("; ")
            ),
            &node.node_id,
            "input",
        )),
        Err(other) => Err(other),
    }
}

fn invalid(code: ErrorCode, message: String, node_id: &str, field: &str) -> HostError {
    let mut detail = Map::new();
    detail.insert("node_id".into(), Value::from(node_id));
    detail.insert("field".into(), Value::from(field));
    HostError::InvalidChain {
        code,
        message,
        detail,
    }
}
