//! The edge passes: their ends, the incoming edges of every task (and duplicates), and the
//! outgoing edges with their streaming candidacy.

use super::tasks::Tasks;
use super::{
    Csr, EdgeEnd, Node, OutEdge, PlannedInput, ValidationError, ValidationWarning, sources_in,
    to_u32,
};
use crate::{Dag, Edge};

/// An edge whose ends are both known tasks: `(to, (from, edge index))`.
pub(super) type KnownEdge = (u32, (u32, u32));

/// The incoming edges of every task, `(from, edge index)` sorted by source, so that
/// duplicates are neighbours and an edge is looked up without hashing.
pub(super) type Incoming = Csr<(u32, u32)>;

/// Looks up both ends of every edge, reporting those naming an unknown task; the edges
/// whose ends are both known, in declaration order.
pub(super) fn resolve_edges(
    dag: &Dag,
    tasks: &Tasks,
    errors: &mut Vec<ValidationError>,
) -> Vec<KnownEdge> {
    let mut known: Vec<KnownEdge> = Vec::with_capacity(dag.edges.len());
    // Edges are usually listed grouped by their downstream task, in task order: look for
    // `to` at or right after the previous one before hashing.
    let mut to_hint = 0_u32;
    for (k, edge) in dag.edges.iter().enumerate() {
        let from = tasks.index.get(edge.from.as_str()).copied();
        let to = [to_hint, to_hint.wrapping_add(1)]
            .into_iter()
            .find(|&at| tasks.is_at(&edge.to, at))
            .or_else(|| tasks.index.get(edge.to.as_str()).copied());
        if let Some(t) = to {
            to_hint = t;
        }
        for (end, id, found) in [
            (EdgeEnd::From, &edge.from, from),
            (EdgeEnd::To, &edge.to, to),
        ] {
            if found.is_none() {
                errors.push(ValidationError::UnknownEdgeTask {
                    edge_index: k,
                    end,
                    task_id: id.clone(),
                });
            }
        }
        if let (Some(f), Some(t)) = (from, to) {
            known.push((t, (f, to_u32(k))));
        }
    }
    known
}

/// Groups the known edges by downstream task, reporting every repeat of an edge; sets each
/// task's in-degree (repeats not counted). Returns the incoming edges and, per edge index,
/// whether the edge repeats an earlier one.
pub(super) fn incoming_edges(
    dag: &Dag,
    known: &[KnownEdge],
    nodes: &mut [Node],
    errors: &mut Vec<ValidationError>,
) -> (Incoming, Vec<bool>) {
    let mut incoming = Csr::from_pairs(nodes.len(), known);
    let mut duplicate = vec![false; dag.edges.len()];
    for (t, degree) in nodes.iter_mut().map(|node| &mut node.in_degree).enumerate() {
        let row = incoming.row_mut(to_u32(t));
        row.sort_unstable();
        let mut previous: Option<(u32, u32)> = None;
        for &(f, k) in row.iter() {
            match previous {
                Some((pf, first)) if pf == f => {
                    if let Some(d) = duplicate.get_mut(k as usize) {
                        *d = true;
                    }
                    let edge = dag.edges.get(k as usize);
                    errors.push(ValidationError::DuplicateEdge {
                        edge_index: k as usize,
                        first_index: first as usize,
                        from: edge.map(|e| e.from.clone()).unwrap_or_default(),
                        to: edge.map(|e| e.to.clone()).unwrap_or_default(),
                    });
                }
                _ => {
                    previous = Some((f, k));
                    *degree += 1;
                }
            }
        }
    }
    (incoming, duplicate)
}

/// The outgoing edges of every task, in declaration order and without repeats, each with
/// its streaming candidacy (warning about the stream-eligible edges that cannot stream).
/// Needs the planned inputs; reuses the memory of `known` (same size).
pub(super) fn outgoing_edges(
    dag: &Dag,
    known: Vec<KnownEdge>,
    duplicate: &[bool],
    nodes: &[Node],
    sources: &[u32],
    warnings: &mut Vec<ValidationWarning>,
) -> Csr<OutEdge> {
    let outgoing: Vec<(u32, OutEdge)> = known
        .into_iter()
        .filter_map(|(t, (f, k))| {
            if duplicate.get(k as usize).copied().unwrap_or(false) {
                return None;
            }
            let edge = dag.edges.get(k as usize)?;
            let stream_candidate = edge.is_stream_eligible()
                && may_stream(
                    k as usize,
                    edge,
                    f,
                    nodes.get(t as usize),
                    sources,
                    warnings,
                );
            Some((
                f,
                OutEdge {
                    to: t,
                    stream_candidate,
                },
            ))
        })
        .collect();
    Csr::from_pairs(nodes.len(), &outgoing)
}

/// Whether a stream-eligible edge (number `k`, from task `from` into `to`) may stream: only
/// into a `from_task` reference to `from` of its whole output. Any other use is a warning.
fn may_stream(
    k: usize,
    edge: &Edge,
    from: u32,
    to: Option<&Node>,
    sources: &[u32],
    warnings: &mut Vec<ValidationWarning>,
) -> bool {
    match to.map(|node| &node.input) {
        Some(PlannedInput::One { src, path }) if *src == from => match path {
            Some(p) if !p.is_whole_data() => {
                warnings.push(ValidationWarning::StreamWithSubField {
                    edge_index: k,
                    from: edge.from.clone(),
                    to: edge.to.clone(),
                    field: p.to_string(),
                });
                false
            }
            _ => true,
        },
        Some(PlannedInput::Many { srcs, .. }) if sources_in(sources, srcs).contains(&from) => {
            warnings.push(ValidationWarning::StreamIntoAggregation {
                edge_index: k,
                from: edge.from.clone(),
                to: edge.to.clone(),
            });
            false
        }
        _ => {
            warnings.push(ValidationWarning::StreamWithoutReference {
                edge_index: k,
                from: edge.from.clone(),
                to: edge.to.clone(),
            });
            false
        }
    }
}
