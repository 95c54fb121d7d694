//! `dag/req`: a session runs an ACMP DAG on the host (durably when the host
//! journals its runs): its tasks' transitions as `chain/event`s when it
//! asks for `streaming`, then the outcome as a `chain/resp`.

use std::sync::Arc;

use a2e_proto::{ChainEvent, DagRequest, ErrorCode};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Audited, Session};
use a2e_host_core::host::CallOptions;

/// Runs the DAG of a `dag/req` and answers it.
pub(super) async fn dag_request(session: &Arc<Session>, req: DagRequest) -> Audited {
    let DagRequest {
        id, dag, streaming, ..
    } = req;
    // The session's decoder read the envelope; the DAG is ACMP's to read.
    let dag = match acmp_dag::decode::from_value::<acmp_dag::Dag>(&dag) {
        Ok(dag) => dag,
        Err(e) => {
            let code = ErrorCode::SCHEMA_VIOLATION;
            session
                .send(a2e_proto::ErrorMessage::new(
                    &id,
                    code.clone(),
                    e.to_string(),
                ))
                .await;
            return Audited::ok("").outcome(false, Some(&code));
        }
    };
    let audited = Audited::ok(dag.dag_id.clone());
    let agent = session
        .state
        .lock()
        .map(|s| s.agent_id.clone())
        .unwrap_or_default();
    let (tx, mut rx) = mpsc::unbounded_channel::<ChainEvent>();
    let on_event = move |e: &ChainEvent| {
        if streaming {
            let _ = tx.send(e.clone());
        }
    };
    let options = CallOptions::new()
        .session(&session.id)
        .cancel(&session.cancel);
    let host = session.host.clone();
    let run = a2e_host_runs::run_dag(&host, dag, &id, options, &agent, on_event);
    tokio::pin!(run);
    let resp = loop {
        tokio::select! {
            biased;
            Some(event) = rx.recv() => {
                let _ = session.send(event).await;
            }
            resp = &mut run => break resp,
        }
    };
    while let Ok(event) = rx.try_recv() {
        let _ = session.send(event).await;
    }
    let code = resp
        .error
        .as_ref()
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .map(ErrorCode::new);
    let audited = audited.outcome(resp.success, code.as_ref());
    session.send(resp).await;
    audited
}
