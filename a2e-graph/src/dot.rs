//! Graphviz DOT, for `dot -Tsvg` and every tool that reads it.
//!
//! Nodes are named `n0`, `n1`, …; every value from the document sits in a
//! `"…"` string escaped with [`crate::text::dot`], and the label's lines are
//! joined with DOT's own `\n`. Edge kinds are told apart by style: dashed
//! for data, bold for map templates and streams, green and red for branch
//! sides, red dashed for fallbacks. Nested blocks are `subgraph cluster_N`
//! (dashed, labelled), one inside the other as the blocks are.

use std::fmt::Write as _;

use crate::model::{EdgeKind, Graph, Shape};
use crate::run::{self, RunStates};
use crate::text::dot;

/// The graph as a DOT digraph; with `run`, nodes coloured by state and
/// labelled with their durations.
pub fn to_dot(graph: &Graph, run: Option<&RunStates>) -> String {
    // A map's items count on their template.
    let folded = run::folded(graph, run);
    let run = folded.as_ref();
    let mut out = String::new();
    let title = dot(&graph.title());
    let _ = writeln!(out, "digraph \"{title}\" {{");
    let _ = writeln!(
        out,
        "    graph [rankdir=TB, label=\"{title}\", labelloc=t, fontname=\"Helvetica\"];"
    );
    out.push_str(
        "    node [fontname=\"Helvetica\", fontsize=11, style=filled, fillcolor=\"#f8fafc\", color=\"#334155\"];\n",
    );
    out.push_str("    edge [fontname=\"Helvetica\", fontsize=10];\n");
    let mut lines: Vec<String> = Vec::with_capacity(graph.nodes.len());
    for (i, node) in graph.nodes.iter().enumerate() {
        let mut out = String::new();
        let look = run::look(&node.id, run);
        let mut label = format!("{}\\n{}", dot(&node.id), dot(&node.caption));
        if let Some(note) = &look.note {
            let _ = write!(label, "\\n{}", dot(note));
        }
        let shape = match node.shape {
            Shape::Box => "shape=box",
            Shape::Rounded => "shape=box, style=\"rounded,filled\"",
            Shape::Diamond => "shape=diamond",
            Shape::Hexagon => "shape=hexagon",
            Shape::Stadium => "shape=oval",
        };
        let _ = write!(out, "n{i} [label=\"{label}\", {shape}");
        if look.state.is_some() {
            let _ = write!(
                out,
                ", fillcolor=\"{}\", color=\"{}\"",
                look.fill, look.line
            );
        }
        out.push_str("];\n");
        lines.push(out);
    }
    let within = graph.cluster_of();
    for (line, c) in lines.iter().zip(&within) {
        if c.is_none() {
            out.push_str("    ");
            out.push_str(line);
        }
    }
    for (c, cluster) in graph.clusters.iter().enumerate() {
        if cluster.parent.is_none() {
            write_cluster(&mut out, graph, &lines, c, 1);
        }
    }
    for edge in &graph.edges {
        let _ = write!(out, "    n{} -> n{}", edge.from, edge.to);
        let mut attrs: Vec<String> = Vec::new();
        if !edge.label.is_empty() {
            attrs.push(format!("label=\"{}\"", dot(&edge.label)));
        }
        let style = match edge.kind {
            EdgeKind::Data => "style=dashed",
            EdgeKind::Fallback => "style=dashed, color=\"#b91c1c\"",
            EdgeKind::Stream => "style=bold, penwidth=2, color=\"#1d4ed8\"",
            EdgeKind::Map => "style=bold",
            EdgeKind::True => "color=\"#15803d\"",
            EdgeKind::False => "color=\"#b91c1c\"",
            _ => "",
        };
        if !style.is_empty() {
            attrs.push(style.to_owned());
        }
        if !attrs.is_empty() {
            let _ = write!(out, " [{}]", attrs.join(", "));
        }
        out.push_str(";\n");
    }
    out.push_str("}\n");
    out
}

/// Cluster `c` as a `subgraph cluster_c` holding its nodes (their lines
/// from `lines`) and the clusters inside it, indented `depth` levels.
fn write_cluster(out: &mut String, graph: &Graph, lines: &[String], c: usize, depth: usize) {
    let Some(cluster) = graph.clusters.get(c) else {
        return;
    };
    let pad = "    ".repeat(depth);
    let _ = writeln!(out, "{pad}subgraph cluster_{c} {{");
    let _ = writeln!(
        out,
        "{pad}    label=\"{}\"; style=\"rounded,dashed\"; color=\"#94a3b8\"; fontsize=10;",
        dot(&cluster.label)
    );
    for &n in &cluster.nodes {
        if let Some(line) = lines.get(n) {
            let _ = write!(out, "{pad}    {line}");
        }
    }
    for (inner, k) in graph.clusters.iter().enumerate() {
        if k.parent == Some(c) && inner > c {
            write_cluster(out, graph, lines, inner, depth + 1);
        }
    }
    let _ = writeln!(out, "{pad}}}");
}
