//! The JSON-RPC 2.0 binding: `POST /` (and `POST` at any path ending in a
//! slash the card names), one request per body; a streaming operation
//! answers with server-sent events, each a JSON-RPC response of the
//! request's id.

use std::sync::Arc;

use a2a_proto::{A2aError, JsonRpcId, JsonRpcRequest, JsonRpcResponse};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use crate::A2aAgent;
use crate::ops::Answer;

fn error(id: JsonRpcId, error: &A2aError) -> Response {
    axum::Json(JsonRpcResponse::<serde_json::Value>::error(id, error)).into_response()
}

/// `POST /`.
pub(crate) async fn serve(
    State(agent): State<Arc<A2aAgent>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(refused) = crate::checks::check(&agent.host.config().auth_token, &headers) {
        let mut response = error(JsonRpcId::Null, &refused.error());
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return response;
    }
    // The id, when the body has one, for errors found before it is decoded.
    let early_id = || {
        serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .and_then(|id| serde_json::from_value::<JsonRpcId>(id).ok())
            .unwrap_or(JsonRpcId::Null)
    };
    if let Err(e) =
        crate::checks::json_body(&headers).and_then(|()| crate::checks::version(&headers))
    {
        return error(early_id(), &e);
    }
    let request = match JsonRpcRequest::decode(&body) {
        Ok(request) => request,
        Err(e) => return error(early_id(), &e),
    };
    let id = request.id.clone().unwrap_or(JsonRpcId::Null);
    let operation = match request.to_a2a() {
        Ok(operation) => operation,
        Err(e) => return error(id, &e),
    };
    match crate::ops::run(&agent, operation, &headers).await {
        Ok(Answer::Json(result)) => axum::Json(JsonRpcResponse::result(id, result)).into_response(),
        Ok(Answer::Stream(events)) => {
            let events = events.map(move |event| {
                Event::default().json_data(JsonRpcResponse::result(id.clone(), event))
            });
            Sse::new(events)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
        Err(e) => error(id, &e),
    }
}
