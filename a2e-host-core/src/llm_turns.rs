//! An LLM skill's model calls on its trace and in the metrics: a `chat
//! {model}` span from each turn's start to its token count (the model's
//! answer), `gen_ai.client.operation.duration` and
//! `gen_ai.client.token.usage` per call. Each model call carries its chat
//! span's W3C trace context as `traceparent` / `tracestate` headers
//! ([`TracedModel`]; [`chat_traced`] for the model calls outside skills).

use std::sync::Mutex;
use std::time::Instant;

use a2e_llm::{
    CancellationToken, ChatProvider, ChatRequest, ChatResponse, DeltaSink, LlmError, LoopEvent,
    ModelClient, ProviderKind,
};
use a2e_telemetry::{ModelCall, OpSpan, Telemetry, TraceContext};

/// The turns of one skill call.
pub struct ChatTurns {
    telemetry: Telemetry,
    /// `gen_ai.provider.name`: `openai` or `anthropic`.
    provider: &'static str,
    model: String,
    session_id: String,
    open: Mutex<Option<(OpSpan, Instant)>>,
}

impl ChatTurns {
    /// Turns of `model` on a provider of `kind`; `None` with telemetry off.
    pub fn new(
        telemetry: &Telemetry,
        kind: Option<ProviderKind>,
        model: &str,
        session_id: &str,
    ) -> Option<Self> {
        telemetry.is_enabled().then(|| ChatTurns {
            telemetry: telemetry.clone(),
            provider: match kind {
                Some(ProviderKind::Anthropic) => "anthropic",
                _ => "openai",
            },
            model: model.to_owned(),
            session_id: session_id.to_owned(),
            open: Mutex::new(None),
        })
    }

    /// Follows the loop: a turn opens a span, its usage closes it.
    pub fn observe(&self, event: &LoopEvent) {
        let Ok(mut open) = self.open.lock() else {
            return;
        };
        match event {
            LoopEvent::TurnStarted { .. } => {
                // A turn that ended without usage closes when the next starts.
                if let Some((span, started)) = open.take() {
                    self.finish(span, started, None);
                }
                let span = self
                    .telemetry
                    .chat(self.provider, &self.model)
                    .session(&self.session_id)
                    .start();
                *open = Some((span, Instant::now()));
            }
            LoopEvent::Usage { usage, .. } => {
                if let Some((span, started)) = open.take() {
                    self.finish(
                        span,
                        started,
                        Some((usage.input_tokens, usage.output_tokens)),
                    );
                }
            }
            _ => {}
        }
    }

    /// The loop ended; `error` is its code when it failed.
    pub fn end(&self, error: Option<&str>) {
        let Ok(mut open) = self.open.lock() else {
            return;
        };
        if let Some((span, started)) = open.take() {
            if let Some(code) = error {
                span.error(code, "");
            }
            self.finish(span, started, None);
        }
    }

    fn finish(&self, span: OpSpan, started: Instant, usage: Option<(u64, u64)>) {
        if let Some((input, output)) = usage {
            span.tokens(input, output);
        }
        self.telemetry.metrics().model_call(&ModelCall {
            provider: self.provider,
            request_model: &self.model,
            response_model: None,
            error: None,
            duration: started.elapsed(),
            usage,
        });
    }
}

impl ChatTurns {
    /// The trace context of the turn's open chat span.
    fn trace_context(&self) -> Option<TraceContext> {
        let open = self.open.lock().ok()?;
        let (span, _) = open.as_ref()?;
        TraceContext::of(span.span())
    }
}

/// `traceparent` (and `tracestate`) headers of `trace`, none without one.
pub fn trace_headers(trace: Option<TraceContext>) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    if let Some(trace) = trace {
        trace.inject(|name, value| headers.push((name, value)));
    }
    headers
}

/// A model call with the headers of `trace` (the current span's context when
/// the caller passes [`TraceContext::current`]).
pub async fn chat_traced(
    client: &ModelClient,
    request: &ChatRequest,
    deltas: &mut dyn DeltaSink,
    cancel: &CancellationToken,
    trace: Option<TraceContext>,
) -> Result<ChatResponse, LlmError> {
    let headers = trace_headers(trace);
    let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    client
        .chat_with_headers(request, deltas, cancel, &pairs)
        .await
}

/// A skill's model client whose calls carry the open chat span's trace
/// context: the model provider (or a gateway in front of it) joins the trace.
pub struct TracedModel<'a> {
    /// The configured client.
    pub client: &'a ModelClient,
    /// The turns, when telemetry is on.
    pub turns: Option<&'a ChatTurns>,
}

impl ChatProvider for TracedModel<'_> {
    fn name(&self) -> &str {
        self.client.name()
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        deltas: &mut dyn DeltaSink,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        let trace = self.turns.and_then(ChatTurns::trace_context);
        chat_traced(self.client, request, deltas, cancel, trace).await
    }
}
