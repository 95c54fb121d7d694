//! DAG validation (Layer 2 §3 constraints, the path grammar, and resource limits), producing a
//! [`ValidatedDag`] the orchestrator can execute.

mod csr;
mod cycles;
mod edges;
mod error;
mod inputs;
mod levels;
mod tasks;

use std::sync::Arc;

pub(crate) use self::csr::Csr;
pub use self::error::{EdgeEnd, ValidationError, ValidationReport, ValidationWarning};
use crate::Dag;
use crate::hash::StrMap;
use crate::path::FieldPath;

/// Limits that protect the orchestrator from resource exhaustion (the spec leaves DAG
/// depth and breadth limits open; they are configuration here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationLimits {
    /// Maximum number of tasks.
    pub max_tasks: usize,
    /// Maximum depth: tasks on the longest dependency chain (a root alone is depth 1).
    pub max_depth: usize,
    /// Maximum breadth: tasks at the same depth.
    pub max_breadth: usize,
}

impl Default for ValidationLimits {
    /// 100 000 tasks, depth 1 000, breadth 10 000.
    fn default() -> Self {
        Self {
            max_tasks: 100_000,
            max_depth: 1_000,
            max_breadth: 10_000,
        }
    }
}

impl ValidationLimits {
    /// No limits.
    pub fn unlimited() -> Self {
        Self {
            max_tasks: usize::MAX,
            max_depth: usize::MAX,
            max_breadth: usize::MAX,
        }
    }
}

/// A task's input in executable form.
#[derive(Debug, Clone)]
pub(crate) enum PlannedInput {
    Literal,
    One {
        src: u32,
        path: Option<Arc<FieldPath>>,
    },
    Many {
        /// Where the sources are in [`ValidatedDag::sources`].
        srcs: std::ops::Range<u32>,
        path: Option<Arc<FieldPath>>,
    },
}

/// An outgoing edge in executable form.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutEdge {
    pub(crate) to: u32,
    /// Whether the edge may stream (eligible and whole-output); the providers decide.
    pub(crate) stream_candidate: bool,
}

/// One task in executable form.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) id: Arc<str>,
    pub(crate) input: PlannedInput,
    pub(crate) in_degree: u32,
}

/// A DAG that passed validation, indexed for execution.
#[derive(Debug)]
pub struct ValidatedDag {
    dag: Dag,
    pub(crate) nodes: Vec<Node>,
    /// Outgoing edges of every task, in declaration order.
    pub(crate) out: Csr<OutEdge>,
    pub(crate) index: StrMap<Arc<str>, u32>,
    /// The sources of every `from_tasks` input, one after the other.
    pub(crate) sources: Vec<u32>,
    depth: usize,
    breadth: usize,
    warnings: Vec<ValidationWarning>,
}

impl ValidatedDag {
    /// Validates a DAG against every rule; `Err` lists every violation.
    pub fn new(dag: Dag, limits: &ValidationLimits) -> Result<Self, ValidationReport> {
        let analysis = analyze(&dag, limits)?;
        Ok(Self {
            dag,
            nodes: analysis.nodes,
            out: analysis.out,
            index: analysis.index,
            sources: analysis.sources,
            depth: analysis.depth,
            breadth: analysis.breadth,
            warnings: analysis.warnings,
        })
    }

    /// The DAG.
    pub fn dag(&self) -> &Dag {
        &self.dag
    }

    /// The DAG back.
    pub fn into_dag(self) -> Dag {
        self.dag
    }

    /// Warnings found while validating.
    pub fn warnings(&self) -> &[ValidationWarning] {
        &self.warnings
    }

    /// Tasks on the longest dependency chain.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Tasks at the broadest depth level.
    pub fn breadth(&self) -> usize {
        self.breadth
    }

    /// Root tasks (no incoming edge), in declaration order.
    pub fn roots(&self) -> impl Iterator<Item = &str> {
        self.nodes
            .iter()
            .filter(|n| n.in_degree == 0)
            .map(|n| &*n.id)
    }

    /// Leaf tasks (no outgoing edge), in declaration order: their outputs are the result.
    pub fn leaves(&self) -> impl Iterator<Item = &str> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|&(i, _)| self.outs(i as u32).is_empty())
            .map(|(_, n)| &*n.id)
    }

    /// Outgoing edges of task `i`.
    pub(crate) fn outs(&self, i: u32) -> &[OutEdge] {
        self.out.row(i)
    }

    /// Position of a task in `tasks`.
    pub fn task_index(&self, task_id: &str) -> Option<usize> {
        self.index.get(task_id).map(|&i| i as usize)
    }
}

/// Checks a DAG without keeping the executable form.
pub fn check(dag: &Dag, limits: &ValidationLimits) -> ValidationReport {
    match analyze(dag, limits) {
        Ok(analysis) => ValidationReport {
            errors: Vec::new(),
            warnings: analysis.warnings,
        },
        Err(report) => report,
    }
}

struct Analysis {
    nodes: Vec<Node>,
    out: Csr<OutEdge>,
    index: StrMap<Arc<str>, u32>,
    sources: Vec<u32>,
    depth: usize,
    breadth: usize,
    warnings: Vec<ValidationWarning>,
}

/// The sources of a `from_tasks` input.
pub(crate) fn sources_in<'a>(sources: &'a [u32], range: &std::ops::Range<u32>) -> &'a [u32] {
    sources
        .get(range.start as usize..range.end as usize)
        .unwrap_or_default()
}

fn to_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// Runs every pass in turn, each filling in the executable form and reporting what it finds.
/// Errors are listed pass by pass, in the order of the passes below.
fn analyze(dag: &Dag, limits: &ValidationLimits) -> Result<Analysis, ValidationReport> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    tasks::check_dag_id(dag, &mut errors);
    if let Err(too_many) = tasks::check_task_count(dag, limits) {
        errors.push(too_many);
        return Err(ValidationReport { errors, warnings });
    }
    let mut tasks = tasks::index_tasks(dag, &mut errors);
    let known = edges::resolve_edges(dag, &tasks, &mut errors);
    let (incoming, duplicate) = edges::incoming_edges(dag, &known, &mut tasks.nodes, &mut errors);
    let sources = inputs::plan_inputs(dag, &mut tasks, &incoming, &mut errors);
    drop(incoming);
    let out = edges::outgoing_edges(
        dag,
        known,
        &duplicate,
        &tasks.nodes,
        &sources,
        &mut warnings,
    );
    let shape = levels::check_levels(&out, &tasks.nodes, limits, &mut errors);
    if !errors.is_empty() {
        return Err(ValidationReport { errors, warnings });
    }
    Ok(Analysis {
        nodes: tasks.nodes,
        out,
        index: tasks.index,
        sources,
        depth: shape.depth,
        breadth: shape.breadth,
        warnings,
    })
}
