//! Mermaid flowcharts (`flowchart TD`), for Markdown that renders them.
//!
//! Nodes are named `n0`, `n1`, … (a document's ids could be Mermaid
//! keywords); the id, caption and run note are the label, each escaped with
//! [`crate::text::mermaid`] and joined by `<br/>`. Edge kinds are told apart
//! by the arrow: `-->` order and branches, `-.->` data and fallbacks, `==>`
//! map templates and streams. A run colours the nodes with one `classDef`
//! per state. Nested blocks are `subgraph`s, one inside the other as the
//! blocks are.

use std::fmt::Write as _;

use crate::model::{EdgeKind, Graph, Shape};
use crate::run::{self, NodeState, RunStates};
use crate::text::{mermaid, visible};

/// The graph as a Mermaid flowchart; with `run`, nodes coloured by state and
/// labelled with their durations.
pub fn to_mermaid(graph: &Graph, run: Option<&RunStates>) -> String {
    // A map's items count on their template.
    let folded = run::folded(graph, run);
    let run = folded.as_ref();
    let mut out = String::new();
    let _ = writeln!(out, "%% {}", visible(&graph.title()));
    out.push_str("flowchart TD\n");
    let mut states: Vec<(NodeState, Vec<usize>)> = Vec::new();
    let mut lines: Vec<String> = Vec::with_capacity(graph.nodes.len());
    for (i, node) in graph.nodes.iter().enumerate() {
        let look = run::look(&node.id, run);
        let mut label = format!("{}<br/>{}", mermaid(&node.id), mermaid(&node.caption));
        if let Some(note) = &look.note {
            let _ = write!(label, "<br/>{}", mermaid(note));
        }
        let (open, close) = match node.shape {
            Shape::Box => ("[", "]"),
            Shape::Rounded => ("(", ")"),
            Shape::Diamond => ("{", "}"),
            Shape::Hexagon => ("{{", "}}"),
            Shape::Stadium => ("([", "])"),
        };
        lines.push(format!("n{i}{open}\"{label}\"{close}"));
        if let Some(state) = look.state {
            match states.iter_mut().find(|(s, _)| *s == state) {
                Some((_, nodes)) => nodes.push(i),
                None => states.push((state, vec![i])),
            }
        }
    }
    let within = graph.cluster_of();
    for (line, c) in lines.iter().zip(&within) {
        if c.is_none() {
            let _ = writeln!(out, "    {line}");
        }
    }
    for (c, cluster) in graph.clusters.iter().enumerate() {
        if cluster.parent.is_none() {
            write_cluster(&mut out, graph, &lines, c, 1);
        }
    }
    for edge in &graph.edges {
        let arrow = match edge.kind {
            EdgeKind::Data | EdgeKind::Fallback => "-.->",
            EdgeKind::Map | EdgeKind::Stream => "==>",
            _ => "-->",
        };
        if edge.label.is_empty() {
            let _ = writeln!(out, "    n{} {arrow} n{}", edge.from, edge.to);
        } else {
            let label = mermaid(&edge.label);
            let _ = writeln!(out, "    n{} {arrow}|\"{label}\"| n{}", edge.from, edge.to);
        }
    }
    for (state, nodes) in &states {
        let (fill, line) = state.colours();
        let name = class_name(*state);
        let _ = writeln!(out, "    classDef {name} fill:{fill},stroke:{line}");
        let list: Vec<String> = nodes.iter().map(|i| format!("n{i}")).collect();
        let _ = writeln!(out, "    class {} {name}", list.join(","));
    }
    out
}

/// Cluster `c` as a `subgraph` holding its nodes (their lines from
/// `lines`) and the clusters inside it, indented `depth` levels.
fn write_cluster(out: &mut String, graph: &Graph, lines: &[String], c: usize, depth: usize) {
    let Some(cluster) = graph.clusters.get(c) else {
        return;
    };
    let pad = "    ".repeat(depth);
    let _ = writeln!(out, "{pad}subgraph c{c} [\"{}\"]", mermaid(&cluster.label));
    for &n in &cluster.nodes {
        if let Some(line) = lines.get(n) {
            let _ = writeln!(out, "{pad}    {line}");
        }
    }
    for (inner, k) in graph.clusters.iter().enumerate() {
        if k.parent == Some(c) && inner > c {
            write_cluster(out, graph, lines, inner, depth + 1);
        }
    }
    let _ = writeln!(out, "{pad}end");
}

/// A Mermaid class name for a state (no `-`, which Mermaid reads as an arrow).
fn class_name(state: NodeState) -> &'static str {
    match state {
        NodeState::NotReached => "notReached",
        other => other.as_str(),
    }
}
