//! `chain/fork`: a session runs one of its agent's journaled chain runs
//! again from a node, as a new run (docs/forks.md); answered like a chain.

use std::sync::Arc;

use a2e_host_core::host::CallOptions;
use a2e_host_core::outbound::EventStream;
use a2e_host_runs::fork::{Fork, prepare, run_fork};
use a2e_journal::RunId;
use a2e_proto::{ChainFork, ErrorCode};
use serde_json::Value;

use super::{Audited, Session};

/// Forks the run `req` names and answers with the new run's events and
/// answer; a fork that cannot start is refused with an `error`.
pub(super) async fn fork_request(
    session: &Arc<Session>,
    req: ChainFork,
    out: EventStream,
) -> Audited {
    let audited = Audited::ok(req.run_id.clone());
    let refuse = |code: ErrorCode, message: String| {
        let id = req.id.clone();
        async move {
            session
                .send(a2e_proto::ErrorMessage::new(&id, code.clone(), message))
                .await;
            code
        }
    };
    let parent = match RunId::parse(&req.run_id) {
        Ok(run) => run,
        Err(e) => {
            let code = refuse(ErrorCode::SCHEMA_VIOLATION, format!("run_id: {e}")).await;
            return audited.outcome(false, Some(&code));
        }
    };
    let agent = session
        .state
        .lock()
        .map(|s| s.agent_id.clone())
        .unwrap_or_default();
    let fork = Fork {
        parent,
        from: req.from_node.clone(),
        input: (!req.input.is_empty()).then(|| req.input.clone()),
        req_id: req.id.clone(),
        streaming: req.streaming,
        agent: Some(agent),
    };
    let prepared = match prepare(&session.host, fork).await {
        Ok(p) => p,
        Err(e) => {
            let code = refuse(e.code(), e.to_string()).await;
            return audited.outcome(false, Some(&code));
        }
    };
    let options = CallOptions::new()
        .session(&session.id)
        .events(out)
        .cancel(&session.cancel);
    let resp = run_fork(&session.host, prepared, options).await;
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
