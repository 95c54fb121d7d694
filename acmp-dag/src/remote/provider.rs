//! A provider reached over a [`Connection`]: connected on first use (and again after the
//! transport ended), its offers and features learned from its advertisement, liveness
//! watched through heartbeats.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::connection::{Connection, Notice};
use crate::layer1::methods;
use crate::serve::Offer;
use crate::{
    AcmpError, ErrorCode, InputChunks, Invocation, InvokeParams, InvokeResult, OutputSink,
    Provider, ProviderFeatures,
};

/// Heartbeats missed before a task is given up (the spec's "about 3 intervals").
pub const MISSED_HEARTBEATS: u32 = 3;

/// How long a provider that failed is passed over when others can serve.
pub const COOLDOWN: Duration = Duration::from_secs(30);

/// How long to wait for the -33004 of a cancelled task.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Opens a transport to a provider: the connection, fed by the transport until it ends.
pub trait Connector: Send + Sync + 'static {
    /// Connects; an error says why not (unreachable, refused, bad token).
    fn connect(&self) -> BoxFuture<'static, Result<Arc<Connection>, String>>;
}

/// Whether another provider may be tried with the same `task_id` after `error`: the
/// provider timed out, lost liveness, went away, or turned the task down before running
/// it (capability, price, feature).
pub fn is_retryable(error: &AcmpError) -> bool {
    matches!(
        error.code,
        ErrorCode::TIMEOUT
            | ErrorCode::CAPABILITY_NOT_FOUND
            | ErrorCode::BUDGET_EXCEEDED
            | ErrorCode::FEATURE_UNSUPPORTED
    ) || error
        .data
        .as_ref()
        .and_then(|d| d.extra.get("retryable"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The end of one call to a remote provider.
#[derive(Debug)]
pub struct Attempt {
    /// The result or the error.
    pub result: Result<InvokeResult, AcmpError>,
    /// Whether output chunks already went on (a retry would repeat them).
    pub streamed: bool,
    /// Whether input chunks were taken (a retry would lack them).
    pub consumed_input: bool,
}

struct Known {
    offers: Vec<Offer>,
    features: ProviderFeatures,
    unhealthy_until: Option<Instant>,
    /// Why the last connection could not be opened (cleared by one that was).
    unreachable: Option<Unreachable>,
}

/// A remote provider.
pub struct RemoteProvider {
    name: String,
    connector: Box<dyn Connector>,
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    known: Mutex<Known>,
}

impl std::fmt::Debug for RemoteProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteProvider")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl RemoteProvider {
    /// A provider named `name` (for logs and errors), reached through `connector`, offering
    /// `offers` with `features` until its advertisement says otherwise.
    pub fn new(
        name: impl Into<String>,
        connector: impl Connector,
        offers: Vec<Offer>,
        features: ProviderFeatures,
    ) -> Self {
        Self {
            name: name.into(),
            connector: Box::new(connector),
            conn: tokio::sync::Mutex::new(None),
            known: Mutex::new(Known {
                offers,
                features,
                unhealthy_until: None,
                unreachable: None,
            }),
        }
    }

    fn known(&self) -> MutexGuard<'_, Known> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The provider's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its offer of `capability`.
    pub fn offer(&self, capability: &str) -> Option<Offer> {
        self.known()
            .offers
            .iter()
            .find(|o| o.capability == capability)
            .cloned()
    }

    /// Every offer.
    pub fn offers(&self) -> Vec<Offer> {
        self.known().offers.clone()
    }

    /// Whether it has not failed within the last [`COOLDOWN`].
    pub fn is_healthy(&self) -> bool {
        self.known()
            .unhealthy_until
            .is_none_or(|until| Instant::now() >= until)
    }

    /// Why its last connection could not be opened, when it could not.
    pub fn unreachable(&self) -> Option<Unreachable> {
        self.known().unreachable.clone()
    }

    /// Passes it over for [`COOLDOWN`].
    pub fn mark_unhealthy(&self) {
        self.known().unhealthy_until = Some(Instant::now() + COOLDOWN);
    }

    /// The connection, opened (and the advertisement read) when there is none.
    pub async fn connection(&self) -> Result<Arc<Connection>, Unreachable> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref()
            && !conn.is_closed()
        {
            return Ok(Arc::clone(conn));
        }
        *slot = None;
        let conn = match self.connector.connect().await {
            Ok(conn) => {
                self.known().unreachable = None;
                conn
            }
            Err(e) => {
                self.mark_unhealthy();
                let unreachable = Unreachable {
                    provider: self.name.clone(),
                    reason: e,
                };
                self.known().unreachable = Some(unreachable.clone());
                return Err(unreachable);
            }
        };
        let init = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"acmp": {"version": crate::serve::ACMP_VERSION, "role": "buyer"}},
            "clientInfo": {"name": "a2e", "version": env!("CARGO_PKG_VERSION")},
        });
        let advert =
            tokio::time::timeout(Duration::from_secs(5), conn.request("initialize", init)).await;
        if let Ok(Ok(result)) = advert {
            // MCP servers that cannot put `acmp` at the top level advertise it
            // under `experimental`.
            if let Some(acmp) = result
                .pointer("/capabilities/acmp")
                .or_else(|| result.pointer("/capabilities/experimental/acmp"))
            {
                self.learn(acmp);
            }
            conn.notify("notifications/initialized", json!({}));
        }
        *slot = Some(Arc::clone(&conn));
        Ok(conn)
    }

    /// Takes offers and features from an advertisement (`capabilities.acmp`).
    pub fn learn(&self, acmp: &Value) {
        let mut known = self.known();
        if let Some(features) = acmp
            .get("features")
            .and_then(|f| serde_json::from_value(f.clone()).ok())
        {
            known.features = features;
        }
        if let Some(offers) = acmp
            .get("capabilities")
            .and_then(|o| serde_json::from_value::<Vec<Offer>>(o.clone()).ok())
            .filter(|o| !o.is_empty())
        {
            known.offers = offers;
        }
    }

    /// One call: the invoke, its input chunks forwarded, its output chunks and heartbeats
    /// passed to `output`, `acmp/cancel` when `cancel` fires, and the task given up with
    /// -33003 when no heartbeat came for [`MISSED_HEARTBEATS`] intervals.
    pub async fn call(
        &self,
        params: &InvokeParams,
        cancel: &CancellationToken,
        mut input: Option<&mut InputChunks>,
        output: &mut OutputSink,
    ) -> Attempt {
        let task_id = params.task_id.clone();
        let mut attempt = Attempt {
            result: Err(AcmpError::cancelled(&task_id)),
            streamed: false,
            consumed_input: false,
        };
        let conn = match self.connection().await {
            Ok(conn) => conn,
            Err(e) => {
                attempt.result =
                    Err(AcmpError::internal(&task_id, e.to_string()).with_data("retryable", true));
                return attempt;
            }
        };
        let interval = self
            .known()
            .features
            .heartbeat_interval_ms
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis);
        let mut notices = conn.route(&task_id);
        let mut route = Unroute {
            conn: &conn,
            task_id: &task_id,
            open: true,
        };
        let body = serde_json::to_value(params).unwrap_or(Value::Null);
        let response = conn.request(methods::INVOKE, body);
        tokio::pin!(response);
        let mut last_seen = Instant::now();
        let mut cancel_sent: Option<Instant> = None;
        let far = Duration::from_secs(86_400 * 365);
        loop {
            let liveness = last_seen + interval.map_or(far, |i| i * MISSED_HEARTBEATS);
            let give_up = cancel_sent.map_or(Instant::now() + far, |at| at + CANCEL_GRACE);
            tokio::select! {
                biased;
                answer = &mut response => {
                    route.open = false;
                    while let Ok(notice) = notices.try_recv() {
                        attempt.streamed |= pass(notice, output);
                    }
                    attempt.result = answer.and_then(|v| {
                        serde_json::from_value::<InvokeResult>(v).map_err(|e| {
                            AcmpError::internal(&task_id, format!("malformed acmp/result: {e}"))
                        })
                    });
                    return attempt;
                }
                Some(notice) = notices.recv() => {
                    last_seen = Instant::now();
                    attempt.streamed |= pass(notice, output);
                }
                chunk = next_chunk(&mut input) => match chunk {
                    Some(chunk) => {
                        attempt.consumed_input = true;
                        let last = chunk.is_final;
                        conn.notify(methods::INPUT_CHUNK, serde_json::to_value(chunk).unwrap_or_default());
                        if last {
                            input = None;
                        }
                    }
                    None => input = None,
                },
                () = cancel.cancelled(), if cancel_sent.is_none() => {
                    conn.notify(methods::CANCEL, json!({"task_id": task_id, "reason": "cancelled by the buyer"}));
                    route.open = false;
                    cancel_sent = Some(Instant::now());
                }
                () = tokio::time::sleep_until(give_up), if cancel_sent.is_some() => {
                    attempt.result = Err(AcmpError::cancelled(&task_id));
                    return attempt;
                }
                () = tokio::time::sleep_until(liveness), if cancel_sent.is_none() && interval.is_some() => {
                    conn.notify(methods::CANCEL, json!({"task_id": task_id, "reason": "liveness lost"}));
                    route.open = false;
                    self.mark_unhealthy();
                    let waited = interval.map_or(0, |i| (i * MISSED_HEARTBEATS).as_millis());
                    attempt.result = Err(AcmpError::timeout(
                        &task_id,
                        format!("liveness lost: provider {} sent no heartbeat for {waited} ms", self.name),
                    ).with_data("retryable", true));
                    return attempt;
                }
                () = conn.closed() => {
                    self.mark_unhealthy();
                    attempt.result = Err(AcmpError::internal(
                        &task_id,
                        format!("provider {} went away", self.name),
                    ).with_data("retryable", true));
                    return attempt;
                }
            }
        }
    }
}

