//! Runs a validated document: steps in order, `when`, edges, stored results,
//! events, cancellation. Leaf steps call the [`Backend`]; control steps are
//! the engine's own (`control.rs`).

mod config;
mod control;
mod durable;
mod leaf;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use config::{EngineConfig, truncate_chars};
pub use durable::{
    ObserveFuture, Resume, RunOptions, StepAnswer, StepCall, StepObserver, StepReply, is_journaled,
};

use crate::backend::Backend;
use crate::condition;
use crate::context::Globals;
use crate::doc::{Document, Step, StepType};
use crate::error::{RunError, StepError};
use crate::events::{Event, EventKind, OntheiaEventSink};
use crate::result::{StepResult, StepStatus};
use crate::template::{Expander, Vars};
use crate::validate::validate;

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs Ontheia chains over a [`Backend`].
#[derive(Debug, Clone)]
pub struct Engine<B> {
    backend: B,
    config: EngineConfig,
}

/// What a run leaves: every stored result, and the edges' final outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutcome {
    /// Stored results by step id (skipped steps have none).
    pub results: HashMap<String, StepResult>,
    /// Step ids in the order their results were first stored.
    pub order: Vec<String>,
    /// The id whose result was stored last.
    pub last: Option<String>,
    /// Values mapped by edges `to: "output"`.
    pub outputs: Map<String, Value>,
}

impl RunOutcome {
    /// One step's result.
    pub fn result(&self, id: &str) -> Option<&StepResult> {
        self.results.get(id)
    }

    /// The last stored result (what an agent delegation returns).
    pub fn last_result(&self) -> Option<&StepResult> {
        self.last.as_deref().and_then(|id| self.results.get(id))
    }

    /// Whether any stored result failed.
    pub fn any_failed(&self) -> bool {
        self.results
            .values()
            .any(|r| r.status == StepStatus::Failed)
    }

    /// All results as one JSON object `{id: result}` in storage order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        for id in &self.order {
            if let Some(r) = self.results.get(id) {
                m.insert(id.clone(), r.to_value());
            }
        }
        Value::Object(m)
    }
}

/// Target id → (source id, map) of the edges into it.
type EdgesIn<'a> = HashMap<&'a str, Vec<(&'a str, &'a Map<String, Value>)>>;

/// Shared by a run and the sub-chains of its agents.
struct Run<'r> {
    sink: Mutex<Box<dyn OntheiaEventSink + 'r>>,
    seq: AtomicU64,
    cancel: CancellationToken,
    /// Answers of journaled steps an earlier run finished, by key.
    replay: Mutex<HashMap<String, StepReply>>,
    /// Identities of events an earlier run delivered.
    reported: HashSet<String>,
    /// Told of each journaled step.
    observer: Option<Arc<dyn StepObserver>>,
}

/// One chain being run (the top one or an agent's).
struct Cx<'a, 'r> {
    run: &'a Run<'r>,
    globals: Map<String, Value>,
    /// target id → (source, map) of incoming edges.
    edges_in: EdgesIn<'a>,
    state: Mutex<RunOutcome>,
    /// (step, warning) in the order they arose.
    warnings: Mutex<Vec<(String, String)>>,
    depth: usize,
}

/// Per-scope settings: inside a `retry`, local variables, and where the
/// scope is in the run (for the keys of its steps).
#[derive(Debug, Clone, Default)]
struct Frame {
    in_retry: bool,
    locals: Map<String, Value>,
    /// The prefix of the keys of steps in this scope (`loop#2/`, …).
    path: Arc<str>,
    /// The attempt of the innermost `retry` (0 outside retries).
    attempt: u32,
}

