//! The Ontheia chain dialect (engine v2): step-list documents, `${…}`
//! variables, `when`, edges, JSON repair of model output, and step
//! execution over a [`Backend`] the host implements.
//!
//! [`parse`] validates a document with every limit of the spec before
//! anything runs (each error names its JSON path and rule). [`Engine::run`]
//! runs it: steps in order, each `when` checked, each result stored as
//! `{output, data, result, error, status}` for later `${steps.<id>.<path>}`
//! references, events for every step to an [`OntheiaEventSink`], cancellation
//! through a `CancellationToken`. `llm`, `tool`, `memory_search`,
//! `memory_write`, `rest_call` and `agent` steps go to the [`Backend`];
//! `router`, `branch`, `parallel`, `loop`, `retry`, `delay` and
//! `transform` are the engine's own. The exact semantics are in the crate's
//! `docs/semantics.md`.
//!
//! ```
//! use ontheia::{Backend, BackendError, Engine, EventKind, Globals, LlmReply, LlmRequest};
//! use tokio_util::sync::CancellationToken;
//!
//! // A host backend: here, a "model" that answers with JSON in prose.
//! struct Host;
//! impl Backend for Host {
//!     async fn llm(&self, req: LlmRequest, _: CancellationToken) -> Result<LlmReply, BackendError> {
//!         Ok(LlmReply::text(format!("Sure! {{'topic': '{}', ok: True,}}", req.prompt)))
//!     }
//! }
//!
//! let doc = ontheia::parse(r#"{"steps": [
//!   {"id": "classify", "type": "llm", "prompt": "${input}", "params": {"silent": true}},
//!   {"id": "answer", "type": "transform", "prompt": "topic=${steps.classify.data.topic}",
//!    "when": "${steps.classify.data.ok} == true"}
//! ]}"#).unwrap();
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let mut events = Vec::new();
//! let outcome = Engine::new(Host)
//!     .run(&doc, &Globals::with_input("weather"), |e: &ontheia::Event<'_>| {
//!         events.push(format!("{}:{}", e.step_id, e.kind.as_str()))
//!     }, CancellationToken::new())
//!     .await
//!     .unwrap();
//! assert_eq!(outcome.result("answer").unwrap().output, "topic=weather");
//! assert_eq!(events, ["classify:start", "classify:done", "answer:start", "answer:message", "answer:done"]);
//! # });
//! ```

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
pub mod backend;
pub mod condition;
pub mod context;
pub mod doc;
pub mod engine;
pub mod error;
pub mod events;
pub mod limits;
pub mod path;
pub mod repair;
pub mod result;
pub mod schema;
pub mod template;
pub mod validate;

pub use backend::{
    AgentPlan, AgentRequest, Backend, DynBackend, LlmReply, LlmRequest, MemorySearch, MemoryWrite,
    NATIVE_TOOL_SERVER, RestRequest, RestResponse, SharedBackend, ToolStepCall,
};
pub use context::{Clock, FixedClock, Globals, SystemClock};
pub use doc::{Case, Document, Edge, Step, StepType, When};
pub use engine::{
    Engine, EngineConfig, ObserveFuture, Resume, RunOptions, RunOutcome, StepAnswer, StepCall,
    StepObserver, StepReply, is_journaled,
};
pub use error::{BackendError, Rule, RunError, StepError, ValidationError, ValidationErrors};
pub use events::{Event, EventKind, OntheiaEventSink};
pub use result::{StepResult, StepStatus};
pub use validate::{parse, parse_value, validate};

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
