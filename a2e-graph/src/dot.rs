//! Graphviz DOT, for `dot -Tsvg` and every tool that reads it.
//!
//! Nodes are named `n0`, `n1`, …; every value from the document sits in a
//! `"…"` string escaped with [`crate::text::dot`], and the label's lines are
//! joined with DOT's own `\n`. Edge kinds are told apart by style: dashed
//! for data, bold for map templates and streams, green and red for branch
//! sides, red dashed for fallbacks.

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
    for (i, node) in graph.nodes.iter().enumerate() {
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
        let _ = write!(out, "    n{i} [label=\"{label}\", {shape}");
        if look.state.is_some() {
            let _ = write!(
                out,
                ", fillcolor=\"{}\", color=\"{}\"",
                look.fill, look.line
            );
        }
        out.push_str("];\n");
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
