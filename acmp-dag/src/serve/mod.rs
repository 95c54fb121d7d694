//! The provider side of Layer 1, independent of the transport: a [`ProviderService`] takes
//! the JSON-RPC messages of a connection (`acmp/invoke`, `acmp/cancel`, `acmp/inputChunk`)
//! and sends back results, `acmp/error`s, `acmp/streamChunk`s and `acmp/heartbeat`s,
//! following every rule of the spec page:
//!
//! * an unknown capability is -33002; a minimum price above `max_price_cu` is -33001 with
//!   `data.min_price_cu`; a stream the provider did not advertise is -33007 with
//!   `data.feature`; a proof other than `result-hash` is -33006;
//! * `timeout_ms` (30 s by default) is a hard deadline (-33003) that heartbeats never
//!   extend; heartbeats go out at the advertised interval while a task runs;
//! * `acmp/cancel` stops the task, which answers -33004;
//! * input chunks are put back in `seq` order, and nothing runs before the final one; a
//!   duplicate `seq`, a gap wider than [`REORDER_WINDOW`], a chunk after the final one or a
//!   payload over [`ServiceConfig::max_payload_bytes`] fails the task with -32602 naming
//!   the field;
//! * a streamed output goes out as chunks, then the result with `output_streamed: true`;
//!   every result carries `tokens_used` and `cost_cu` (≤ `max_price_cu`), and a
//!   `result-hash` proof when one is asked for;
//! * idempotency by `task_id`: a duplicate invoke while the task runs waits for the same
//!   outcome, after it ended it gets the stored outcome (with the whole output, also when
//!   the first answer was streamed). An invoke refused before it ran (bad params,
//!   capability, price, feature, proof) is not stored: the task may be invoked again.
//!
//! Bad messages get the JSON-RPC error they deserve (-32700, -32600, -32601, -32602 with
//! `data.task_id` and `data.field`); the service keeps serving.

mod inputs;
pub mod rpc;
mod task;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

pub use self::inputs::REORDER_WINDOW;
use self::inputs::Reorder;
use self::rpc::{INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, decode_params, invalid_params};
use crate::layer1::methods;
use crate::{
    AcmpCapabilities, AcmpError, Cancel, DynProvider, InputChunk, InvokeResult, Payload,
    ProviderFeatures, ProviderRef,
};

/// The ACMP version spoken.
pub const ACMP_VERSION: &str = "0.1.0";

/// Where a connection's outgoing messages go.
pub type Outbox = mpsc::UnboundedSender<Value>;

type Outcome = Result<InvokeResult, AcmpError>;

/// How an offer's `price_cu` applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pricing {
    /// `price_cu` per call.
    #[default]
    PerCall,
    /// `price_cu` per input token (the invoke's `input_tokens_est`, else estimated).
    PerInputToken,
}

/// One capability a provider offers, with its terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Offer {
    /// The capability tag.
    pub capability: String,
    /// Input types accepted (informational; empty: any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_types: Vec<String>,
    /// The output type produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_type: Option<String>,
    /// Price in CU (see `pricing`).
    #[serde(default)]
    pub price_cu: f64,
    /// Per call or per input token.
    #[serde(default)]
    pub pricing: Pricing,
    /// Quality tier: `S`, `A` or `B`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// Latency the provider aims for, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
}

impl Offer {
    /// An offer at `price_cu` per call.
    pub fn new(capability: impl Into<String>, price_cu: f64) -> Self {
        Self {
            capability: capability.into(),
            input_types: Vec::new(),
            output_type: None,
            price_cu,
            pricing: Pricing::PerCall,
            tier: None,
            latency_ms: None,
        }
    }

    /// The price of a call with `tokens` input tokens.
    pub fn price_for(&self, tokens: u64) -> f64 {
        match self.pricing {
            Pricing::PerCall => self.price_cu,
            Pricing::PerInputToken => self.price_cu * tokens as f64,
        }
    }
}

/// Input tokens of a payload as estimated when the buyer gives none: a token per four bytes
/// of its JSON `data`, rounded up.
pub fn estimate_tokens(input: Option<&Payload>) -> u64 {
    let bytes = match input.map(|p| &p.data) {
        None | Some(Value::Null) => 0,
        Some(Value::String(s)) => s.len(),
        Some(other) => other.to_string().len(),
    };
    (bytes as u64).div_ceil(4)
}

