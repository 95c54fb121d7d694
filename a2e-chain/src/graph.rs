//! The compiled form of a chain: nodes by index, edges in one flat array,
//! expressions compiled. Built once by [`crate::validate()`]; read-only while
//! the chain runs.

use std::sync::Arc;

use a2e_proto::{ChainNode, ChainRequest, NodeKind};

use crate::context::Expr;
use crate::input::Keys;

/// Edge flag: `next_node`.
pub(crate) const CONTROL: u8 = 1;
/// Edge flag: an expression of the target reads the source.
pub(crate) const DATA: u8 = 2;
/// Edge flag: the source branch's `true_node`.
pub(crate) const ON_TRUE: u8 = 4;
/// Edge flag: the source branch's `false_node`.
pub(crate) const ON_FALSE: u8 = 8;
/// Edge flag: the target is the source's `on_error` fallback.
pub(crate) const FALLBACK: u8 = 16;
/// Flags that make an edge a control edge.
pub(crate) const ANY_CONTROL: u8 = CONTROL | ON_TRUE | ON_FALSE | FALLBACK;

/// A dependency edge, stored with its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edge {
    /// The dependent node.
    pub to: u32,
    /// Why it depends (`CONTROL`, `DATA`, …, or several).
    pub flags: u8,
}

/// The part a node plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Runs when its dependencies allow.
    Normal,
    /// A map's `map_node`: runs only as map items.
    Template,
    /// Some node's `on_error` fallback: runs only if that node fails.
    Fallback,
}

/// What to do when the node fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Fail the chain.
    Abort,
    /// Record the error, output `null`, go on.
    Skip,
    /// Run this node instead.
    Fallback(u32),
}

/// What the node does.
#[derive(Debug)]
///
/// Branches and maps are few; their parts live behind a box so that the
/// compiled node, walked by every pass over the plan, stays small.
pub(crate) enum Spec {
    /// `tool`, `skill` or `proc`: call the runner.
    Run,
    /// `branch`.
    Branch(Box<BranchSpec>),
    /// `map`.
    Map(Box<MapSpec>),
}

/// A `branch` node's parts.
#[derive(Debug)]
pub(crate) struct BranchSpec {
    /// The condition.
    pub cond: Expr,
    /// Node to run when it holds.
    pub on_true: Option<u32>,
    /// Node to run otherwise.
    pub on_false: Option<u32>,
    /// The single upstream node, whose output is `output` in `cond`.
    pub upstream: Option<u32>,
}

/// A `map` node's parts.
#[derive(Debug)]
pub(crate) struct MapSpec {
    /// The list to iterate.
    pub items: Expr,
    /// The template node applied to each item.
    pub template: u32,
}

/// One compiled node.
#[derive(Debug)]
pub(crate) struct Node<'r> {
    /// The node as declared.
    pub src: &'r ChainNode,
    /// Its id, shared with runner calls.
    pub id: Arc<str>,
    /// Its tool/skill name, shared with runner calls.
    pub name: Arc<str>,
    /// Its role.
    pub role: Role,
    /// What it does.
    pub spec: Spec,
    /// Its `on_error`.
    pub policy: Policy,
    /// Where its `input_map` (compiled, in declaration order) starts in
    /// [`Plan::inputs`].
    pub inputs_at: u32,
    /// How many `input_map` entries it has.
    pub inputs_len: u32,
    /// Its input's keys (static `input` keys, then `input_map` keys not among
    /// them), in [`Plan::shapes`].
    pub shape: u32,
    /// Its kind: one of the shared constants (checked at validation), so
    /// running a node does not touch the request and cloning it is free.
    pub kind: &'static NodeKind,
    /// Its static `input` is not empty.
    pub has_input: bool,
    /// Distinct nodes it depends on.
    pub pending: u32,
    /// Of those, how many through a control edge.
    pub ctrl_in: u32,
    /// Of those, how many through a data edge.
    pub data_in: u32,
    /// No node depends on it (fallback edges aside).
    pub terminal: bool,
    /// For a fallback: the node it stands in for.
    pub owner: Option<u32>,
    /// `timeout` is a key of its `input` or `input_map` (else no lookup).
    pub may_time_out: bool,
}

impl Node<'_> {
    /// The node's kind.
    pub(crate) fn kind(&self) -> &NodeKind {
        self.kind
    }
}

/// A validated chain, ready to run: the request it borrows, compiled.
#[derive(Debug)]
pub struct Plan<'r> {
    pub(crate) req: &'r ChainRequest,
    pub(crate) nodes: Vec<Node<'r>>,
    pub(crate) edge_start: Vec<u32>,
    pub(crate) edges: Vec<Edge>,
    /// Every node's `input_map`, compiled, one node after another; keys
    /// borrowed from the request.
    pub(crate) inputs: Vec<(&'r str, Expr)>,
    /// Input keys, one list per distinct list, shared by the calls.
    pub(crate) shapes: Vec<Keys>,
    pub(crate) roots: Vec<u32>,
    pub(crate) total: usize,
}

impl<'r> Plan<'r> {
    /// The request this plan was made from.
    pub fn request(&self) -> &'r ChainRequest {
        self.req
    }

    /// Nodes declared.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes that settle (done, error or skip) in a complete run: every node
    /// but map templates. The `total` of [`crate::Progress`].
    pub fn total(&self) -> usize {
        self.total
    }

    /// Ids of the nodes that start at once.
    pub fn roots(&self) -> impl Iterator<Item = &str> + '_ {
        self.roots
            .iter()
            .filter_map(|&i| self.nodes.get(i as usize).map(|n| &*n.id))
    }

    /// The compiled `input_map` of `node`.
    pub(crate) fn input_map(&self, node: &Node<'_>) -> &[(&'r str, Expr)] {
        inputs_of(&self.inputs, node)
    }

    /// The keys of `node`'s input.
    pub(crate) fn shape(&self, node: &Node<'_>) -> Keys {
        self.shapes
            .get(node.shape as usize)
            .cloned()
            .unwrap_or_else(|| Keys::from([]))
    }

    /// Out-edges of node `i`.
    pub(crate) fn out_edges(&self, i: u32) -> &[Edge] {
        let i = i as usize;
        match (self.edge_start.get(i), self.edge_start.get(i + 1)) {
            (Some(&a), Some(&b)) => self.edges.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// The entries of `node` in a flat `input_map` array.
pub(crate) fn inputs_of<'a, 'r>(
    inputs: &'a [(&'r str, Expr)],
    node: &Node<'_>,
) -> &'a [(&'r str, Expr)] {
    let at = node.inputs_at as usize;
    inputs.get(at..at + node.inputs_len as usize).unwrap_or(&[])
}

#[cfg(test)]
mod size_tests {
    /// The per-node memory budget (≤ 1 KiB with outputs and the response)
    /// rests on these staying small.
    #[test]
    fn per_node_structures_stay_small() {
        assert!(std::mem::size_of::<super::Node<'_>>() <= 112);
        assert!(std::mem::size_of::<super::Edge>() <= 8);
        assert!(std::mem::size_of::<crate::engine::SlotSize>() <= 24);
        assert!(std::mem::size_of::<crate::engine::OutSize>() <= 96);
        assert!(std::mem::size_of::<crate::context::Expr>() <= 32);
    }
}