/// What a step produced.
#[derive(Debug, Default)]
struct Outcome {
    output: Value,
    data: Value,
    result: Option<Value>,
    warnings: Vec<String>,
    /// Text for the chat stream (non-silent answers).
    message: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<B: Backend> Engine<B> {
    /// An engine with the default configuration.
    pub fn new(backend: B) -> Self {
        Engine {
            backend,
            config: EngineConfig::default(),
        }
    }

    /// An engine with a configuration.
    pub fn with_config(backend: B, config: EngineConfig) -> Self {
        Engine { backend, config }
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Validates `doc`, then runs it. Failed steps are recorded in the
    /// outcome (the chain goes on); the run itself fails only when the
    /// document is invalid or `cancel` fires.
    pub async fn run(
        &self,
        doc: &Document,
        globals: &Globals,
        sink: impl OntheiaEventSink,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        self.run_with(doc, globals, sink, cancel, RunOptions::default())
            .await
    }

    /// [`Engine::run`] made durable: resumed from what an earlier run of the
    /// same document finished, its journaled steps observed (see
    /// [`RunOptions`] and `docs/semantics.md`).
    pub async fn run_with(
        &self,
        doc: &Document,
        globals: &Globals,
        sink: impl OntheiaEventSink,
        cancel: CancellationToken,
        options: RunOptions,
    ) -> Result<RunOutcome, RunError> {
        validate(doc)?;
        let (replay, reported, next_seq) = match options.resume {
            Some(r) => (r.steps, r.reported, r.next_seq),
            None => Default::default(),
        };
        let run = Run {
            sink: Mutex::new(Box::new(sink)),
            seq: AtomicU64::new(next_seq),
            cancel,
            replay: Mutex::new(replay),
            reported,
            observer: options.observer,
        };
        let globals = globals.to_map(self.config.clock.now(), self.config.utc_offset_minutes);
        match self.run_chain(&run, doc, globals, 0, Arc::from("")).await {
            Ok(outcome) => Ok(outcome),
            Err(_) => Err(RunError::Cancelled),
        }
    }

    /// Runs one chain at a delegation depth; `Err` only when cancelled.
    fn run_chain<'a, 'r>(
        &'a self,
        run: &'a Run<'r>,
        doc: &'a Document,
        globals: Map<String, Value>,
        depth: usize,
        path: Arc<str>,
    ) -> BoxFut<'a, Result<RunOutcome, StepError>> {
        Box::pin(async move {
            let mut edges_in: EdgesIn<'_> = HashMap::new();
            for e in &doc.edges {
                if let Some(map) = &e.map {
                    edges_in
                        .entry(e.to.as_str())
                        .or_default()
                        .push((e.from.as_str(), map));
                }
            }
            let cx = Cx {
                run,
                globals,
                edges_in,
                state: Mutex::new(RunOutcome::default()),
                warnings: Mutex::new(Vec::new()),
                depth,
            };
            let frame = Frame {
                path,
                ..Frame::default()
            };
            self.run_steps(&cx, &doc.steps, &frame).await?;
            let mut outcome = std::mem::take(&mut *lock(&cx.state));
            if let Some(to_output) = cx.edges_in.get("output") {
                let mut outputs = Map::new();
                for (from, map) in to_output {
                    for (path, key) in *map {
                        if let (Some(v), Some(k)) =
                            (cx.source_value(&outcome, from, path), key.as_str())
                        {
                            outputs.insert(k.to_owned(), v);
                        }
                    }
                }
                outcome.outputs = outputs;
            }
            Ok(outcome)
        })
    }

    /// Runs steps in order. `Err` when cancelled, or when a step failed
    /// inside a `retry`.
    fn run_steps<'a, 'r>(
        &'a self,
        cx: &'a Cx<'a, 'r>,
        steps: &'a [Step],
        frame: &'a Frame,
    ) -> BoxFut<'a, Result<(), StepError>> {
        Box::pin(async move {
            for step in steps {
                self.run_step(cx, step, frame).await?;
            }
            Ok(())
        })
    }

