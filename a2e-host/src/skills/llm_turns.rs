//! An LLM skill's model calls on its trace and in the metrics: a `chat
//! {model}` span from each turn's start to its token count (the model's
//! answer), `gen_ai.client.operation.duration` and
//! `gen_ai.client.token.usage` per call.

use std::sync::Mutex;
use std::time::Instant;

use a2e_llm::{LoopEvent, ProviderKind};
use a2e_telemetry::{ModelCall, OpSpan, Telemetry};

/// The turns of one skill call.
pub(crate) struct ChatTurns {
    telemetry: Telemetry,
    /// `gen_ai.provider.name`: `openai` or `anthropic`.
    provider: &'static str,
    model: String,
    session_id: String,
    open: Mutex<Option<(OpSpan, Instant)>>,
}

impl ChatTurns {
    /// Turns of `model` on a provider of `kind`; `None` with telemetry off.
    pub(crate) fn new(
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
    pub(crate) fn observe(&self, event: &LoopEvent) {
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
    pub(crate) fn end(&self, error: Option<&str>) {
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
