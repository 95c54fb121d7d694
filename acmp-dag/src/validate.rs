//! DAG validation (Layer 2 §3 constraints, the path grammar, and resource limits), producing a
//! [`ValidatedDag`] the orchestrator can execute.

mod csr;
mod cycles;
mod error;

use std::collections::hash_map::Entry;

pub(crate) use self::csr::Csr;
pub use self::error::{EdgeEnd, ValidationError, ValidationReport, ValidationWarning};
use std::sync::Arc;

use crate::hash::{StrMap, str_map_with_capacity};
use crate::path::{FieldPath, PathError};
use crate::{Dag, SourceTasks, TaskInput};

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

fn analyze(dag: &Dag, limits: &ValidationLimits) -> Result<Analysis, ValidationReport> {
    let n = dag.tasks.len();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if dag.dag_id.is_empty() {
        errors.push(ValidationError::EmptyDagId);
    }
    if n > limits.max_tasks || n >= u32::MAX as usize {
        errors.push(ValidationError::TooManyTasks {
            count: n,
            max: limits.max_tasks.min(u32::MAX as usize - 1),
        });
        return Err(ValidationReport { errors, warnings });
    }

    // Task ids. The executable form is filled in place, pass after pass.
    let mut nodes: Vec<Node> = dag
        .tasks
        .iter()
        .map(|t| Node {
            id: Arc::from(&*t.task_id),
            input: PlannedInput::Literal,
            in_degree: 0,
        })
        .collect();
    let mut index: StrMap<Arc<str>, u32> = str_map_with_capacity(n);
    let mut registered = vec![false; n];
    for ((i, task), (node, reg)) in dag
        .tasks
        .iter()
        .enumerate()
        .zip(nodes.iter().zip(registered.iter_mut()))
    {
        if task.task_id.is_empty() {
            errors.push(ValidationError::EmptyTaskId { index: i });
            continue;
        }
        if task.capability.is_empty() {
            errors.push(ValidationError::EmptyCapability {
                task_id: task.task_id.clone(),
            });
        }
        match index.entry(node.id.clone()) {
            Entry::Occupied(first) => errors.push(ValidationError::DuplicateTaskId {
                task_id: task.task_id.clone(),
                first_index: *first.get() as usize,
                index: i,
            }),
            Entry::Vacant(slot) => {
                slot.insert(to_u32(i));
                *reg = true;
            }
        }
    }

    // Edges: incoming edges per task, sorted by source, to find duplicates and to look
    // edges up without hashing.
    let mut valid: Vec<(u32, (u32, u32))> = Vec::with_capacity(dag.edges.len());
    // Edges are usually listed grouped by their downstream task, in task order: look for
    // `to` at or right after the previous one before hashing.
    let is_at = |id: &str, at: u32| {
        registered.get(at as usize).copied().unwrap_or(false)
            && nodes.get(at as usize).is_some_and(|known| *known.id == *id)
    };
    let mut to_hint = 0_u32;
    for (k, edge) in dag.edges.iter().enumerate() {
        let from = index.get(edge.from.as_str()).copied();
        let to = [to_hint, to_hint.wrapping_add(1)]
            .into_iter()
            .find(|&at| is_at(&edge.to, at))
            .or_else(|| index.get(edge.to.as_str()).copied());
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
            valid.push((t, (f, to_u32(k))));
        }
    }
    let mut incoming = Csr::from_pairs(n, &valid);
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
    let has_edge = |from: u32, to: u32| {
        incoming
            .row(to)
            .binary_search_by_key(&from, |&(f, _)| f)
            .is_ok()
    };

    // Inputs. DAGs repeat the same few paths: each distinct one is parsed once.
    let mut paths: StrMap<&str, Result<Arc<FieldPath>, PathError>> = StrMap::default();
    let mut last_path: Option<(&str, Result<Arc<FieldPath>, PathError>)> = None;
    let mut sources: Vec<u32> = Vec::new();
    for ((i, task), (node, reg)) in dag
        .tasks
        .iter()
        .enumerate()
        .zip(nodes.iter_mut().zip(&registered))
    {
        let TaskInput::Reference(reference) = &task.input else {
            continue;
        };
        if !reg {
            continue;
        }
        let source = &reference.source;
        if matches!(&source.tasks, SourceTasks::Many(ids) if ids.is_empty()) {
            errors.push(ValidationError::EmptyFromTasks {
                task_id: task.task_id.clone(),
            });
        }
        let ids = source.tasks.ids();
        let srcs_start = to_u32(sources.len());
        let mut first_src = u32::MAX;
        let edges_in = incoming.row(to_u32(i));
        for (position, source_task) in ids.iter().enumerate() {
            // A valid reference names the source of one of the task's incoming edges: look
            // there (few, short strings) before hashing.
            let by_edge = if edges_in.len() <= 8 {
                edges_in
                    .iter()
                    .find(|&&(_, k)| {
                        dag.edges
                            .get(k as usize)
                            .is_some_and(|e| e.from == *source_task)
                    })
                    .map(|&(f, _)| f)
            } else {
                None
            };
            if let Some(s) = by_edge {
                if position == 0 {
                    first_src = s;
                }
                if ids.len() > 1 {
                    sources.push(s);
                }
                continue;
            }
            match index.get(source_task.as_str()).copied() {
                None => errors.push(ValidationError::UnknownSourceTask {
                    task_id: task.task_id.clone(),
                    field: source.tasks.field_name(position),
                    source_task: source_task.clone(),
                }),
                Some(s) => {
                    if !has_edge(s, to_u32(i)) {
                        errors.push(ValidationError::MissingSourceEdge {
                            task_id: task.task_id.clone(),
                            field: source.tasks.field_name(position),
                            source_task: source_task.clone(),
                        });
                    }
                    if position == 0 {
                        first_src = s;
                    }
                    if ids.len() > 1 {
                        sources.push(s);
                    }
                }
            }
        }
        let parsed = source.field.as_deref().map(|field| match &last_path {
            Some((f, parsed)) if *f == field => parsed.clone(),
            _ => {
                let parsed = paths
                    .entry(field)
                    .or_insert_with(|| FieldPath::parse(field).map(Arc::new))
                    .clone();
                last_path = Some((field, parsed.clone()));
                parsed
            }
        });
        let path = match parsed.transpose() {
            Ok(path) => path,
            Err(error) => {
                errors.push(ValidationError::InvalidPath {
                    task_id: task.task_id.clone(),
                    error,
                });
                None
            }
        };
        node.input = match &source.tasks {
            SourceTasks::One(_) => PlannedInput::One {
                src: first_src,
                path,
            },
            SourceTasks::Many(_) => PlannedInput::Many {
                srcs: srcs_start..to_u32(sources.len()),
                path,
            },
        };
    }

    // Outgoing edges, in declaration order, with their streaming candidacy (in the memory
    // of `valid`: same size).
    let outgoing: Vec<(u32, OutEdge)> = valid
        .into_iter()
        .filter_map(|(t, (f, k))| {
            if duplicate.get(k as usize).copied().unwrap_or(false) {
                return None;
            }
            let edge = dag.edges.get(k as usize)?;
            let mut stream_candidate = false;
            if edge.is_stream_eligible() {
                let (k, from, to) = (k as usize, edge.from.clone(), edge.to.clone());
                match nodes.get(t as usize).map(|node| &node.input) {
                    Some(PlannedInput::One { src, path }) if *src == f => match path {
                        Some(p) if !p.is_whole_data() => {
                            warnings.push(ValidationWarning::StreamWithSubField {
                                edge_index: k,
                                from,
                                to,
                                field: p.to_string(),
                            });
                        }
                        _ => stream_candidate = true,
                    },
                    Some(PlannedInput::Many { srcs, .. })
                        if sources_in(&sources, srcs).contains(&f) =>
                    {
                        warnings.push(ValidationWarning::StreamIntoAggregation {
                            edge_index: k,
                            from,
                            to,
                        });
                    }
                    _ => warnings.push(ValidationWarning::StreamWithoutReference {
                        edge_index: k,
                        from,
                        to,
                    }),
                }
            }
            Some((
                f,
                OutEdge {
                    to: t,
                    stream_candidate,
                },
            ))
        })
        .collect();
    let out = Csr::from_pairs(n, &outgoing);
    drop(outgoing);

    // Cycles, depth and breadth.
    let mut depth = 0;
    let mut breadth = 0;
    match cycles::levels(&out, nodes.iter().map(|node| node.in_degree).collect()) {
        Ok(levels) => {
            let mut per_level: Vec<usize> = Vec::new();
            let mut deepest = 0;
            for (i, &level) in levels.iter().enumerate() {
                let level = level as usize;
                if level > depth {
                    depth = level;
                    deepest = i;
                }
                if per_level.len() < level {
                    per_level.resize(level, 0);
                }
                if let Some(c) = level.checked_sub(1).and_then(|l| per_level.get_mut(l)) {
                    *c += 1;
                }
            }
            let (broadest, width) = per_level
                .iter()
                .enumerate()
                .max_by_key(|&(l, &c)| (c, std::cmp::Reverse(l)))
                .map_or((0, 0), |(l, &c)| (l + 1, c));
            breadth = width;
            if depth > limits.max_depth {
                errors.push(ValidationError::TooDeep {
                    depth,
                    max: limits.max_depth,
                    task_id: nodes
                        .get(deepest)
                        .map(|node| node.id.to_string())
                        .unwrap_or_default(),
                });
            }
            if breadth > limits.max_breadth {
                errors.push(ValidationError::TooBroad {
                    breadth,
                    max: limits.max_breadth,
                    level: broadest,
                });
            }
        }
        Err(found) => {
            for cycle in found {
                errors.push(ValidationError::Cycle {
                    path: cycle
                        .iter()
                        .map(|&i| {
                            nodes
                                .get(i as usize)
                                .map(|node| node.id.to_string())
                                .unwrap_or_default()
                        })
                        .collect(),
                });
            }
        }
    }

    if !errors.is_empty() {
        return Err(ValidationReport { errors, warnings });
    }
    Ok(Analysis {
        nodes,
        out,
        index,
        sources,
        depth,
        breadth,
        warnings,
    })
}
