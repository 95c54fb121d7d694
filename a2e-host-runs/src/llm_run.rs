//! An LLM skill's agentic loop as a durable run ([`super::skill_run`]): each
//! model turn is a node `turn-N` whose answer is journaled before the loop
//! uses it, each tool call the model asks for a node `turn-N/<call id>`
//! whose result is journaled before it goes back to the model.
//!
//! On resume, the loop runs again from its opening messages: a turn with a
//! journaled answer takes it and the model is not asked (a model call
//! already answered is not paid for twice); a tool call with a journaled
//! result takes it. A turn that started and has no answer is asked again
//! (its answer never arrived). A tool call that started and has no result
//! runs again when its tool is `idempotent`; otherwise it is journaled as
//! `interrupted` and the model is told so in the tool's result, and
//! decides. Since every earlier answer is replayed, the conversation, and so
//! each node's key, is the one the first execution had.

use std::future::Future;
use std::sync::{Arc, Mutex};

use a2e_journal::NodeOutcome;
use a2e_llm::{
    CancellationToken, ChatProvider, ChatRequest, ChatResponse, DeltaSink, LlmError, LoopEvent,
    ToolExecutor, ToolSpec,
};
use a2e_proto::ChainPhase;
use serde_json::{Value, json};

use super::skill_run::SkillRun;
use crate::host::Host;
use crate::llm_tools::HostTools;

/// The code of a journaled tool call or model turn that failed.
const FAILED: &str = "failed";

/// Where the loop is: the turn and the tool call it runs (the loop is
/// sequential, and its events come before the calls they announce).
#[derive(Debug, Default)]
struct Cursor {
    turn: u32,
    call_id: String,
}

/// The journaling of one LLM skill run: its model, its tools and its events.
#[derive(Debug, Clone)]
pub struct LoopJournal {
    run: Arc<SkillRun>,
    cursor: Arc<Mutex<Cursor>>,
}

impl LoopJournal {
    /// The journaling of `run`.
    pub fn new(run: Arc<SkillRun>) -> Self {
        Self {
            run,
            cursor: Arc::default(),
        }
    }

    /// The run.
    pub fn run(&self) -> &Arc<SkillRun> {
        &self.run
    }

    fn cursor(&self) -> std::sync::MutexGuard<'_, Cursor> {
        self.cursor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Follows one loop event: moves the cursor and journals what it reports
    /// (text deltas are not journaled).
    pub fn observe(&self, event: &LoopEvent) {
        match event {
            LoopEvent::TurnStarted { turn, .. } => {
                self.cursor().turn = *turn;
                self.run
                    .event(&format!("turn-{turn}"), ChainPhase::START, Value::Null, "");
            }
            LoopEvent::Usage { turn, usage, .. } => self.run.event(
                &format!("turn-{turn}"),
                ChainPhase::DONE,
                json!({"usage": usage}),
                "",
            ),
            LoopEvent::ToolCall {
                turn,
                id,
                name,
                arguments,
            } => {
                self.cursor().call_id.clone_from(id);
                self.run.event(
                    &format!("turn-{turn}/{id}"),
                    ChainPhase::START,
                    json!({"tool": name, "arguments": arguments}),
                    "",
                );
            }
            LoopEvent::ToolResult {
                turn,
                id,
                is_error,
                content,
                ..
            } => {
                let node = format!("turn-{turn}/{id}");
                if *is_error {
                    self.run
                        .event(&node, ChainPhase::ERROR, Value::Null, content);
                } else {
                    self.run
                        .event(&node, ChainPhase::DONE, Value::from(content.as_str()), "");
                }
            }
            LoopEvent::TextDelta { .. } => {}
        }
    }

    /// The model `inner`, its turns journaled.
    pub fn model<'a, P: ChatProvider>(&'a self, inner: &'a P) -> JournaledModel<'a, P> {
        JournaledModel {
            inner,
            journal: self,
        }
    }

