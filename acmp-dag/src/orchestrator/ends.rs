//! The ends of a run's tasks, gathered into the outcome list as they come.

use std::sync::Arc;

use super::outcome::{TaskEnd, TaskError, TaskOutcome};
use crate::hash::IdxMap;
use crate::validate::Node;

/// Task ends, in declaration order as far as every earlier task has ended; the others wait
/// aside until then. Tasks usually end in about declaration order, so most ends are written
/// once, at the end of the list, and the list is the run's outcome without a copy.
pub(crate) struct Ends {
    /// The ends of tasks `0..done.len()`.
    done: Vec<TaskOutcome>,
    /// Ends of later tasks.
    aside: IdxMap<u32, TaskEnd>,
}

impl Ends {
    pub(crate) fn new(tasks: usize) -> Self {
        Self {
            done: Vec::with_capacity(tasks),
            aside: IdxMap::default(),
        }
    }

    /// Records the end of task `idx` (once per task).
    pub(crate) fn set(&mut self, idx: u32, end: TaskEnd, nodes: &[Node]) {
        if idx as usize != self.done.len() {
            self.aside.insert(idx, end);
            return;
        }
        self.push(end, nodes);
        while !self.aside.is_empty() {
            let Some(next) = self.aside.remove(&(self.done.len() as u32)) else {
                break;
            };
            self.push(next, nodes);
        }
    }

    fn push(&mut self, end: TaskEnd, nodes: &[Node]) {
        let task_id = nodes
            .get(self.done.len())
            .map_or_else(|| Arc::from(""), |n| n.id.clone());
        self.done.push(TaskOutcome { task_id, end });
    }

    /// The end of task `idx`, if it ended.
    pub(crate) fn get(&self, idx: u32) -> Option<&TaskEnd> {
        match self.done.get(idx as usize) {
            Some(outcome) => Some(&outcome.end),
            None if self.aside.is_empty() => None,
            None => self.aside.get(&idx),
        }
    }

    /// Every task's outcome, in declaration order; a task that did not end (which the run
    /// never lets happen) fails with a protocol error.
    pub(crate) fn into_outcomes(mut self, nodes: &[Node]) -> Vec<TaskOutcome> {
        while self.done.len() < nodes.len() {
            let idx = self.done.len() as u32;
            let end = self.aside.remove(&idx).unwrap_or_else(|| {
                TaskEnd::Failed(TaskError::Protocol {
                    message: "the run ended before the task did".to_owned(),
                })
            });
            self.push(end, nodes);
        }
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orchestrator::outcome::CancelReason;
    use crate::validate::PlannedInput;

    fn nodes(n: usize) -> Vec<Node> {
        (0..n)
            .map(|i| Node {
                id: Arc::from(format!("t{i}").as_str()),
                input: PlannedInput::Literal,
                in_degree: 0,
            })
            .collect()
    }

    #[test]
    fn ends_in_any_order_come_out_in_declaration_order() {
        let nodes = nodes(4);
        let mut ends = Ends::new(4);
        let cancelled = || TaskEnd::Cancelled(CancelReason::Requested);
        ends.set(2, cancelled(), &nodes);
        ends.set(0, cancelled(), &nodes);
        assert!(ends.get(0).is_some() && ends.get(2).is_some());
        assert!(ends.get(1).is_none() && ends.get(3).is_none());
        ends.set(1, cancelled(), &nodes);
        assert!(ends.get(2).is_some());
        let outcomes = ends.into_outcomes(&nodes);
        let ids: Vec<&str> = outcomes.iter().map(|o| &*o.task_id).collect();
        assert_eq!(ids, ["t0", "t1", "t2", "t3"]);
        assert!(matches!(
            outcomes.get(3).map(|o| &o.end),
            Some(TaskEnd::Failed(TaskError::Protocol { .. }))
        ));
    }
}
