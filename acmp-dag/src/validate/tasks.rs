//! The first passes: the DAG's own fields, its size, and the task ids.

use std::collections::hash_map::Entry;
use std::sync::Arc;

use super::{Node, PlannedInput, ValidationError, ValidationLimits, to_u32};
use crate::Dag;
use crate::hash::{StrMap, str_map_with_capacity};

/// The tasks as the later passes see them: the executable form, filled in place pass
/// after pass, and the index of the ids.
pub(super) struct Tasks {
    /// One node per task, in declaration order.
    pub(super) nodes: Vec<Node>,
    /// The position of every task id, the first one's for a duplicate.
    pub(super) index: StrMap<Arc<str>, u32>,
    /// Whether the task at each position is the one its id names (its id is neither empty
    /// nor a duplicate).
    pub(super) registered: Vec<bool>,
}

impl Tasks {
    /// Whether the task at `at` is registered under `id`.
    pub(super) fn is_at(&self, id: &str, at: u32) -> bool {
        self.registered.get(at as usize).copied().unwrap_or(false)
            && self
                .nodes
                .get(at as usize)
                .is_some_and(|known| *known.id == *id)
    }
}

/// `dag_id` must not be empty.
pub(super) fn check_dag_id(dag: &Dag, errors: &mut Vec<ValidationError>) {
    if dag.dag_id.is_empty() {
        errors.push(ValidationError::EmptyDagId);
    }
}

/// The number of tasks must be within the limit (and fit a task index); past it no other
/// pass runs.
pub(super) fn check_task_count(
    dag: &Dag,
    limits: &ValidationLimits,
) -> Result<(), ValidationError> {
    let n = dag.tasks.len();
    if n > limits.max_tasks || n >= u32::MAX as usize {
        return Err(ValidationError::TooManyTasks {
            count: n,
            max: limits.max_tasks.min(u32::MAX as usize - 1),
        });
    }
    Ok(())
}

/// Indexes the task ids, reporting empty ids, empty capabilities and duplicate ids.
pub(super) fn index_tasks(dag: &Dag, errors: &mut Vec<ValidationError>) -> Tasks {
    let n = dag.tasks.len();
    let nodes: Vec<Node> = dag
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
    Tasks {
        nodes,
        index,
        registered,
    }
}
