//! One `acmp/invoke` on the provider side: checks before running, idempotency, the run
//! under its deadline with heartbeats, and the result's usage, proof and streaming.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::inputs::{Reorder, assemble};
use super::rpc::{decode_params, invalid_params, notification};
use super::{Entry, Offer, Outbox, Outcome, ProviderService, estimate_tokens};
use crate::layer1::methods;
use crate::{AcmpError, ErrorCode, Invocation, InvokeParams, InvokeResult, Payload, Proof};

/// The proof method served.
pub const RESULT_HASH: &str = "result-hash";

enum Role {
    Run {
        tx: watch::Sender<Option<Outcome>>,
        cancel: CancellationToken,
        input: Option<oneshot::Receiver<Result<Vec<Payload>, AcmpError>>>,
        offer: Offer,
    },
    Join(watch::Receiver<Option<Outcome>>),
    Done(Box<Outcome>),
}

impl ProviderService {
    /// Answers one `acmp/invoke`.
    pub(super) async fn invoke(&self, raw: Value, out: &Outbox) -> Outcome {
        let params: InvokeParams = decode_params(methods::INVOKE, &raw)?;
        let task_id = params.task_id.clone();
        let role = {
            let mut state = self.lock();
            match state.tasks.get(&task_id) {
                Some(Entry::Done(outcome)) => Role::Done(outcome.clone()),
                Some(Entry::Running { done, .. }) => Role::Join(done.clone()),
                None => {
                    let offer = self.check(&params)?;
                    let (tx, done) = watch::channel(None);
                    let cancel = CancellationToken::new();
                    let (input, reorder) = if params.is_input_stream() {
                        let (itx, irx) = oneshot::channel();
                        (Some(irx), Some(Reorder::new(&task_id, itx)))
                    } else {
                        (None, None)
                    };
                    state.tasks.insert(
                        task_id.clone(),
                        Entry::Running {
                            done,
                            cancel: cancel.clone(),
                            input: reorder,
                        },
                    );
                    Role::Run {
                        tx,
                        cancel,
                        input,
                        offer,
                    }
                }
            }
        };
        if matches!(role, Role::Run { .. }) {
            self.registered.notify_waiters();
        }
        match role {
            Role::Done(outcome) => *outcome,
            Role::Join(mut done) => match done.wait_for(Option::is_some).await {
                Ok(outcome) => outcome
                    .clone()
                    .unwrap_or_else(|| Err(AcmpError::internal(&task_id, "no outcome"))),
                Err(_) => Err(AcmpError::internal(&task_id, "the running task vanished")),
            },
            Role::Run {
                tx,
                cancel,
                input,
                offer,
            } => {
                tracing::info!(task = %task_id, capability = %params.capability, stream = params.is_stream(), input_stream = params.is_input_stream(), "acmp/invoke");
                let stream = params.is_stream();
                let outcome = self.run(params, &offer, &cancel, input, out).await;
                {
                    let mut state = self.lock();
                    state
                        .tasks
                        .insert(task_id.clone(), Entry::Done(Box::new(outcome.clone())));
                    state.finished.push_back(task_id.clone());
                    while state.finished.len() > self.config.keep_outcomes {
                        if let Some(old) = state.finished.pop_front() {
                            state.tasks.remove(&old);
                        }
                    }
                }
                tx.send_replace(Some(outcome.clone()));
                match outcome {
                    Ok(result) if stream => Ok(self.stream_out(result, out)),
                    other => other,
                }
            }
        }
    }

    /// The checks before a task runs; the offer it runs under.
    fn check(&self, params: &InvokeParams) -> Result<Offer, AcmpError> {
        let task_id = &params.task_id;
        if task_id.is_empty() {
            return Err(invalid_params(
                "",
                "task_id",
                "acmp/invoke: task_id: must not be empty",
            ));
        }
        if let Err(e) = params.check() {
            return Err(invalid_params(
                task_id,
                "input",
                format!("acmp/invoke: {e}"),
            ));
        }
        if let Some(input) = &params.input {
            let bytes = serde_json::to_vec(&input.data).map_or(0, |v| v.len());
            if bytes > self.config.max_payload_bytes {
                return Err(invalid_params(
                    task_id,
                    "input",
                    format!(
                        "acmp/invoke: input: larger than {} bytes",
                        self.config.max_payload_bytes
                    ),
                ));
            }
        }
        let Some(offer) = self.offers.get(&params.capability) else {
            return Err(AcmpError::capability_not_found(task_id, &params.capability));
        };
        let features = self.config.features;
        if params.is_stream() && !features.output_streaming {
            return Err(AcmpError::feature_unsupported(task_id, "output_streaming"));
        }
        if params.is_input_stream() && !features.input_streaming {
            return Err(AcmpError::feature_unsupported(task_id, "input_streaming"));
        }
        if let Some(method) = params.proof_method.as_deref()
            && method != RESULT_HASH
        {
            return Err(AcmpError::new(
                ErrorCode::PROOF_UNSUPPORTED,
                task_id,
                format!("proof method not supported: {method}"),
            )
            .with_data("proof_method", method));
        }
        let min = offer.price_for(tokens(params));
        if let Some(max) = params.max_price_cu
            && min > max
        {
            return Err(AcmpError::budget_exceeded(task_id, min));
        }
        Ok(offer.clone())
    }

