//! Durable runs: a run that picks up what an earlier run of the same
//! document finished ([`Resume`]), and an observer told of each step that
//! leaves the engine before the run uses its answer ([`StepObserver`]).
//! Semantics: `docs/semantics.md`, "Durable runs".

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Outcome;
use crate::doc::StepType;
use crate::events::{Event, EventKind};

/// Whether steps of this type are journaled: the ones that leave the engine
/// (their answers come from the host and may cost or change something).
/// The engine's own steps (`transform`, `delay`, `branch`, `router`,
/// `parallel`, `loop`, `retry`) are run again on resume.
pub fn is_journaled(kind: StepType) -> bool {
    matches!(
        kind,
        StepType::Llm
            | StepType::Tool
            | StepType::MemorySearch
            | StepType::MemoryWrite
            | StepType::RestCall
            | StepType::Agent
    )
}

/// One execution of a journaled step, as an observer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepCall {
    /// The step's place in the run: its id under the loop iterations
    /// (`loop#2/`), retry attempts (`retry@3/`) and agent delegations
    /// (`agent>`) it runs in, e.g. `fetch_all#2/ask`. Unique within the run,
    /// the same in a resumed run.
    pub key: String,
    /// The step's id.
    pub step_id: String,
    /// Its type.
    pub step_type: StepType,
    /// The attempt of the innermost `retry` it runs in (1 outside retries).
    pub attempt: u32,
}

/// What a journaled step produced: what the run stores as its result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepAnswer {
    /// The text answer (or a `transform`'s JSON), already truncated.
    pub output: Value,
    /// The parsed JSON or the step's record.
    pub data: Value,
    /// `tool`: the whole MCP result; `rest_call`: `{status, ok, body, data}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Warnings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Text for the chat stream (non-silent answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl From<&Outcome> for StepAnswer {
    fn from(o: &Outcome) -> Self {
        Self {
            output: o.output.clone(),
            data: o.data.clone(),
            result: o.result.clone(),
            warnings: o.warnings.clone(),
            message: o.message.clone(),
        }
    }
}

impl From<StepAnswer> for Outcome {
    fn from(a: StepAnswer) -> Self {
        Self {
            output: a.output,
            data: a.data,
            result: a.result,
            warnings: a.warnings,
            message: a.message,
        }
    }
}

/// A step's answer, or its error message.
pub type StepReply = Result<StepAnswer, String>;

/// A boxed observer future; an `Err` fails the step with that message.
pub type ObserveFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>>;

/// Told of every journaled step of one run (see [`is_journaled`]):
/// [`started`](StepObserver::started) before the step runs (an `Err` fails
/// it without running it), [`finished`](StepObserver::finished) after it
/// and **before the run stores its result** (no later step, template or
/// event sees it before; an `Err` fails the step). A step ended by the run's
/// cancellation is not reported as finished: it counts as interrupted.
/// Steps whose answer a [`Resume`] gives in are not observed.
pub trait StepObserver: Send + Sync + 'static {
    /// The step is about to run.
    fn started(&self, call: &StepCall) -> ObserveFuture;

    /// The step ended.
    fn finished(&self, call: &StepCall, reply: &StepReply) -> ObserveFuture;
}

/// What a run resumed after its host stopped starts from: the answers of
/// journaled steps that finished (by [`StepCall::key`]), the events already
/// delivered, and the `seq` the next event takes. A journaled step that
/// started and left no answer simply runs again, with the same key and
/// attempt (both follow from the document). The document and globals must
/// be the earlier run's.
#[derive(Debug, Default)]
pub struct Resume {
    pub(crate) steps: HashMap<String, StepReply>,
    pub(crate) reported: HashSet<String>,
    pub(crate) next_seq: u64,
}

impl Resume {
    /// Nothing finished yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The step at `key` answered `reply`: it does not run again (an `Err`
    /// fails it with that message: how a host fails, with its `interrupted`
    /// error, a step that may have run and must not be repeated).
    pub fn finished(&mut self, key: impl Into<String>, reply: StepReply) -> &mut Self {
        self.steps.insert(key.into(), reply);
        self
    }

    /// The event with this [`Event::identity`] was delivered already.
    pub fn reported(&mut self, identity: impl Into<String>) -> &mut Self {
        self.reported.insert(identity.into());
        self
    }

    /// The `seq` of the resumed run's first event.
    pub fn next_seq(&mut self, seq: u64) -> &mut Self {
        self.next_seq = seq;
        self
    }
}

/// How one run is made durable. The default is a fresh run, unobserved.
#[derive(Default)]
pub struct RunOptions {
    /// What an earlier run finished.
    pub resume: Option<Resume>,
    /// Told of each journaled step's start and answer.
    pub observer: Option<Arc<dyn StepObserver>>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("resume", &self.resume)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

/// An event's identity: `<key>:<kind>`.
pub(crate) fn identity(key: &str, kind: EventKind) -> String {
    format!("{key}:{}", kind.as_str())
}

impl Event<'_> {
    /// The event's identity within its run, `<key>:<kind>` (`loop#1/ask:done`):
    /// the same for the event a resumed run would emit again (see
    /// [`Resume::reported`]).
    pub fn identity(&self) -> String {
        identity(self.key, self.kind)
    }
}

/// `path` + `id`, borrowed when the path is empty.
pub(crate) fn key<'a>(path: &str, id: &'a str) -> Cow<'a, str> {
    if path.is_empty() {
        Cow::Borrowed(id)
    } else {
        Cow::Owned(format!("{path}{id}"))
    }
}
