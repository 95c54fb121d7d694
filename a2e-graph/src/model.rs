//! The graph every renderer draws: nodes with an id, a kind and a caption,
//! and labelled edges of a few kinds. Built from a validated document by
//! [`crate::chain`], [`crate::dag`] and [`crate::ontheia`].

use std::collections::HashMap;

/// Which kind of document a graph was drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Source {
    /// An A2E chain (`chain/req`).
    Chain,
    /// An ACMP Layer 2 task DAG.
    Dag,
    /// An Ontheia chain.
    Ontheia,
    /// An LLM skill's agentic loop as it ran: its model turns and tool calls.
    Loop,
}

impl Source {
    /// The document kind in words (`chain`, `DAG`, `Ontheia chain`).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Chain => "chain",
            Source::Dag => "DAG",
            Source::Ontheia => "Ontheia chain",
            Source::Loop => "LLM skill loop",
        }
    }
}

/// The outline a node is drawn with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Shape {
    /// Work: a tool, skill, process, model or service call.
    Box,
    /// An ACMP task.
    Rounded,
    /// A decision: a branch or a router.
    Diamond,
    /// A step that runs others: a map, parallel, loop or retry.
    Hexagon,
    /// A document's `input` or `output`.
    Stadium,
}

/// One node: a chain node, an ACMP task, an Ontheia step, or an Ontheia
/// document's `input` / `output`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its id in the document.
    pub id: String,
    /// Its kind: `tool`, `skill`, `proc`, `branch`, `map` (chains); the step
    /// type (Ontheia); `task` (ACMP); `input` or `output`.
    pub kind: String,
    /// The second line of its label: the kind and what it calls (`tool glob`),
    /// or an ACMP task's capability.
    pub caption: String,
    /// Its outline.
    pub shape: Shape,
}

/// Why one node leads to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EdgeKind {
    /// Runs after: a chain's `next_node`, the next Ontheia step in its list.
    Next,
    /// Reads the source's output: an `input_map` entry, a `condition`, an
    /// `items_path`, an ACMP input reference, an Ontheia edge or `${steps.…}`.
    Data,
    /// An ACMP edge the downstream task may consume as a stream.
    Stream,
    /// A branch's `true_node`.
    True,
    /// A branch's `false_node`.
    False,
    /// A map's template, run once per item.
    Map,
    /// The `on_error` fallback, run when the source fails.
    Fallback,
    /// An Ontheia `branch` / `router` case (labelled with its `when`).
    Case,
    /// An Ontheia `branch` / `router` `default`.
    Default,
    /// An Ontheia `parallel`, `loop` or `retry` and the steps inside it.
    Nested,
}

impl EdgeKind {
    /// A name for class attributes and tests (`next`, `data`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Next => "next",
            EdgeKind::Data => "data",
            EdgeKind::Stream => "stream",
            EdgeKind::True => "true",
            EdgeKind::False => "false",
            EdgeKind::Map => "map",
            EdgeKind::Fallback => "fallback",
            EdgeKind::Case => "case",
            EdgeKind::Default => "default",
            EdgeKind::Nested => "nested",
        }
    }
}

/// One edge between two nodes (by index in [`Graph::nodes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The node it leaves.
    pub from: usize,
    /// The node it enters.
    pub to: usize,
    /// Why.
    pub kind: EdgeKind,
    /// The text beside it (`true`, `on_error`, an input key); may be empty.
    pub label: String,
}

/// A block of nodes drawn together: an Ontheia `parallel`, `loop` or
/// `retry` body, or one case (or the `default`) of a `branch` / `router`.
/// Drawn as a DOT `subgraph cluster_…`, a Mermaid `subgraph` and an SVG
/// group with an outline round its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// What it is (`gather parallel`, `route: weather`, `route: default`).
    pub label: String,
    /// The cluster it sits in, by index in [`Graph::clusters`]; clusters come
    /// after the one they sit in.
    pub parent: Option<usize>,
    /// Its own nodes (not those of the clusters inside it), by index in
    /// [`Graph::nodes`].
    pub nodes: Vec<usize>,
}

/// A document as a graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    /// What it was drawn from.
    pub source: Source,
    /// The document's id (`chain_id`, `dag_id`); empty when it has none.
    pub name: String,
    /// The nodes, in document order.
    pub nodes: Vec<Node>,
    /// The edges.
    pub edges: Vec<Edge>,
    /// Blocks of nodes drawn together (Ontheia's nested blocks); a node is
    /// in at most one.
    pub clusters: Vec<Cluster>,
}

impl Graph {
    /// An empty graph of `source`.
    pub(crate) fn new(source: Source, name: impl Into<String>) -> Self {
        Graph {
            source,
            name: name.into(),
            nodes: Vec::new(),
            edges: Vec::new(),
            clusters: Vec::new(),
        }
    }

