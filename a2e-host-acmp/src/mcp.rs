//! ACMP beside MCP on the host's MCP server (`a2e serve --mcp-stdio`,
//! `--mcp-http`): the advertisement in `initialize` (under
//! `capabilities.experimental.acmp`: rmcp's typed capabilities have no room
//! for a top-level `acmp`), `acmp/invoke` answered as the MCP response with
//! its `acmp/streamChunk` and `acmp/heartbeat` notifications sent before it,
//! and `acmp/cancel` / `acmp/inputChunk` as notifications or requests.

use std::sync::Arc;

use a2e_mcp::rmcp::model::{CustomNotification, ErrorCode, ErrorData, ServerNotification};
use a2e_mcp::rmcp::{Peer, RoleServer};
use acmp_dag::serve::ProviderService;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

/// `capabilities.experimental` entries: `acmp` when a service is served.
pub fn experimental(service: Option<&ProviderService>) -> Map<String, Value> {
    let mut map = Map::new();
    if let Some(service) = service {
        map.insert("acmp".into(), service.advertisement());
    }
    map
}

/// Sends the service's messages to the client: notifications as MCP custom
/// notifications, in order; the response to `id` is returned.
async fn forward(
    mut rx: mpsc::UnboundedReceiver<Value>,
    peer: Peer<RoleServer>,
    id: Option<u64>,
) -> Option<Value> {
    while let Some(msg) = rx.recv().await {
        if let Some(method) = msg.get("method").and_then(Value::as_str) {
            let params = msg.get("params").cloned();
            let n = CustomNotification::new(method, params);
            let _ = peer
                .send_notification(ServerNotification::CustomNotification(n))
                .await;
        } else if id.is_some() && msg.get("id").and_then(Value::as_u64) == id {
            return Some(msg);
        }
    }
    None
}

/// An `acmp/*` request: the service's answer as the MCP response.
pub fn request(
    service: &Arc<ProviderService>,
    method: &str,
    params: Value,
    peer: Peer<RoleServer>,
) -> Option<BoxFuture<'static, Result<Value, ErrorData>>> {
    if !method.starts_with("acmp/") {
        return None;
    }
    let service = Arc::clone(service);
    let method = method.to_owned();
    Some(Box::pin(async move {
        let (tx, rx) = mpsc::unbounded_channel();
        service.handle(
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
            &tx,
        );
        drop(tx);
        let answer = forward(rx, peer, Some(1)).await;
        match answer {
            Some(msg) => match msg.get("error") {
                Some(error) => Err(ErrorData::new(
                    ErrorCode(
                        error
                            .get("code")
                            .and_then(Value::as_i64)
                            .and_then(|c| i32::try_from(c).ok())
                            .unwrap_or(-33099),
                    ),
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_owned(),
                    error.get("data").cloned(),
                )),
                None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
            },
            None => Err(ErrorData::internal_error("no answer", None)),
        }
    }))
}

/// An `acmp/*` notification.
pub fn notification(
    service: &Arc<ProviderService>,
    method: &str,
    params: Value,
    peer: Peer<RoleServer>,
) {
    if !method.starts_with("acmp/") {
        return;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    service.handle(
        json!({"jsonrpc": "2.0", "method": method, "params": params}),
        &tx,
    );
    drop(tx);
    tokio::spawn(forward(rx, peer, None));
}
