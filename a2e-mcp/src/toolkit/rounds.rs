//! Multi-round tool results from an MCP 2026-07-28 server (SEP-2322): the
//! questions of an `input_required` result are answered as the server's own
//! requests would be in a session ([`ClientSide`]: sampling by the host's
//! model provider when the config allows it, elicitation by the server's
//! policy, roots: none), and the call is sent again, as a new request, with
//! the answers and the `requestState` exactly as the server gave it.
#![allow(deprecated)] // sampling and roots: answered for servers of every version

use rmcp::ClientHandler;
use rmcp::RoleClient;
use rmcp::model::{ErrorData, InputRequest, InputRequests, InputResponses, RequestId};
use rmcp::service::{Peer, RequestContext};
use serde_json::Value;

use super::client_side::ClientSide;

/// How many `input_required` rounds a call may take before it fails (the
/// official SDKs' limit).
pub(super) const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// The answers to `requests`, by key.
pub(super) async fn answer(
    handler: &ClientSide,
    peer: &Peer<RoleClient>,
    requests: InputRequests,
) -> Result<InputResponses, ErrorData> {
    let answers = requests.into_iter().map(|(key, request)| async move {
        let context = RequestContext::new(RequestId::String(key.clone().into()), peer.clone());
        let answer = match request {
            InputRequest::CreateMessage(r) => {
                to_json(handler.create_message(r.params, context).await?)
            }
            InputRequest::Elicitation(r) => {
                to_json(handler.create_elicitation(r.params, context).await?)
            }
            _ => to_json(handler.list_roots(context).await?),
        };
        Ok::<_, ErrorData>((key, answer))
    });
    futures::future::try_join_all(answers)
        .await
        .map(|a| a.into_iter().collect())
}

fn to_json<T: serde::Serialize>(answer: T) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}
