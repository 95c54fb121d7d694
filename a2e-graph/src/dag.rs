//! An ACMP task DAG as a graph.
//!
//! - one node per task, captioned with its capability;
//! - one edge per entry of `edges`, labelled with the `field` the downstream
//!   task's input reference reads from the upstream one (when it names one);
//! - an edge marked `stream_eligible` is an [`EdgeKind::Stream`] edge, unless
//!   validation warned that it cannot stream (the downstream task selects a
//!   sub-field, aggregates several outputs, or reads another task): then it
//!   is a [`EdgeKind::Data`] edge labelled `stream ignored`.

use acmp_dag::{Dag, ValidatedDag, ValidationLimits, ValidationWarning};

use crate::error::GraphError;
use crate::model::{Builder, EdgeKind, Graph, Shape, Source};

/// Validates `dag` with the ACMP rules and `limits` (as `a2e validate` does)
/// and draws it.
pub fn dag_graph(dag: &Dag, limits: &ValidationLimits) -> Result<Graph, GraphError> {
    let validated = ValidatedDag::new(dag.clone(), limits)?;
    Ok(from_validated(&validated))
}

/// Draws a validated DAG.
pub fn from_validated(validated: &ValidatedDag) -> Graph {
    let dag = validated.dag();
    let mut b = Builder::new(Source::Dag, &dag.dag_id);
    for task in &dag.tasks {
        b.node(
            &task.task_id,
            "task",
            task.capability.clone(),
            Shape::Rounded,
        );
    }
    let not_streaming: Vec<usize> = validated
        .warnings()
        .iter()
        .map(|w| match w {
            ValidationWarning::StreamWithSubField { edge_index, .. }
            | ValidationWarning::StreamIntoAggregation { edge_index, .. }
            | ValidationWarning::StreamWithoutReference { edge_index, .. } => *edge_index,
        })
        .collect();
    for (i, edge) in dag.edges.iter().enumerate() {
        let field = validated
            .task_index(&edge.to)
            .and_then(|t| dag.tasks.get(t))
            .and_then(|t| t.input.as_reference())
            .filter(|r| r.source.tasks.ids().contains(&edge.from))
            .and_then(|r| r.source.field.clone())
            .unwrap_or_default();
        let (kind, label) = if !edge.is_stream_eligible() {
            (EdgeKind::Data, field)
        } else if not_streaming.contains(&i) {
            (EdgeKind::Data, join(&field, "stream ignored"))
        } else {
            (EdgeKind::Stream, join(&field, "stream"))
        };
        b.edge(&edge.from, &edge.to, kind, label);
    }
    b.finish()
}

fn join(field: &str, note: &str) -> String {
    if field.is_empty() {
        note.to_owned()
    } else {
        format!("{field}, {note}")
    }
}