    fn run_step<'a, 'r>(
        &'a self,
        cx: &'a Cx<'a, 'r>,
        step: &'a Step,
        frame: &'a Frame,
    ) -> BoxFut<'a, Result<(), StepError>> {
        Box::pin(async move {
            if cx.run.cancel.is_cancelled() {
                return Err(StepError::Cancelled);
            }
            // `when`, then inputs (static, then edges), under one lock.
            let prepared = {
                let state = lock(&cx.state);
                let mut ex = self.expander(cx, frame, &state);
                match condition::holds(step.when.as_ref(), &mut ex) {
                    Ok(false) => None,
                    Ok(true) => Some(self.inputs(cx, step, &state, &mut ex)),
                    Err(e) => Some(Err(e)),
                }
            };
            let key = durable::key(&frame.path, &step.id);
            let Some(inputs) = prepared else {
                cx.emit(self, step, &key, EventKind::Skip, None, None);
                return Ok(());
            };
            cx.emit(self, step, &key, EventKind::Start, None, None);
            let result = match inputs {
                Ok(inputs) => {
                    let mut frame = frame.clone();
                    if !inputs.is_empty() {
                        frame
                            .locals
                            .insert("inputs".into(), Value::Object(inputs.clone()));
                    }
                    self.execute_durable(cx, step, &frame, &key)
                        .await
                        .map(|o| (o, inputs))
                }
                Err(e) => Err(e),
            };
            match result {
                Ok((outcome, inputs)) => {
                    let text = output_text(&outcome.output);
                    if !outcome.warnings.is_empty() {
                        let mut w = lock(&cx.warnings);
                        for warning in &outcome.warnings {
                            w.push((step.id.clone(), warning.clone()));
                        }
                    }
                    let stored = StepResult {
                        output: outcome.output,
                        data: outcome.data,
                        result: outcome.result,
                        error: None,
                        status: StepStatus::Success,
                        inputs,
                        warnings: outcome.warnings,
                    };
                    cx.store(&step.id, stored);
                    if let Some(message) = &outcome.message {
                        cx.emit(self, step, &key, EventKind::Message, Some(message), None);
                    }
                    cx.emit(self, step, &key, EventKind::Done, Some(&text), None);
                    Ok(())
                }
                Err(StepError::Cancelled) => {
                    let msg = StepError::Cancelled.to_string();
                    cx.store(&step.id, StepResult::failed(msg.clone()));
                    cx.emit(self, step, &key, EventKind::Error, None, Some(&msg));
                    Err(StepError::Cancelled)
                }
                Err(e) => {
                    let msg = e.to_string();
                    tracing::debug!(step = %step.id, error = %msg, "ontheia step failed");
                    cx.store(&step.id, StepResult::failed(msg.clone()));
                    cx.emit(self, step, &key, EventKind::Error, None, Some(&msg));
                    if frame.in_retry {
                        Err(StepError::SubStep {
                            step: step.id.clone(),
                            error: msg,
                        })
                    } else {
                        Ok(())
                    }
                }
            }
        })
    }

    /// Runs a step; a journaled one is replayed from the resume, or runs
    /// between its observer's `started` and `finished`.
    async fn execute_durable(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
        key: &str,
    ) -> Result<Outcome, StepError> {
        let run = cx.run;
        if !durable::is_journaled(step.kind) {
            return self.execute(cx, step, frame).await;
        }
        let replayed = {
            let mut replay = lock(&run.replay);
            if replay.is_empty() {
                None
            } else {
                replay.remove(key)
            }
        };
        if let Some(reply) = replayed {
            return reply.map(Outcome::from).map_err(StepError::Journaled);
        }
        let Some(observer) = run.observer.clone() else {
            return self.execute(cx, step, frame).await;
        };
        let call = StepCall {
            key: key.to_owned(),
            step_id: step.id.clone(),
            step_type: step.kind,
            attempt: frame.attempt.max(1),
        };
        observer
            .started(&call)
            .await
            .map_err(StepError::Journaled)?;
        let result = self.execute(cx, step, frame).await;
        if matches!(result, Err(StepError::Cancelled)) {
            return result;
        }
        let reply: StepReply = match &result {
            Ok(outcome) => Ok(StepAnswer::from(outcome)),
            Err(e) => Err(e.to_string()),
        };
        observer
            .finished(&call, &reply)
            .await
            .map_err(StepError::Journaled)?;
        result
    }

    /// Dispatches on the step type.
    async fn execute(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        match step.kind {
            StepType::Llm => self.llm(cx, step, frame).await,
            StepType::Tool => self.tool(cx, step, frame).await,
            StepType::MemorySearch => self.memory_search(cx, step, frame).await,
            StepType::MemoryWrite => self.memory_write(cx, step, frame).await,
            StepType::Transform => self.transform(cx, step, frame),
            StepType::RestCall => self.rest_call(cx, step, frame).await,
            StepType::Agent => self.agent(cx, step, frame).await,
            StepType::Router => self.router(cx, step, frame).await,
            StepType::Branch => self.branch(cx, step, frame).await,
            StepType::Parallel => self.parallel(cx, step, frame).await,
            StepType::Loop => self.loop_step(cx, step, frame).await,
            StepType::Retry => self.retry(cx, step, frame).await,
            StepType::Delay => self.delay(cx, step).await,
        }
    }

    fn expander<'s>(
        &self,
        cx: &'s Cx<'_, '_>,
        frame: &'s Frame,
        state: &'s RunOutcome,
    ) -> Expander<'s> {
        Expander::new(
            Vars {
                globals: &cx.globals,
                locals: &frame.locals,
                steps: &state.results,
            },
            self.config.max_expansion_bytes,
            self.config.max_value_depth,
        )
    }

    /// The step's static `inputs` (expanded), then values mapped by edges.
    fn inputs(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        state: &RunOutcome,
        ex: &mut Expander<'_>,
    ) -> Result<Map<String, Value>, StepError> {
        let mut inputs = match step.param("inputs") {
            Some(Value::Object(m)) => match ex.expand_value(&Value::Object(m))? {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            _ => Map::new(),
        };
        if let Some(edges) = cx.edges_in.get(step.id.as_str()) {
            for (from, map) in edges {
                for (path, key) in *map {
                    if let (Some(v), Some(k)) = (cx.source_value(state, from, path), key.as_str()) {
                        inputs.insert(k.to_owned(), v);
                    }
                }
            }
        }
        Ok(inputs)
    }

    /// Awaits a backend future unless the run is cancelled first.
    async fn call<T>(
        &self,
        cx: &Cx<'_, '_>,
        fut: impl Future<Output = Result<T, crate::error::BackendError>>,
    ) -> Result<T, StepError> {
        tokio::select! {
            biased;
            _ = cx.run.cancel.cancelled() => Err(StepError::Cancelled),
            r = fut => r.map_err(StepError::Backend),
        }
    }
}

