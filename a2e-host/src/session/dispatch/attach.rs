//! `chain/attach`: a session re-attaching to a journaled run (its missed
//! events, then the live ones, then the final answer).

use std::sync::Arc;

use a2e_proto::{A2ECapability, ErrorCode};
use serde_json::Value;

use super::{Audited, Session};

/// Whether a `chain/attach` may run: the session has shaken hands, accepted
/// `capability`, and is not closing (refusals are answered).
pub(super) async fn admitted(
    session: &Arc<Session>,
    map: &serde_json::Map<String, Value>,
    capability: Option<A2ECapability>,
) -> bool {
    let id = map.get("id").and_then(Value::as_str).unwrap_or_default();
    let (handshaken, accepted, closing) = match session.state.lock() {
        Ok(s) => (
            s.handshaken,
            capability.is_none_or(|c| s.accepted.contains(&c)),
            s.shutting_down,
        ),
        Err(_) => (false, false, true),
    };
    let refusal = if !handshaken {
        Some((
            ErrorCode::UNAUTHORIZED,
            "send handshake/req first".to_owned(),
        ))
    } else if !accepted {
        Some((
            ErrorCode::UNAUTHORIZED,
            "capability `chains` was not accepted for this session".to_owned(),
        ))
    } else if closing {
        Some((
            ErrorCode::UNAVAILABLE,
            "the session is shutting down".to_owned(),
        ))
    } else {
        None
    };
    match refusal {
        Some((code, message)) => {
            session
                .send(a2e_proto::ErrorMessage::new(id, code, message))
                .await;
            false
        }
        None => true,
    }
}

/// `chain/attach`: the run's events from `from_seq`, then its answer.
pub(super) async fn attach_request(
    session: &Arc<Session>,
    map: serde_json::Map<String, Value>,
) -> Audited {
    use futures::StreamExt;
    let id = map
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let req = match crate::runs::AttachRequest::parse(&map) {
        Ok(req) => req,
        Err(e) => {
            session
                .send(a2e_proto::ErrorMessage::new(&id, e.code.clone(), e.message))
                .await;
            return Audited::ok("").outcome(false, Some(&e.code));
        }
    };
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
    let mut items = match crate::runs::attach(&session.host, &agent, &req).await {
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
            Some(crate::runs::AttachItem::Event(event)) => {
                session.send(event).await;
            }
            Some(crate::runs::AttachItem::Answer(resp)) => {
                session.send(resp).await;
                return audited;
            }
            Some(crate::runs::AttachItem::Failed(e)) => {
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
