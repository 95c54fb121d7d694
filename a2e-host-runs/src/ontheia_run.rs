//! An Ontheia skill's document as a durable run ([`super::skill_run`]):
//! each step that leaves the engine ([`ontheia::is_journaled`]) is a node
//! keyed by its place in the run ([`ontheia::StepCall::key`]); its start is
//! journaled before it runs and its answer before any later step, template
//! or event sees it ([`ontheia::StepObserver`]).
//!
//! On resume, a step with a journaled answer takes it and does not run; a
//! step that started and left no answer runs again when that is safe — an
//! `llm` or `memory_search` step (nothing changed: an unanswered model call
//! is asked again), a `tool` step whose tool is `idempotent` — and otherwise
//! (`memory_write`, `rest_call`, `agent`, any other tool) fails with
//! `interrupted`, journaled, and the document's own error handling goes on
//! from there. Events already journaled are not journaled again.

use std::sync::Arc;

use a2e_journal::NodeOutcome;
use a2e_proto::ChainPhase;
use ontheia::{
    Document, ObserveFuture, Resume, RunOptions, StepAnswer, StepCall, StepObserver, StepReply,
    StepType,
};
use serde_json::Value;

use super::skill_run::SkillRun;
use crate::host::Host;

/// The code of a journaled step that failed.
const STEP_FAILED: &str = "step_failed";

/// Journals the steps of one run.
struct Observer(Arc<SkillRun>);

impl StepObserver for Observer {
    fn started(&self, call: &StepCall) -> ObserveFuture {
        let run = self.0.clone();
        let (key, attempt) = (call.key.clone(), call.attempt);
        Box::pin(async move {
            run.started(&key, attempt)
                .await
                .map_err(|e| format!("run journal: {e}"))
        })
    }

    fn finished(&self, call: &StepCall, reply: &StepReply) -> ObserveFuture {
        let run = self.0.clone();
        let (key, attempt) = (call.key.clone(), call.attempt);
        let outcome = match reply {
            Ok(answer) => NodeOutcome::output(serde_json::to_value(answer).unwrap_or(Value::Null)),
            Err(message) => NodeOutcome::error(STEP_FAILED, message.clone()),
        };
        Box::pin(async move {
            run.finished(&key, attempt, &outcome)
                .await
                .map_err(|e| format!("run journal: {e}"))
        })
    }
}

/// The step a node key names (its id follows the last `/` or `>`).
fn step_of<'a>(doc: &'a Document, key: &str) -> Option<&'a ontheia::Step> {
    let id = key.rsplit(['/', '>']).next().unwrap_or(key);
    doc.all_steps().into_iter().find(|s| s.id == id)
}

/// Whether a step that may have run when its host stopped runs again.
fn may_repeat(host: &Host, doc: &Document, key: &str) -> bool {
    let Some(step) = step_of(doc, key) else {
        return false;
    };
    match step.kind {
        StepType::Llm | StepType::MemorySearch => true,
        StepType::Tool => {
            let native = step
                .param_str("server")
                .is_none_or(|s| s == ontheia::NATIVE_TOOL_SERVER);
            native
                && step.param_str("tool").is_some_and(|name| {
                    host.registry()
                        .tool(&name)
                        .is_some_and(|entry| entry.def.idempotent)
                })
        }
        _ => false,
    }
}

/// The reply a journaled outcome stands for.
fn reply_of(outcome: &NodeOutcome) -> StepReply {
    match outcome {
        NodeOutcome::Output { output } => serde_json::from_value::<StepAnswer>(output.clone())
            .map_err(|e| format!("run journal: the step's answer does not load: {e}")),
        NodeOutcome::Error { message, .. } => Err(message.clone()),
    }
}

/// How a call runs `doc`: the token that cancels it, the engine's options
/// and the run's id — for durable run `run`, its cancellation
/// ([`SkillRun::cancel_token`]) and [`options`]; otherwise the call's own
/// token and a fresh run.
pub async fn prepare(
    host: &Host,
    run: Option<&Arc<SkillRun>>,
    cancel: &tokio_util::sync::CancellationToken,
    doc: &Document,
) -> (
    tokio_util::sync::CancellationToken,
    RunOptions,
    Option<String>,
) {
    match run {
        Some(run) => (
            run.cancel_token(cancel).await,
            options(host, run, doc).await,
            Some(run.run_id().to_string()),
        ),
        None => (cancel.clone(), RunOptions::default(), None),
    }
}

/// How `doc` runs as `run`: observed, and resumed from what an earlier
/// execution journaled (an interrupted step that must not run again is
/// journaled as `interrupted` here).
pub async fn options(host: &Host, run: &Arc<SkillRun>, doc: &Document) -> RunOptions {
    let mut resume = None;
    if run.is_resumed() {
        let mut r = Resume::new();
        for rec in run.records() {
            match &rec.outcome {
                Some(outcome) => {
                    r.finished(rec.node_id.clone(), reply_of(outcome));
                }
                None if may_repeat(host, doc, &rec.node_id) => {}
                None => {
                    let message = format!(
                        "step `{}` may have run when its host stopped, and it is not idempotent: \
                         it is not run again",
                        rec.node_id
                    );
                    let outcome = NodeOutcome::error(a2e_journal::INTERRUPTED, message.clone());
                    if let Err(e) = run.finished(&rec.node_id, rec.attempt, &outcome).await {
                        tracing::warn!(run = %run.run_id(), "run journal: {e}");
                    }
                    r.finished(rec.node_id.clone(), Err(message));
                }
            }
        }
        for identity in run.reported() {
            // A step's chat message is not journaled; its `done` stands for it.
            if let Some(key) = identity.strip_suffix(":done") {
                r.reported(format!("{key}:message"));
            }
            r.reported(identity);
        }
        resume = Some(r);
    }
    RunOptions {
        resume,
        observer: Some(Arc::new(Observer(run.clone()))),
    }
}

/// Journals one of the run's events (as `a2e_host_ontheia::event_json`
/// gives it); chat messages are not journaled.
pub fn journal_event(run: &SkillRun, event: &Value) {
    let text = |key: &str| event.get(key).and_then(Value::as_str);
    let Some(key) = text("key").or_else(|| text("step_id")) else {
        return;
    };
    let phase = match text("event") {
        Some("start") => ChainPhase::START,
        Some("done") => ChainPhase::DONE,
        Some("skip") => ChainPhase::SKIP,
        Some("error") => ChainPhase::ERROR,
        _ => return,
    };
    let output = text("output").map_or(Value::Null, Value::from);
    run.event(key, phase, output, text("error").unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_steps_and_outcomes_round_trip() {
        let doc = ontheia::parse(
            r#"{"steps": [{"id": "each", "type": "loop", "count": 2, "steps": [
                {"id": "ask", "type": "llm", "prompt": "hi"}]},
                {"id": "save", "type": "memory_write", "params": {"namespace": "n", "content": "c"}}]}"#,
        )
        .unwrap();
        assert_eq!(step_of(&doc, "each#2/ask").unwrap().kind, StepType::Llm);
        assert_eq!(step_of(&doc, "save").unwrap().kind, StepType::MemoryWrite);
        assert!(step_of(&doc, "nope").is_none());
        let answer = StepAnswer {
            output: Value::from("out"),
            ..StepAnswer::default()
        };
        let outcome = NodeOutcome::output(serde_json::to_value(&answer).unwrap());
        assert_eq!(reply_of(&outcome), Ok(answer));
        let failed = NodeOutcome::error(STEP_FAILED, "boom");
        assert_eq!(reply_of(&failed), Err("boom".to_owned()));
    }
}