/// A provider's settings.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// The features advertised (and enforced).
    pub features: ProviderFeatures,
    /// `provider_id` of results, `agent:<name>:<region>`.
    pub provider_id: Option<String>,
    /// Largest input, or input chunk, in bytes of JSON; 4 MiB by default.
    pub max_payload_bytes: usize,
    /// Outcomes of finished tasks kept for duplicates; 10 000 by default (oldest dropped).
    pub keep_outcomes: usize,
    /// Characters per output chunk of a streamed text output; 256 by default.
    pub chunk_chars: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            features: ProviderFeatures {
                output_streaming: true,
                input_streaming: true,
                heartbeat_interval_ms: Some(5000),
            },
            provider_id: None,
            max_payload_bytes: 4 << 20,
            keep_outcomes: 10_000,
            chunk_chars: 256,
        }
    }
}

enum Entry {
    Running {
        done: watch::Receiver<Option<Outcome>>,
        cancel: CancellationToken,
        input: Option<Reorder>,
    },
    Done(Box<Outcome>),
}

#[derive(Default)]
struct State {
    tasks: HashMap<String, Entry>,
    finished: VecDeque<String>,
}

/// Serves a [`crate::Provider`]'s capabilities over Layer 1; shared by every connection
/// (idempotency and cancellation go by `task_id`, whichever connection sends them).
pub struct ProviderService {
    provider: ProviderRef,
    offers: HashMap<String, Offer>,
    config: ServiceConfig,
    state: Mutex<State>,
    /// Woken when an invoke registers its task (input chunks that came first wait on it).
    registered: tokio::sync::Notify,
}