    /// The cluster each node sits in directly, by node index.
    pub fn cluster_of(&self) -> Vec<Option<usize>> {
        let mut out = vec![None; self.nodes.len()];
        for (c, cluster) in self.clusters.iter().enumerate() {
            for &n in &cluster.nodes {
                if let Some(slot) = out.get_mut(n) {
                    *slot = Some(c);
                }
            }
        }
        out
    }

    /// Every node of cluster `c`, those of the clusters inside it included.
    pub fn cluster_members(&self, c: usize) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .clusters
            .get(c)
            .map(|k| k.nodes.clone())
            .unwrap_or_default();
        for (inner, cluster) in self.clusters.iter().enumerate() {
            if cluster.parent == Some(c) && inner > c {
                out.extend(self.cluster_members(inner));
            }
        }
        out
    }

    /// The index of the node with `id`.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// The node at `index`.
    pub fn node(&self, index: usize) -> Option<&Node> {
        self.nodes.get(index)
    }

    /// A title for the picture: `chain digest01`, `DAG dag_x`, `Ontheia chain`.
    pub fn title(&self) -> String {
        if self.name.is_empty() {
            self.source.as_str().to_owned()
        } else {
            format!("{} {}", self.source.as_str(), self.name)
        }
    }

    /// The edges as drawn in a laid-out picture: one per ordered pair of
    /// nodes, the labels of its edges joined and its kind that of the first.
    /// Returned in the order of the first edge of each pair.
    pub fn merged_edges(&self) -> Vec<Edge> {
        let mut at: HashMap<(usize, usize), usize> = HashMap::new();
        let mut out: Vec<Edge> = Vec::new();
        for e in &self.edges {
            let key = (e.from, e.to);
            match at.get(&key).and_then(|&i| out.get_mut(i)) {
                Some(merged) => {
                    if !e.label.is_empty() && !merged.label.split(", ").any(|l| l == e.label) {
                        if !merged.label.is_empty() {
                            merged.label.push_str(", ");
                        }
                        merged.label.push_str(&e.label);
                    }
                }
                None => {
                    at.insert(key, out.len());
                    out.push(e.clone());
                }
            }
        }
        out
    }
}

/// Builds a graph: nodes by id, edges between ids already added.
#[derive(Debug)]
pub(crate) struct Builder {
    pub graph: Graph,
    index: HashMap<String, usize>,
    /// The data edge of each pair, by index in the edges.
    data_at: HashMap<(usize, usize), usize>,
}

impl Builder {
    /// A builder of an empty graph.
    pub fn new(source: Source, name: impl Into<String>) -> Self {
        Builder {
            graph: Graph::new(source, name),
            index: HashMap::new(),
            data_at: HashMap::new(),
        }
    }

    /// Adds a node; returns its index (the existing one for a known id).
    pub fn node(&mut self, id: &str, kind: &str, caption: String, shape: Shape) -> usize {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        let i = self.graph.nodes.len();
        self.graph.nodes.push(Node {
            id: id.to_owned(),
            kind: kind.to_owned(),
            caption,
            shape,
        });
        self.index.insert(id.to_owned(), i);
        i
    }

    /// The index of a node added before.
    pub fn get(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Adds an edge between two known ids (nothing when either is unknown).
    pub fn edge(&mut self, from: &str, to: &str, kind: EdgeKind, label: impl Into<String>) {
        if let (Some(from), Some(to)) = (self.get(from), self.get(to)) {
            self.edge_at(from, to, kind, label);
        }
    }

    /// Adds an edge between two node indexes.
    pub fn edge_at(&mut self, from: usize, to: usize, kind: EdgeKind, label: impl Into<String>) {
        self.graph.edges.push(Edge {
            from,
            to,
            kind,
            label: label.into(),
        });
    }

    /// Adds `label` to the data edge `from → to`, or adds that edge.
    pub fn data(&mut self, from: &str, to: &str, label: &str) {
        let (Some(f), Some(t)) = (self.get(from), self.get(to)) else {
            return;
        };
        let existing = self
            .data_at
            .get(&(f, t))
            .and_then(|&i| self.graph.edges.get_mut(i));
        match existing {
            Some(e) => {
                if !e.label.split(", ").any(|l| l == label) {
                    if !e.label.is_empty() {
                        e.label.push_str(", ");
                    }
                    e.label.push_str(label);
                }
            }
            None => {
                self.data_at.insert((f, t), self.graph.edges.len());
                self.edge_at(f, t, EdgeKind::Data, label);
            }
        }
    }

    /// Opens a cluster labelled `label` inside `parent`; returns its index.
    pub fn cluster(&mut self, label: String, parent: Option<usize>) -> usize {
        self.graph.clusters.push(Cluster {
            label,
            parent,
            nodes: Vec::new(),
        });
        self.graph.clusters.len() - 1
    }

    /// Puts the node `id` in cluster `c`.
    pub fn put(&mut self, id: &str, c: usize) {
        if let (Some(n), Some(cluster)) = (self.get(id), self.graph.clusters.get_mut(c)) {
            cluster.nodes.push(n);
        }
    }

    /// The graph built.
    pub fn finish(self) -> Graph {
        self.graph
    }
}