    /// The tools `inner`, their calls journaled and keyed.
    pub fn tools<'a>(&'a self, inner: &'a HostTools, host: &'a Host) -> JournaledTools<'a> {
        JournaledTools {
            inner,
            journal: self,
            host,
        }
    }
}

/// A model whose answers are journaled and, on resume, replayed.
pub struct JournaledModel<'a, P> {
    inner: &'a P,
    journal: &'a LoopJournal,
}

impl<P: ChatProvider> ChatProvider for JournaledModel<'_, P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        deltas: &mut dyn DeltaSink,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        let run = &self.journal.run;
        let node = format!("turn-{}", self.journal.cursor().turn);
        let failed = |message: String| LlmError::Transport {
            provider: self.inner.name().to_owned(),
            message: format!("run journal: {message}"),
        };
        if let Some(NodeOutcome::Output { output }) =
            run.record(&node).and_then(|r| r.outcome.as_ref())
        {
            return serde_json::from_value(output.clone())
                .map_err(|e| failed(format!("the answer of `{node}` does not load: {e}")));
        }
        run.started(&node, 1)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let answer = self.inner.chat(request, deltas, cancel).await;
        match &answer {
            Ok(resp) => {
                let output = serde_json::to_value(resp).map_err(|e| failed(e.to_string()))?;
                run.finished(&node, 1, &NodeOutcome::output(output))
                    .await
                    .map_err(|e| failed(e.to_string()))?;
            }
            // A cancelled call is not an answer: it counts as interrupted.
            Err(LlmError::Cancelled) => {}
            Err(e) => {
                let outcome = NodeOutcome::error(FAILED, e.to_string());
                if let Err(e) = run.finished(&node, 1, &outcome).await {
                    tracing::warn!(run = %run.run_id(), "run journal: {e}");
                }
            }
        }
        answer
    }
}

/// Tools whose results are journaled and, on resume, replayed; each call
/// carries its node's idempotency key `run_id/turn-N/<call id>/1`.
pub struct JournaledTools<'a> {
    inner: &'a HostTools,
    journal: &'a LoopJournal,
    host: &'a Host,
}

impl ToolExecutor for JournaledTools<'_> {
    fn tools(&self) -> Vec<ToolSpec> {
        self.inner.tools()
    }

    fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> impl Future<Output = Result<Value, String>> + Send {
        let node = {
            let cursor = self.journal.cursor();
            format!("turn-{}/{}", cursor.turn, cursor.call_id)
        };
        let name = name.to_owned();
        async move {
            let run = &self.journal.run;
            let failed = |e: a2e_journal::JournalError| format!("run journal: {e}");
            match run.record(&node) {
                Some(rec) => match &rec.outcome {
                    Some(NodeOutcome::Output { output }) => return Ok(output.clone()),
                    Some(NodeOutcome::Error { message, .. }) => return Err(message.clone()),
                    None => {
                        let idempotent = self
                            .host
                            .registry()
                            .tool(&name)
                            .is_some_and(|entry| entry.def.idempotent);
                        if !idempotent {
                            let message = format!(
                                "interrupted: `{name}` may have run when its host stopped, and it \
                                 is not idempotent: it is not run again"
                            );
                            let outcome =
                                NodeOutcome::error(a2e_journal::INTERRUPTED, message.clone());
                            run.finished(&node, rec.attempt, &outcome)
                                .await
                                .map_err(failed)?;
                            return Err(message);
                        }
                    }
                },
                None => run.started(&node, 1).await.map_err(failed)?,
            }
            let key = format!("{}/{node}/1", run.run_id());
            let result = self.inner.call_keyed(&name, arguments, Some(key)).await;
            let outcome = match &result {
                Ok(v) => NodeOutcome::output(v.clone()),
                Err(message) => NodeOutcome::error(FAILED, message.clone()),
            };
            run.finished(&node, 1, &outcome).await.map_err(failed)?;
            result
        }
    }
}