impl std::fmt::Debug for ProviderService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderService")
            .field("offers", &self.offers.len())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ProviderService {
    /// A service offering `offers` (a later offer of the same capability replaces an
    /// earlier one), executed by `provider`.
    pub fn new(
        provider: impl DynProvider,
        offers: impl IntoIterator<Item = Offer>,
        config: ServiceConfig,
    ) -> Self {
        Self {
            provider: Arc::new(provider),
            offers: offers
                .into_iter()
                .map(|o| (o.capability.clone(), o))
                .collect(),
            config,
            state: Mutex::new(State::default()),
            registered: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The offers, in no particular order.
    pub fn offers(&self) -> impl Iterator<Item = &Offer> {
        self.offers.values()
    }

    /// The settings.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// `capabilities.acmp` of an MCP `initialize` result, with the offers under
    /// `capabilities` (an extension of the advertisement: tag, price, tier, latency).
    pub fn advertisement(&self) -> Value {
        let caps = AcmpCapabilities {
            version: ACMP_VERSION.to_owned(),
            role: "provider".to_owned(),
            accepts: vec![
                methods::INVOKE.to_owned(),
                methods::CANCEL.to_owned(),
                methods::INPUT_CHUNK.to_owned(),
            ],
            emits: vec![
                methods::STREAM_CHUNK.to_owned(),
                methods::HEARTBEAT.to_owned(),
            ],
            features: self.config.features,
        };
        let mut value = serde_json::to_value(caps).unwrap_or_else(|_| json!({}));
        let mut offers: Vec<&Offer> = self.offers.values().collect();
        offers.sort_by(|a, b| a.capability.cmp(&b.capability));
        if let Value::Object(map) = &mut value {
            map.insert("capabilities".into(), json!(offers));
            if let Some(id) = &self.config.provider_id {
                map.insert("provider_id".into(), Value::from(id.as_str()));
            }
        }
        value
    }

    /// Handles one message of text: a message that is not JSON is answered -32700.
    pub fn handle_text(self: &Arc<Self>, text: &str, out: &Outbox) {
        match serde_json::from_str::<Value>(text) {
            Ok(message) => self.handle(message, out),
            Err(e) => {
                let error = AcmpError::new(PARSE_ERROR, "", format!("not JSON: {e}"));
                let _ = out.send(rpc::error_response(&Value::Null, &error));
            }
        }
    }

    /// Handles one message; answers go to `out` (an invoke's answer when it ends: call
    /// within a tokio runtime).
    pub fn handle(self: &Arc<Self>, message: Value, out: &Outbox) {
        let id = message.get("id").cloned();
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            if message.get("result").is_some() || message.get("error").is_some() {
                return; // a response: nothing was asked
            }
            let error = AcmpError::new(
                INVALID_REQUEST,
                "",
                "not a JSON-RPC request: method: missing",
            )
            .with_data("field", "method");
            let _ = out.send(rpc::error_response(&id.unwrap_or(Value::Null), &error));
            return;
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let answer = |result: Result<Value, AcmpError>| respond(&id, method, result, out);
        match method {
            methods::INVOKE => match id {
                Some(id) => {
                    let service = Arc::clone(self);
                    let out = out.clone();
                    tokio::spawn(async move {
                        let outcome = service.invoke(params, &out).await;
                        let msg = match outcome {
                            Ok(r) => {
                                rpc::response(&id, serde_json::to_value(r).unwrap_or_default())
                            }
                            Err(e) => rpc::error_response(&id, &e),
                        };
                        let _ = out.send(msg);
                    });
                }
                None => tracing::debug!("acmp/invoke without an id dropped"),
            },
            methods::CANCEL => answer(self.cancel(&params)),
            methods::INPUT_CHUNK => match params.get("task_id").and_then(Value::as_str) {
                // A chunk may overtake its task's invoke: on MCP HTTP they are separate
                // POSTs, and an invoke is registered by the task it is spawned on. The
                // chunk waits for the task, at most `EARLY_CHUNK_WAIT`.
                Some(task) if !self.knows(task) => {
                    let (service, out, id) = (Arc::clone(self), out.clone(), id.clone());
                    let task = task.to_owned();
                    tokio::spawn(async move {
                        let registered = async {
                            loop {
                                let woken = service.registered.notified();
                                if service.knows(&task) {
                                    return;
                                }
                                woken.await;
                            }
                        };
                        let _ = tokio::time::timeout(EARLY_CHUNK_WAIT, registered).await;
                        respond(
                            &id,
                            methods::INPUT_CHUNK,
                            service.input_chunk(&params),
                            &out,
                        );
                    });
                }
                _ => answer(self.input_chunk(&params)),
            },
            "initialize" => answer(Ok(json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"acmp": self.advertisement()},
                "serverInfo": {"name": "a2e", "version": env!("CARGO_PKG_VERSION")},
            }))),
            "ping" => answer(Ok(json!({}))),
            other => answer(Err(AcmpError::new(
                METHOD_NOT_FOUND,
                rpc::task_id_of(&params),
                format!("unknown method `{other}`"),
            ))),
        }
    }

    /// `acmp/cancel`: the task stops and answers -33004. Unknown and finished tasks are
    /// left alone.
    fn cancel(&self, params: &Value) -> Result<Value, AcmpError> {
        let cancel: Cancel = decode_params(methods::CANCEL, params)?;
        let state = self.lock();
        let running = match state.tasks.get(&cancel.task_id) {
            Some(Entry::Running { cancel: token, .. }) => {
                token.cancel();
                true
            }
            _ => false,
        };
        tracing::info!(task = %cancel.task_id, running, "acmp/cancel");
        Ok(json!({"task_id": cancel.task_id, "cancelled": running}))
    }

    /// Whether an invoke of `task_id` was registered (running or done).
    fn knows(&self, task_id: &str) -> bool {
        self.lock().tasks.contains_key(task_id)
    }

    /// `acmp/inputChunk`: into the task's reorder buffer.
    fn input_chunk(&self, params: &Value) -> Result<Value, AcmpError> {
        let chunk: InputChunk = decode_params(methods::INPUT_CHUNK, params)?;
        let task_id = chunk.task_id.clone();
        let too_large = serde_json::to_vec(&chunk.chunk.data).map_or(0, |v| v.len())
            > self.config.max_payload_bytes;
        let mut state = self.lock();
        let Some(Entry::Running {
            input: Some(input), ..
        }) = state.tasks.get_mut(&task_id)
        else {
            return Err(invalid_params(
                &task_id,
                "task_id",
                format!(
                    "acmp/inputChunk: task_id: no running task \"{task_id}\" takes an input stream"
                ),
            ));
        };
        if input.is_closed() {
            return Err(invalid_params(
                &task_id,
                "task_id",
                format!("acmp/inputChunk: task_id: the input of \"{task_id}\" is closed"),
            ));
        }
        if too_large {
            let error = invalid_params(
                &task_id,
                "chunk",
                format!(
                    "acmp/inputChunk: chunk: larger than {} bytes",
                    self.config.max_payload_bytes
                ),
            );
            input.fail(error.clone());
            return Err(error);
        }
        input.push(chunk);
        Ok(json!({"task_id": task_id}))
    }
}

/// How long an `acmp/inputChunk` for a task not yet invoked waits for its invoke.
pub const EARLY_CHUNK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Answers a request with `id` (none for a notification, whose error is only logged).
fn respond(id: &Option<Value>, method: &str, result: Result<Value, AcmpError>, out: &Outbox) {
    if let Some(id) = id {
        let msg = match result {
            Ok(v) => rpc::response(id, v),
            Err(e) => rpc::error_response(id, &e),
        };
        let _ = out.send(msg);
    } else if let Err(e) = result {
        tracing::debug!(method, error = %e, "bad notification dropped");
    }
}
