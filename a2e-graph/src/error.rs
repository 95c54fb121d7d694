//! Why a document cannot be drawn.

use a2e_document::DocumentError;
use a2e_proto::ErrorCode;

/// Why a document cannot be drawn: the refusals are those of `a2e validate`
/// (the same parse and the same validation functions), and an SVG has a size
/// limit of its own.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// Not a document the host runs, or one whose shape is wrong.
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// A chain the chain engine refuses (`a2e_chain::validate`).
    #[error(transparent)]
    Chain(#[from] a2e_chain::ValidationError),
    /// A DAG that breaks ACMP rules (`acmp_dag::ValidatedDag::new`).
    #[error(transparent)]
    Dag(#[from] acmp_dag::ValidationReport),
    /// An Ontheia chain that breaks its spec's rules (`ontheia::validate`).
    #[error("not a valid Ontheia chain: {0}")]
    Ontheia(#[from] ontheia::ValidationErrors),
    /// Too large a graph to lay out in-process.
    #[error(
        "{nodes} nodes and {edges} edges take {cells} places to lay out, more than the {limit} \
         an SVG is laid out for here; draw it as DOT and lay it out with Graphviz"
    )]
    TooLarge {
        /// Nodes in the graph.
        nodes: usize,
        /// Edges in the graph (pairs of nodes).
        edges: usize,
        /// The places the layout would arrange (see `MAX_SVG_CELLS`).
        cells: usize,
        /// The limit.
        limit: usize,
    },
    /// A kind of document this version cannot draw.
    #[error("no picture for a {0} document")]
    Unsupported(&'static str),
    /// The layout failed (a fault of the layout crate, caught).
    #[error("the graph could not be laid out: {0}")]
    Layout(String),
}

impl GraphError {
    /// The wire code of a refused chain (`chain_cycle`, `schema_violation`),
    /// as `a2e validate` prints it; `None` for the other errors.
    pub fn chain_code(&self) -> Option<ErrorCode> {
        match self {
            GraphError::Chain(e) => Some(e.code()),
            _ => None,
        }
    }
}
