//! The outlines of a graph's clusters in the SVG: a dashed, labelled box
//! round each nested block's nodes, drawn behind them.
//!
//! The layout does not know clusters, so a block's nodes may lie apart with
//! other nodes between them. One box round them all is drawn only when no
//! other node lies inside it; otherwise each of the block's nodes gets an
//! outline of its own, so that a box never claims a node that is not in it.
//! An outer block's box leaves room round the boxes of the blocks inside.

use std::fmt::Write as _;

use layout::core::geometry::Point;

use crate::model::Graph;
use crate::route::{NodeBox, num};
use crate::text::xml;

/// Space between a node and its cluster's outline, per level of nesting.
const PAD: f64 = 7.0;
/// Room above a cluster's nodes for its label.
const LABEL_ROOM: f64 = 13.0;
/// Font size of a cluster's label.
const LABEL_FONT: f64 = 10.0;

/// One cluster as drawn: its index and the boxes of its outline (one, or
/// one per node).
#[derive(Debug)]
pub(crate) struct Outline {
    cluster: usize,
    boxes: Vec<NodeBox>,
}

/// How many levels of clusters lie inside cluster `c`.
fn levels_inside(graph: &Graph, c: usize) -> usize {
    graph
        .clusters
        .iter()
        .enumerate()
        .filter(|(inner, k)| k.parent == Some(c) && *inner > c)
        .map(|(inner, _)| 1 + levels_inside(graph, inner))
        .max()
        .unwrap_or(0)
}

fn overlaps(a: NodeBox, b: NodeBox) -> bool {
    a.0.x < b.0.x + b.1.x && b.0.x < a.0.x + a.1.x && a.0.y < b.0.y + b.1.y && b.0.y < a.0.y + a.1.y
}

/// The outline of every cluster of `graph`, given where its nodes are.
pub(crate) fn outlines(graph: &Graph, nodes: &[Option<NodeBox>]) -> Vec<Outline> {
    let mut out = Vec::new();
    for c in 0..graph.clusters.len() {
        let members = graph.cluster_members(c);
        let boxes: Vec<NodeBox> = members
            .iter()
            .filter_map(|&n| nodes.get(n).copied().flatten())
            .collect();
        if boxes.is_empty() {
            continue;
        }
        let pad = PAD * (1 + levels_inside(graph, c)) as f64;
        let grow = |b: NodeBox| {
            (
                Point::new(b.0.x - pad, b.0.y - pad - LABEL_ROOM),
                Point::new(b.1.x + 2.0 * pad, b.1.y + 2.0 * pad + LABEL_ROOM),
            )
        };
        let left = boxes.iter().map(|b| b.0.x).fold(f64::MAX, f64::min);
        let top = boxes.iter().map(|b| b.0.y).fold(f64::MAX, f64::min);
        let right = boxes.iter().map(|b| b.0.x + b.1.x).fold(f64::MIN, f64::max);
        let bottom = boxes.iter().map(|b| b.0.y + b.1.y).fold(f64::MIN, f64::max);
        let whole = grow((
            Point::new(left, top),
            Point::new(right - left, bottom - top),
        ));
        let claims_another = nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| !members.contains(i))
            .filter_map(|(_, b)| *b)
            .any(|b| overlaps(whole, b));
        let boxes = if claims_another {
            boxes.into_iter().map(grow).collect()
        } else {
            vec![whole]
        };
        out.push(Outline { cluster: c, boxes });
    }
    out
}

/// The corners of every outline (for the picture's size).
pub(crate) fn corners(outlines: &[Outline]) -> Vec<Point> {
    outlines
        .iter()
        .flat_map(|o| o.boxes.iter())
        .flat_map(|b| [b.0, b.0.add(b.1)])
        .collect()
}

/// The outlines as SVG: a `<g class="clusters">` with a
/// `<g class="cluster" data-cluster="…">` per cluster, outer ones first.
pub(crate) fn write(out: &mut String, graph: &Graph, outlines: &[Outline]) {
    if outlines.is_empty() {
        return;
    }
    out.push_str("<g class=\"clusters\">\n");
    for o in outlines {
        let Some(cluster) = graph.clusters.get(o.cluster) else {
            continue;
        };
        let label = xml(&cluster.label);
        let _ = write!(
            out,
            "<g class=\"cluster\" data-cluster=\"{label}\"><title>{label}</title>"
        );
        for b in &o.boxes {
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"#f8fafc\" \
                 stroke=\"#94a3b8\" stroke-width=\"1\" stroke-dasharray=\"4,3\"/>",
                num(b.0.x),
                num(b.0.y),
                num(b.1.x),
                num(b.1.y)
            );
        }
        if let Some(first) = o.boxes.first() {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" font-size=\"{LABEL_FONT}\" fill=\"#64748b\">{label}</text>",
                num(first.0.x + 5.0),
                num(first.0.y + LABEL_ROOM - 1.0)
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</g>\n");
}
