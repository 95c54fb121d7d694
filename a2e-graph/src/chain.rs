//! An A2E chain as a graph, drawn from its validated plan.
//!
//! - one node per chain node, captioned with its kind and what it calls
//!   (`tool glob`, `skill summarise`, `proc build`, `branch`, `map`), and
//!   its `on_error` when it has one (`tool glob · on_error skip`,
//!   `tool glob · on_error → alt`), so that the picture says what a failure
//!   there does;
//! - `next_node` → a [`EdgeKind::Next`] edge; a branch's `true_node` /
//!   `false_node` → [`EdgeKind::True`] / [`EdgeKind::False`]; a map's
//!   `map_node` → [`EdgeKind::Map`] (`each`); `on_error: <node>` →
//!   [`EdgeKind::Fallback`];
//! - every node an expression reads (an `input_map` entry, a `condition`, an
//!   `items_path`, as [`a2e_chain::Plan::references`] resolves them) → one
//!   [`EdgeKind::Data`] edge per pair, labelled with the input keys.

use a2e_chain::{ChainConfig, ExprField, Plan};
use a2e_proto::{ChainRequest, NodeKind, OnError};

use crate::error::GraphError;
use crate::model::{Builder, EdgeKind, Graph, Shape, Source};

/// Validates `req` with the chain engine's rules and `config`'s limits (as
/// `a2e validate` does) and draws it.
pub fn chain_graph(req: &ChainRequest, config: &ChainConfig) -> Result<Graph, GraphError> {
    let plan = a2e_chain::validate(req, config)?;
    Ok(from_plan(&plan))
}

/// Draws a validated chain.
pub fn from_plan(plan: &Plan<'_>) -> Graph {
    let req = plan.request();
    let mut b = Builder::new(Source::Chain, &req.chain_id);
    for node in &req.nodes {
        let kind = node.kind.as_str();
        let (mut caption, shape) = if node.kind == NodeKind::BRANCH {
            (kind.to_owned(), Shape::Diamond)
        } else if node.kind == NodeKind::MAP {
            (kind.to_owned(), Shape::Hexagon)
        } else {
            (format!("{kind} {}", node.name), Shape::Box)
        };
        match node.on_error_policy() {
            OnError::Skip => caption.push_str(" · on_error skip"),
            OnError::Fallback(to) => {
                caption.push_str(" · on_error → ");
                caption.push_str(to);
            }
            // The default: the chain fails.
            _ => {}
        }
        b.node(&node.node_id, kind, caption, shape);
    }
    for node in &req.nodes {
        let id = node.node_id.as_str();
        if !node.next_node.is_empty() {
            b.edge(id, &node.next_node, EdgeKind::Next, "");
        }
        if !node.true_node.is_empty() {
            b.edge(id, &node.true_node, EdgeKind::True, "true");
        }
        if !node.false_node.is_empty() {
            b.edge(id, &node.false_node, EdgeKind::False, "false");
        }
        if !node.map_node.is_empty() {
            b.edge(id, &node.map_node, EdgeKind::Map, "each");
        }
        if let OnError::Fallback(fallback) = node.on_error_policy() {
            b.edge(id, fallback, EdgeKind::Fallback, "on_error");
        }
    }
    for r in plan.references() {
        let label = match r.field {
            ExprField::InputMap(key) => key,
            ExprField::Condition => "condition",
            ExprField::ItemsPath => "items_path",
        };
        b.data(r.target, r.node, label);
    }
    b.finish()
}