/// Stops routing a task's notices when its call ends; a call dropped before its answer
/// (its run ended) sends `acmp/cancel`.
struct Unroute<'a> {
    conn: &'a Connection,
    task_id: &'a str,
    open: bool,
}

impl Drop for Unroute<'_> {
    fn drop(&mut self) {
        self.conn.unroute(self.task_id);
        if self.open {
            self.conn.notify(
                methods::CANCEL,
                json!({"task_id": self.task_id, "reason": "the buyer's run ended"}),
            );
        }
    }
}

async fn next_chunk(input: &mut Option<&mut InputChunks>) -> Option<crate::InputChunk> {
    match input {
        Some(chunks) => chunks.recv().await,
        None => std::future::pending().await,
    }
}

/// Passes a notice on; whether it was an output chunk.
fn pass(notice: Notice, output: &mut OutputSink) -> bool {
    match notice {
        Notice::Chunk(chunk) => {
            let _ = output.send_chunk(chunk.chunk, chunk.is_final);
            true
        }
        Notice::Heartbeat(beat) => {
            output.heartbeat(beat.progress, beat.detail);
            false
        }
    }
}

impl Provider for RemoteProvider {
    fn features(&self) -> ProviderFeatures {
        self.known().features
    }

    async fn invoke(&self, mut invocation: Invocation) -> Result<InvokeResult, AcmpError> {
        let attempt = self
            .call(
                &invocation.params,
                &invocation.cancel,
                invocation.input.as_mut(),
                &mut invocation.output,
            )
            .await;
        attempt.result
    }
}

/// A remote provider that could not be reached: its name and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("provider `{provider}` {}", said(reason))]
pub struct Unreachable {
    /// The provider's configured name.
    pub provider: String,
    /// Why its connection could not be opened: what the provider did
    /// (`refused the token (HTTP 401)`), or the transport's error.
    pub reason: String,
}

/// `reason` after the provider's name: a refusal reads as what the provider
/// did, anything else as why it could not be reached.
fn said(reason: &str) -> String {
    if reason.starts_with("refused ") {
        reason.to_owned()
    } else {
        format!("could not be reached: {reason}")
    }
}

/// What a connector says of a provider that turned the buyer's bearer token
/// down (HTTP `status`, 401 or 403), so that [`Unreachable`] names it.
pub fn refused_token(status: u16) -> String {
    format!("refused the token (HTTP {status})")
}
