//! The plan's layout: edges by source, dependency counters, terminals,
//! roots, branch upstreams, entry checks, and the static fan-out check.

use serde_json::Value;

use super::{Result, invalid};
use crate::config::ChainConfig;
use crate::context::Root;
use crate::error::ValidationError;
use crate::graph::{ANY_CONTROL, BranchSpec, DATA, Edge, FALLBACK, Plan, Role, Spec};

/// Merges duplicate (from, to) pairs and lays the edges out by source.
pub(super) fn build_csr(n: usize, pairs: Vec<(u32, u32, u8)>) -> (Vec<u32>, Vec<Edge>) {
    // Counting sort by source (linear time), then sort each source's short
    // run by target and merge duplicates.
    let mut start = vec![0u32; n + 1];
    for &(a, _, _) in &pairs {
        if let Some(s) = start.get_mut(a as usize + 1) {
            *s += 1;
        }
    }
    for i in 0..n {
        let prev = start.get(i).copied().unwrap_or(0);
        if let Some(s) = start.get_mut(i + 1) {
            *s += prev;
        }
    }
    let mut fill: Vec<u32> = start.clone();
    let mut slots = vec![Edge { to: 0, flags: 0 }; pairs.len()];
    for (a, b, f) in pairs {
        if let Some(pos) = fill.get_mut(a as usize) {
            if let Some(slot) = slots.get_mut(*pos as usize) {
                *slot = Edge { to: b, flags: f };
            }
            *pos += 1;
        }
    }
    let mut edges: Vec<Edge> = Vec::with_capacity(slots.len());
    let mut new_start = vec![0u32; n + 1];
    for i in 0..n {
        let (a, b) = match (start.get(i), start.get(i + 1)) {
            (Some(&a), Some(&b)) => (a as usize, b as usize),
            _ => (0, 0),
        };
        if let Some(run) = slots.get_mut(a..b) {
            run.sort_unstable_by_key(|e| e.to);
            let mut prev: Option<u32> = None;
            for e in run.iter() {
                match edges.last_mut() {
                    Some(last) if prev == Some(e.to) => last.flags |= e.flags,
                    _ => edges.push(*e),
                }
                prev = Some(e.to);
            }
        }
        if let Some(s) = new_start.get_mut(i + 1) {
            *s = edges.len() as u32;
        }
    }
    (new_start, edges)
}

/// Whether every edge the cycle search looks at (see `crate::cycle::find_cycle`) points
/// to a later-declared node: then the graph is acyclic and the search can be
/// skipped.
pub(super) fn forward_only(plan: &Plan<'_>) -> bool {
    (0..plan.nodes.len() as u32).all(|from| {
        let edges = plan.out_edges(from);
        edges.iter().all(|e| e.to > from)
            && edges.iter().filter(|f| f.flags & FALLBACK != 0).all(|f| {
                edges
                    .iter()
                    .filter(|d| d.flags & FALLBACK == 0)
                    .all(|d| d.to > f.to)
            })
    })
}

/// Dependency counters of one node, gathered apart from the nodes (16
/// bytes each, so that the scattered increments stay in cache).
#[derive(Clone, Copy, Default)]
struct Counts {
    pending: u32,
    ctrl_in: u32,
    data_in: u32,
    /// The last node with an edge to it, plus one (0: none).
    last_source: u32,
}

/// Counters, terminals, roots, branch upstreams, and the entry checks.
pub(super) fn finish(plan: &mut Plan<'_>, entry: Option<u32>) -> Result<()> {
    let n = plan.nodes.len();
    let mut counts: Vec<Counts> = vec![Counts::default(); n];
    for from in 0..n as u32 {
        let mut depended_on = false;
        let (a, b) = match (
            plan.edge_start.get(from as usize),
            plan.edge_start.get(from as usize + 1),
        ) {
            (Some(&a), Some(&b)) => (a as usize, b as usize),
            _ => (0, 0),
        };
        for k in a..b {
            let Some(&e) = plan.edges.get(k) else { break };
            if e.flags & FALLBACK == 0 {
                depended_on = true;
            } else if let Some(t) = plan.nodes.get_mut(e.to as usize) {
                t.owner = Some(from);
            }
            if let Some(c) = counts.get_mut(e.to as usize) {
                c.pending += 1;
                c.ctrl_in += u32::from(e.flags & ANY_CONTROL != 0);
                c.data_in += u32::from(e.flags & DATA != 0);
                c.last_source = from + 1;
            }
        }
        if let Some(node) = plan.nodes.get_mut(from as usize) {
            node.terminal = !depended_on && node.role != Role::Template;
        }
    }
    let mut total = 0;
    for (i, (node, c)) in plan.nodes.iter_mut().zip(&counts).enumerate() {
        node.pending = c.pending;
        node.ctrl_in = c.ctrl_in;
        node.data_in = c.data_in;
        if node.role != Role::Template {
            total += 1;
            if node.pending == 0 {
                plan.roots.push(i as u32);
            }
        }
        let pending = node.pending;
        let id = &*node.id;
        if let Spec::Branch(branch) = &mut node.spec {
            let BranchSpec { cond, upstream, .. } = &mut **branch;
            *upstream = if pending == 1 {
                c.last_source.checked_sub(1)
            } else {
                None
            };
            if upstream.is_none() && cond.roots().contains(&Root::Upstream) {
                return Err(invalid(
                    id,
                    "condition",
                    format!(
                        "reads `output`, which needs exactly one upstream node; this branch has {pending}"
                    ),
                ));
            }
        }
    }
    plan.total = total;
    if let Some(e) = entry
        && let Some(node) = plan.nodes.get(e as usize)
        && node.pending != 0
    {
        return Err(invalid(
            "",
            "entry_node",
            format!(
                "entry node `{}` depends on {} other node(s); the entry must have none",
                node.id, node.pending
            ),
        ));
    }
    Ok(())
}

/// A map whose `items_path` reads only `input` is checked against the
/// fan-out limit now.
pub(super) fn check_static_fan_out(plan: &Plan<'_>, config: &ChainConfig) -> Result<()> {
    let mut input = None;
    for node in &plan.nodes {
        let Spec::Map(map) = &node.spec else {
            continue;
        };
        let items = &map.items;
        if items.roots().iter().any(|r| *r != Root::Input) {
            continue;
        }
        let input = input.get_or_insert_with(|| Value::Object(plan.req.initial_input.clone()));
        let list = crate::engine::resolve::eval_static(items, input);
        if let Value::Array(list) = list
            && list.len() > config.max_map_items
        {
            return Err(ValidationError::MapFanOut {
                node_id: node.src.node_id.clone(),
                count: list.len(),
                limit: config.max_map_items,
            });
        }
    }
    Ok(())
}