    /// Runs the task under its deadline, with heartbeats; the result with usage and proof.
    async fn run(
        &self,
        mut params: InvokeParams,
        offer: &Offer,
        cancel: &CancellationToken,
        input: Option<oneshot::Receiver<Result<Vec<Payload>, AcmpError>>>,
        out: &Outbox,
    ) -> Outcome {
        let task_id = params.task_id.clone();
        let timeout_ms = params.timeout_ms();
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let work = async {
            if let Some(input) = input {
                let chunks = input
                    .await
                    .map_err(|_| AcmpError::internal(&task_id, "the input stream vanished"))??;
                params.input = Some(assemble(chunks));
                params.input_stream = None;
            }
            let tokens = tokens(&params);
            let mut call = params.clone();
            call.stream = None;
            let mut invocation = Invocation::new(call);
            invocation.cancel = cancel.child_token();
            let result = self.provider.invoke_dyn(invocation).await?;
            Ok::<_, AcmpError>((result, tokens))
        };
        let heartbeats = async {
            let Some(ms) = self
                .config
                .features
                .heartbeat_interval_ms
                .filter(|&ms| ms > 0)
            else {
                return std::future::pending().await;
            };
            let mut every = tokio::time::interval(Duration::from_millis(ms));
            loop {
                every.tick().await;
                let beat = json!({"task_id": task_id, "detail": "running"});
                let _ = out.send(notification(methods::HEARTBEAT, beat));
            }
        };
        let ran = tokio::select! {
            ran = work => ran,
            () = heartbeats => Err(AcmpError::internal(&task_id, "heartbeats stopped")),
            () = tokio::time::sleep_until(deadline) => {
                cancel.cancel();
                Err(AcmpError::timeout(&task_id, format!("timeout_ms {timeout_ms} exceeded")))
            }
            () = cancel.cancelled() => Err(AcmpError::cancelled(&task_id)),
        };
        let (mut result, tokens) = ran.map_err(|mut e| {
            if let Some(data) = &mut e.data {
                data.task_id.clone_from(&task_id);
            }
            e
        })?;
        result.task_id = task_id;
        if result.tokens_used == 0 {
            result.tokens_used = tokens;
        }
        let price = offer.price_for(tokens);
        result.cost_cu = params.max_price_cu.map_or(price, |max| price.min(max));
        result.provider_id.clone_from(&self.config.provider_id);
        if result.output.is_none() {
            return Err(AcmpError::internal(&result.task_id, "no output"));
        }
        if params.proof_method.as_deref() == Some(RESULT_HASH)
            && let Some(output) = &result.output
        {
            result.proof = Some(result_hash(output));
        }
        Ok(result)
    }

    /// Sends a result's output as `acmp/streamChunk`s; the result to answer with.
    fn stream_out(&self, mut result: InvokeResult, out: &Outbox) -> InvokeResult {
        let Some(output) = result.output.take() else {
            return result;
        };
        let chunks = split(output, self.config.chunk_chars.max(1));
        let last = chunks.len().saturating_sub(1);
        for (seq, chunk) in chunks.into_iter().enumerate() {
            let params = json!({
                "task_id": result.task_id,
                "seq": seq,
                "chunk": chunk,
                "final": seq == last,
            });
            let _ = out.send(notification(methods::STREAM_CHUNK, params));
        }
        result.output_streamed = Some(true);
        result
    }
}

/// The invoke's input tokens: the buyer's estimate, else ours.
fn tokens(params: &InvokeParams) -> u64 {
    params
        .input_tokens_est
        .unwrap_or_else(|| estimate_tokens(params.input.as_ref()))
}

/// A text output in pieces of `n` characters; any other output as one chunk.
fn split(output: Payload, n: usize) -> Vec<Payload> {
    match output.data.as_str() {
        Some(text) if output.kind == "text" && !text.is_empty() => {
            let chars: Vec<char> = text.chars().collect();
            chars
                .chunks(n)
                .map(|c| Payload::text(c.iter().collect::<String>()))
                .collect()
        }
        _ => vec![output],
    }
}

/// The `result-hash` proof: `sha256:` and the hex SHA-256 of the output's compact JSON
/// (`{"type":…,"data":…}`, members in the order they were produced).
pub fn result_hash(output: &Payload) -> Proof {
    let bytes = serde_json::to_vec(output).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let mut fields = serde_json::Map::new();
    fields.insert("hash".into(), Value::String(format!("sha256:{hex}")));
    Proof {
        method: RESULT_HASH.to_owned(),
        fields,
    }
}
