#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
//! Pictures of the documents an A2E host runs: an A2E chain, an ACMP task
//! DAG or an Ontheia chain, drawn as Mermaid, Graphviz DOT or SVG. The SVG is
//! laid out in-process (by `layout-rs`), so no Graphviz is needed.
//!
//! A document is read with `a2e-document` and validated with the same
//! functions as `a2e validate` ([`a2e_chain::validate`],
//! [`acmp_dag::ValidatedDag::new`], `ontheia::validate`); an invalid one is
//! refused with their errors ([`GraphError`]). The [`Graph`] it becomes has a
//! node per chain node, task or step, labelled with its id and kind, and
//! edges of a few [`EdgeKind`]s: order (`next_node`, step lists), data
//! (`input_map` references, ACMP inputs, Ontheia `edges` and `${steps.…}`),
//! branch sides (`true` / `false`, cases), map templates, `on_error`
//! fallbacks, nested blocks and ACMP streams. What each document gives is
//! listed in [`chain`], [`dag`] and [`ontheia`].
//!
//! A run can be drawn over it: a map from node id to [`NodeRun`] (state and
//! duration) colours the nodes and labels each with its duration.
//!
//! Every id and label comes from an agent, a model or a person and is escaped
//! for the output format ([`text`]): a node called `<img src=x onerror=…>`
//! shows as that text.
//!
//! ```
//! use std::time::Duration;
//! use a2e_graph::{Format, Graph, NodeRun, NodeState, RunStates};
//!
//! let graph = Graph::parse(r#"{
//!   "chain_id": "demo",
//!   "entry_node": "fetch",
//!   "nodes": [
//!     {"node_id": "fetch", "kind": "tool", "name": "http_get", "next_node": "ok"},
//!     {"node_id": "ok", "kind": "branch", "condition": "fetch.output.status == `200`",
//!      "true_node": "save", "false_node": "alert"},
//!     {"node_id": "save", "kind": "tool", "name": "write_file",
//!      "input_map": {"content": "fetch.output.body"}},
//!     {"node_id": "alert", "kind": "skill", "name": "notify"}
//!   ]
//! }"#)?;
//! assert_eq!(graph.nodes.len(), 4);
//!
//! let mermaid = graph.render(Format::Mermaid, None)?;
//! assert!(mermaid.contains(r#"n1{"ok<br/>branch"}"#));
//! assert!(mermaid.contains(r#"n1 -->|"true"| n2"#));
//! assert!(mermaid.contains(r#"n0 -.->|"condition"| n1"#));
//!
//! // A run so far: colours and durations.
//! let mut run = RunStates::new();
//! run.insert("fetch".into(), NodeRun::new(NodeState::Done, Some(Duration::from_millis(420))));
//! run.insert("ok".into(), NodeRun::new(NodeState::Running, None));
//! let dot = graph.render(Format::Dot, Some(&run))?;
//! assert!(dot.contains(r#"label="fetch\ntool http_get\ndone · 420 ms""#));
//!
//! let svg = graph.render(Format::Svg, Some(&run))?;
//! assert_eq!(svg.matches("<g class=\"node ").count(), 4);
//! assert!(svg.contains(r#"state-not-reached" data-state="not-reached" data-node-id="save""#));
//! # Ok::<(), a2e_graph::GraphError>(())
//! ```

pub mod chain;
pub mod dag;
mod dot;
mod error;
mod mermaid;
mod model;
pub mod ontheia;
mod outline;
mod route;
mod run;
pub mod sequence;
mod svg;
pub mod text;

use std::fmt;
use std::str::FromStr;

pub use a2e_document::{Document, DocumentError, parse_document};
pub use dot::to_dot;
pub use error::GraphError;
pub use mermaid::to_mermaid;
pub use model::{Cluster, Edge, EdgeKind, Graph, Node, Shape, Source};
pub use run::{Items, NodeRun, NodeState, RunStates, duration, fold_items, item_of};
pub use svg::{MAX_SVG_CELLS, to_svg};

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// A Mermaid flowchart.
    Mermaid,
    /// Graphviz DOT.
    Dot,
    /// SVG, laid out in-process.
    Svg,
}

impl Format {
    /// Every format, in the order they are listed to people.
    pub const ALL: [Format; 3] = [Format::Mermaid, Format::Dot, Format::Svg];

    /// Its name (`mermaid`, `dot`, `svg`).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Mermaid => "mermaid",
            Format::Dot => "dot",
            Format::Svg => "svg",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}` (expected mermaid, dot or svg)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

impl Graph {
    /// Reads, validates and draws a document's text (a chain, an ACMP DAG or
    /// an Ontheia chain), with the default limits of each engine.
    pub fn parse(text: &str) -> Result<Graph, GraphError> {
        Graph::from_document(&parse_document(text, None)?)
    }

    /// Validates and draws a parsed document, with the default limits of
    /// each engine.
    pub fn from_document(doc: &Document) -> Result<Graph, GraphError> {
        match doc {
            Document::Chain(req) => chain::chain_graph(req, &a2e_chain::ChainConfig::default()),
            Document::Dag(dag) => dag::dag_graph(dag, &acmp_dag::ValidationLimits::default()),
            Document::Ontheia(doc) => ontheia::ontheia_graph(doc),
            other => Err(GraphError::Unsupported(other.kind())),
        }
    }

    /// The picture in `format`; with `run`, nodes coloured by state and
    /// labelled with their durations. Only SVG can fail (too large to lay
    /// out, see [`MAX_SVG_CELLS`]).
    pub fn render(&self, format: Format, run: Option<&RunStates>) -> Result<String, GraphError> {
        match format {
            Format::Mermaid => Ok(to_mermaid(self, run)),
            Format::Dot => Ok(to_dot(self, run)),
            Format::Svg => to_svg(self, run),
        }
    }
}

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
