//! One JSON-RPC connection to a provider: ids for requests, responses matched to them,
//! notifications routed by `task_id`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::layer1::methods;
use crate::serve::Outbox;
use crate::{AcmpError, Heartbeat, StreamChunk};

/// A message of a provider about one task.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// An `acmp/streamChunk`.
    Chunk(StreamChunk),
    /// An `acmp/heartbeat`.
    Heartbeat(Heartbeat),
}

type Reply = oneshot::Sender<Result<Value, AcmpError>>;

/// A connection to one provider. Dropping it does not close the transport: call
/// [`Connection::close`] (the transport does when it ends).
#[derive(Debug)]
pub struct Connection {
    out: Outbox,
    pending: Mutex<HashMap<u64, Reply>>,
    routes: Mutex<HashMap<String, mpsc::UnboundedSender<Notice>>>,
    next_id: AtomicU64,
    closed: CancellationToken,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Connection {
    /// A connection whose outgoing messages go to `out`.
    pub fn new(out: Outbox) -> Self {
        Self {
            out,
            pending: Mutex::new(HashMap::new()),
            routes: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: CancellationToken::new(),
        }
    }

    /// Takes one message of text from the provider (what is not JSON is dropped).
    pub fn deliver_text(&self, text: &str) {
        match serde_json::from_str(text) {
            Ok(message) => self.deliver(message),
            Err(e) => tracing::debug!("a provider sent something that is not JSON: {e}"),
        }
    }

    /// Takes one message from the provider.
    pub fn deliver(&self, message: Value) {
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let notice = match method {
                methods::STREAM_CHUNK => serde_json::from_value(params).ok().map(Notice::Chunk),
                methods::HEARTBEAT => serde_json::from_value(params).ok().map(Notice::Heartbeat),
                _ => None,
            };
            if let Some(notice) = notice {
                let task_id = match &notice {
                    Notice::Chunk(c) => &c.task_id,
                    Notice::Heartbeat(h) => &h.task_id,
                };
                if let Some(tx) = lock(&self.routes).get(task_id) {
                    let _ = tx.send(notice);
                }
            } else if let Some(id) = message.get("id") {
                // A request of the provider's (an MCP ping, say): nothing to offer.
                let reply = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id,
                           "error": {"code": -32601, "message": format!("unknown method `{method}`")}})
                };
                let _ = self.out.send(reply);
            }
            return;
        }
        let Some(id) = message.get("id").and_then(Value::as_u64) else {
            return;
        };
        let Some(reply) = lock(&self.pending).remove(&id) else {
            return;
        };
        let answer = if let Some(error) = message.get("error") {
            Err(serde_json::from_value::<AcmpError>(error.clone())
                .unwrap_or_else(|_| AcmpError::internal("", format!("malformed error: {error}"))))
        } else {
            Ok(message.get("result").cloned().unwrap_or(Value::Null))
        };
        let _ = reply.send(answer);
    }

    /// The transport ended: every request waiting fails, and the connection is closed.
    pub fn close(&self) {
        self.closed.cancel();
        lock(&self.pending).clear();
        lock(&self.routes).clear();
    }

    /// Whether the transport ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled() || self.out.is_closed()
    }

    /// Resolves when the transport ends.
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }

    /// Sends a request and waits for its response; a closed connection is an error with
    /// `data.retryable: true`.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, AcmpError> {
        let task_id = crate::serve::rpc::task_id_of(&params).to_owned();
        let gone = || {
            AcmpError::internal(&task_id, "the provider's connection closed")
                .with_data("retryable", true)
        };
        if self.is_closed() {
            return Err(gone());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.out.send(msg).is_err() {
            lock(&self.pending).remove(&id);
            return Err(gone());
        }
        tokio::select! {
            answer = rx => answer.unwrap_or_else(|_| Err(gone())),
            () = self.closed.cancelled() => Err(gone()),
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        let _ = self
            .out
            .send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Routes the notices about `task_id` to the returned receiver (until
    /// [`Connection::unroute`]).
    pub fn route(&self, task_id: &str) -> mpsc::UnboundedReceiver<Notice> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.routes).insert(task_id.to_owned(), tx);
        rx
    }

    /// Stops routing the notices about `task_id`.
    pub fn unroute(&self, task_id: &str) {
        lock(&self.routes).remove(task_id);
    }
}
