//! `chain/attach`: a session re-attaching to a journaled run (its missed
//! events, then the live ones, then the final answer). The session has
//! admitted it as every request (handshake, the `chains` capability).

use std::sync::Arc;

use a2e_proto::{ChainAttach, ErrorCode};

use super::{Audited, Session};

/// `chain/attach`: the run's events from `from_seq`, then its answer.
pub(super) async fn attach_request(session: &Arc<Session>, req: ChainAttach) -> Audited {
    use futures::StreamExt;
    let id = req.id.clone();
    let audited = Audited::ok(if req.run_id.is_empty() {
        req.chain_req_id.clone()
    } else {
        req.run_id.clone()
    });
    let agent = session
        .state
        .lock()
        .map(|s| s.agent_id.clone())
        .unwrap_or_default();
    let mut items = match a2e_host_runs::attach(&session.host, &agent, &req).await {
        Ok(items) => items,
        Err(e) => {
            session
                .send(a2e_proto::ErrorMessage::new(&id, e.code.clone(), e.message))
                .await;
            return audited.outcome(false, Some(&e.code));
        }
    };
    loop {
        let item = tokio::select! {
            item = items.next() => item,
            () = session.cancel.cancelled() => return audited.outcome(false, Some(&ErrorCode::CANCELLED)),
        };
        match item {
            Some(a2e_host_runs::AttachItem::Event(event)) => {
                session.send(event).await;
            }
            Some(a2e_host_runs::AttachItem::Answer(resp)) => {
                session.send(resp).await;
                return audited;
            }
            Some(a2e_host_runs::AttachItem::Failed(e)) => {
                session
                    .send(a2e_proto::ErrorMessage::new(&id, e.code.clone(), e.message))
                    .await;
                return audited.outcome(false, Some(&e.code));
            }
            None => {
                let code = ErrorCode::UNAVAILABLE;
                session
                    .send(a2e_proto::ErrorMessage::new(
                        &id,
                        code.clone(),
                        "the run's journal ended",
                    ))
                    .await;
                return audited.outcome(false, Some(&code));
            }
        }
    }
}
