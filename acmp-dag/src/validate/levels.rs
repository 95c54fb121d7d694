//! The last pass: cycles, or else the depth and breadth of the DAG against the limits.

use super::{Csr, Node, OutEdge, ValidationError, ValidationLimits, cycles};

/// How deep and broad an acyclic DAG is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Shape {
    /// Tasks on the longest dependency chain.
    pub(super) depth: usize,
    /// Tasks at the broadest depth level.
    pub(super) breadth: usize,
    /// The first task at the deepest level.
    deepest: usize,
    /// The broadest level (the first of the broadest; roots are level 1; 0 without tasks).
    broadest: usize,
}

/// Reports every cycle (one per strongly connected component) or, for an acyclic DAG, a
/// depth or breadth over the limits. The shape is all zeros when there is a cycle.
pub(super) fn check_levels(
    out: &Csr<OutEdge>,
    nodes: &[Node],
    limits: &ValidationLimits,
    errors: &mut Vec<ValidationError>,
) -> Shape {
    match cycles::levels(out, nodes.iter().map(|node| node.in_degree).collect()) {
        Ok(levels) => {
            let shape = shape_of(&levels);
            check_limits(&shape, nodes, limits, errors);
            shape
        }
        Err(found) => {
            report_cycles(&found, nodes, errors);
            Shape::default()
        }
    }
}

/// The shape given every task's depth level.
fn shape_of(levels: &[u32]) -> Shape {
    let mut depth = 0;
    let mut deepest = 0;
    let mut per_level: Vec<usize> = Vec::new();
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
    let (broadest, breadth) = per_level
        .iter()
        .enumerate()
        .max_by_key(|&(l, &c)| (c, std::cmp::Reverse(l)))
        .map_or((0, 0), |(l, &c)| (l + 1, c));
    Shape {
        depth,
        breadth,
        deepest,
        broadest,
    }
}

/// Reports a depth or breadth over the limits.
fn check_limits(
    shape: &Shape,
    nodes: &[Node],
    limits: &ValidationLimits,
    errors: &mut Vec<ValidationError>,
) {
    if shape.depth > limits.max_depth {
        errors.push(ValidationError::TooDeep {
            depth: shape.depth,
            max: limits.max_depth,
            task_id: task_id(nodes, shape.deepest),
        });
    }
    if shape.breadth > limits.max_breadth {
        errors.push(ValidationError::TooBroad {
            breadth: shape.breadth,
            max: limits.max_breadth,
            level: shape.broadest,
        });
    }
}

/// Reports every cycle as the path of its task ids.
fn report_cycles(found: &[Vec<u32>], nodes: &[Node], errors: &mut Vec<ValidationError>) {
    for cycle in found {
        errors.push(ValidationError::Cycle {
            path: cycle.iter().map(|&i| task_id(nodes, i as usize)).collect(),
        });
    }
}

/// The id of the task at `i` (empty if there is none).
fn task_id(nodes: &[Node], i: usize) -> String {
    nodes
        .get(i)
        .map(|node| node.id.to_string())
        .unwrap_or_default()
}