impl Cx<'_, '_> {
    fn store(&self, id: &str, result: StepResult) {
        let mut st = lock(&self.state);
        if !st.results.contains_key(id) {
            st.order.push(id.to_owned());
        }
        st.results.insert(id.to_owned(), result);
        st.last = Some(id.to_owned());
    }

    fn emit<B>(
        &self,
        engine: &Engine<B>,
        step: &Step,
        key: &str,
        kind: EventKind,
        output: Option<&str>,
        error: Option<&str>,
    ) {
        if !self.run.reported.is_empty()
            && self.run.reported.contains(&durable::identity(key, kind))
        {
            return;
        }
        let max = engine.config.event_output_chars;
        let output = output.map(|o| truncate_chars(o, max));
        let error = error.map(|e| truncate_chars(e, max));
        let mut sink = lock(&self.run.sink);
        let seq = self.run.seq.fetch_add(1, Ordering::Relaxed);
        sink.event(&Event {
            seq,
            key,
            step_id: &step.id,
            step_type: step.kind,
            kind,
            output: output.as_deref(),
            error: error.as_deref(),
            depth: self.depth,
        });
    }

    /// The value at `path` of a source: a step's result, or the globals for
    /// `input`.
    fn source_value(&self, state: &RunOutcome, from: &str, path: &str) -> Option<Value> {
        if from == "input" {
            let root = Value::Object(self.globals.clone());
            return crate::path::get_path(&root, path).map(|v| v.into_owned());
        }
        state
            .results
            .get(from)?
            .lookup(path)
            .map(|v| v.into_owned())
    }
}

/// A stored output as event text.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
