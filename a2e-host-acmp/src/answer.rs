//! A DAG run as an agent sees it over A2E: the wire extension `dag/req`
//! (an ACMP DAG sent by a session), each task's transitions as
//! `chain/event`s (`node_id` = the task) and the outcome as a `chain/resp`,
//! so that a DAG run is journaled, listed and re-attached to (`chain/attach`)
//! as a chain run is.

use a2e_proto::{ChainEvent, ChainPhase, ChainResponse, ErrorCode, Outputs};
use acmp_dag::{DagOutcome, DagStatus, Event, EventKind, TaskState, TransitionCause};
use serde_json::{Map, Value};

use super::{DagRunError, outcome_json};

/// The message type of the wire extension that runs an ACMP DAG:
/// `{"type": "dag/req", "id": …, "dag": {…}, "streaming": true}`.
pub const DAG_REQUEST_TYPE: &str = "dag/req";

/// The `chain/event` reporting `event` for request `req_id` with `seq`:
/// a task's start (`start`), completion (`done`), failure (`error`, with
/// its error) or cancellation (`skip`); `None` for the run's other events
/// (its start and end, fallbacks, heartbeats).
pub fn event_of(event: &Event, req_id: &str, seq: u64) -> Option<ChainEvent> {
    let EventKind::Transition {
        task_id, to, cause, ..
    } = &event.kind
    else {
        return None;
    };
    let phase = match to {
        TaskState::Running => ChainPhase::START,
        TaskState::Completed => ChainPhase::DONE,
        TaskState::Failed => ChainPhase::ERROR,
        TaskState::Cancelled => ChainPhase::SKIP,
        TaskState::Pending => return None,
    };
    let error = match cause {
        Some(TransitionCause::Failed(e)) => e.to_string(),
        Some(TransitionCause::Cancelled(r)) => format!("cancelled: {r}"),
        None => String::new(),
    };
    Some(ChainEvent {
        req_id: req_id.to_owned(),
        node_id: task_id.to_string(),
        phase,
        error,
        seq,
        ..ChainEvent::default()
    })
}

/// The state a task entered that a journaled `chain/event` phase reports
/// (the inverse of [`event_of`]): what a resumed run does not report again.
pub fn state_of(phase: &str) -> Option<TaskState> {
    Some(match phase {
        "start" => TaskState::Running,
        "done" => TaskState::Completed,
        "error" => TaskState::Failed,
        "skip" => TaskState::Cancelled,
        _ => return None,
    })
}

/// The `chain/resp` of a DAG run for request `req_id`: `success` when the
/// DAG completed, `outputs` the completed tasks' output data,
/// `final_output` the outcome (status, leaf outputs, every task's end),
/// `error` the code (`chain_node_error` with the first failed task,
/// `cancelled`, `schema_violation` for an invalid DAG, `runtime_error`)
/// and message.
pub fn answer_of(
    req_id: &str,
    dag_id: &str,
    result: &Result<DagOutcome, DagRunError>,
) -> ChainResponse {
    let mut resp = ChainResponse {
        req_id: req_id.to_owned(),
        chain_id: dag_id.to_owned(),
        ..ChainResponse::default()
    };
    let error = |code: ErrorCode, message: String, task: Option<&str>| {
        let mut error = Map::new();
        error.insert("code".into(), Value::from(code.as_str()));
        error.insert("message".into(), Value::from(message));
        if let Some(task) = task {
            error.insert("node_id".into(), Value::from(task));
        }
        error
    };
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            let code = match e {
                DagRunError::Invalid(_) => ErrorCode::SCHEMA_VIOLATION,
                DagRunError::Cancelled => ErrorCode::CANCELLED,
                _ => ErrorCode::RUNTIME_ERROR,
            };
            resp.error = Some(error(code, e.to_string(), None));
            return resp;
        }
    };
    let mut outputs = Outputs::new();
    for task in &outcome.tasks {
        if let Some(payload) = task.output() {
            outputs.push(task.task_id.clone(), payload.data.clone());
        }
    }
    resp.nodes_run = outcome
        .tasks
        .iter()
        .filter(|t| matches!(t.state(), TaskState::Completed | TaskState::Failed))
        .count() as u64;
    resp.outputs = outputs;
    resp.final_output = outcome_json(outcome);
    match outcome.status {
        DagStatus::Completed => resp.success = true,
        DagStatus::Cancelled => {
            resp.error = Some(error(ErrorCode::CANCELLED, "run cancelled".into(), None));
        }
        DagStatus::Failed => {
            let failed = outcome.tasks.iter().find_map(|t| t.error().map(|e| (t, e)));
            let (task, message) = failed.map_or((None, "the DAG failed".to_owned()), |(t, e)| {
                (Some(&*t.task_id), e.to_string())
            });
            resp.error = Some(error(ErrorCode::CHAIN_NODE_ERROR, message, task));
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_round_trip() {
        for state in [
            TaskState::Running,
            TaskState::Completed,
            TaskState::Failed,
            TaskState::Cancelled,
        ] {
            let kind = EventKind::Transition {
                task_id: "t".into(),
                from: TaskState::Pending,
                to: state,
                cause: None,
            };
            let event = Event {
                seq: 3,
                dag_id: "d".into(),
                kind,
            };
            let wire = event_of(&event, "r", 7).unwrap();
            assert_eq!(wire.seq, 7);
            assert_eq!(wire.node_id, "t");
            assert_eq!(state_of(wire.phase.as_str()), Some(state));
        }
        assert_eq!(state_of("nope"), None);
    }
}
