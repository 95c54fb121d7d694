//! The inputs pass: every reference's source tasks and `field` path, planned for execution.

use std::sync::Arc;

use super::edges::Incoming;
use super::tasks::Tasks;
use super::{PlannedInput, ValidationError, to_u32};
use crate::hash::StrMap;
use crate::path::{FieldPath, PathError};
use crate::{Dag, Source, SourceTasks, Task, TaskInput};

/// Plans the input of every registered task that references others, reporting empty
/// `from_tasks`, unknown source tasks, references without an edge, and invalid paths.
/// Returns the sources of every `from_tasks` input, one after the other (where
/// [`PlannedInput::Many`] points).
pub(super) fn plan_inputs(
    dag: &Dag,
    tasks: &mut Tasks,
    incoming: &Incoming,
    errors: &mut Vec<ValidationError>,
) -> Vec<u32> {
    let Tasks {
        nodes,
        index,
        registered,
    } = tasks;
    let mut paths = PathCache::default();
    let mut sources: Vec<u32> = Vec::new();
    for ((i, task), (node, reg)) in dag
        .tasks
        .iter()
        .enumerate()
        .zip(nodes.iter_mut().zip(registered.iter()))
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
        let srcs_start = to_u32(sources.len());
        let lookup = SourceLookup {
            dag,
            index,
            edges_in: incoming.row(to_u32(i)),
            task,
        };
        let first_src = lookup.resolve(source, &mut sources, errors);
        let path = match source.field.as_deref().map(|f| paths.parse(f)).transpose() {
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
    sources
}

/// Finds the source tasks of one task's reference.
struct SourceLookup<'a> {
    dag: &'a Dag,
    index: &'a StrMap<Arc<str>, u32>,
    /// The incoming edges of the referencing task, `(from, edge index)` sorted by source.
    edges_in: &'a [(u32, u32)],
    /// The referencing task.
    task: &'a Task,
}

impl SourceLookup<'_> {
    /// Looks up every source task, appending them to `sources` when there are several;
    /// returns the first one's position (`u32::MAX` if it is unknown).
    fn resolve(
        &self,
        source: &Source,
        sources: &mut Vec<u32>,
        errors: &mut Vec<ValidationError>,
    ) -> u32 {
        let ids = source.tasks.ids();
        let mut first_src = u32::MAX;
        for (position, source_task) in ids.iter().enumerate() {
            let found = self
                .by_edge(source_task)
                .or_else(|| self.by_index(source, position, source_task, errors));
            if let Some(s) = found {
                if position == 0 {
                    first_src = s;
                }
                if ids.len() > 1 {
                    sources.push(s);
                }
            }
        }
        first_src
    }

    /// A valid reference names the source of one of the task's incoming edges: looks there
    /// (few, short strings) before hashing, when the task has at most eight.
    fn by_edge(&self, source_task: &str) -> Option<u32> {
        if self.edges_in.len() > 8 {
            return None;
        }
        self.edges_in
            .iter()
            .find(|&&(_, k)| {
                self.dag
                    .edges
                    .get(k as usize)
                    .is_some_and(|e| e.from == *source_task)
            })
            .map(|&(f, _)| f)
    }

    /// Looks the `position`-th source task up by id, reporting it when it is unknown or has
    /// no edge into the task (the position is kept then).
    fn by_index(
        &self,
        source: &Source,
        position: usize,
        source_task: &str,
        errors: &mut Vec<ValidationError>,
    ) -> Option<u32> {
        let Some(s) = self.index.get(source_task).copied() else {
            errors.push(ValidationError::UnknownSourceTask {
                task_id: self.task.task_id.clone(),
                field: source.tasks.field_name(position),
                source_task: source_task.to_owned(),
            });
            return None;
        };
        let has_edge = self.edges_in.binary_search_by_key(&s, |&(f, _)| f).is_ok();
        if !has_edge {
            errors.push(ValidationError::MissingSourceEdge {
                task_id: self.task.task_id.clone(),
                field: source.tasks.field_name(position),
                source_task: source_task.to_owned(),
            });
        }
        Some(s)
    }
}

/// The `field` paths parsed so far: DAGs repeat the same few paths, so each distinct one is
/// parsed once (and a run of the same one is not even hashed).
#[derive(Default)]
struct PathCache<'d> {
    parsed: StrMap<&'d str, Result<Arc<FieldPath>, PathError>>,
    last: Option<(&'d str, Result<Arc<FieldPath>, PathError>)>,
}

impl<'d> PathCache<'d> {
    /// The path `field`, parsed.
    fn parse(&mut self, field: &'d str) -> Result<Arc<FieldPath>, PathError> {
        if let Some((last, parsed)) = &self.last
            && *last == field
        {
            return parsed.clone();
        }
        let parsed = self
            .parsed
            .entry(field)
            .or_insert_with(|| FieldPath::parse(field).map(Arc::new))
            .clone();
        self.last = Some((field, parsed.clone()));
        parsed
    }
}
