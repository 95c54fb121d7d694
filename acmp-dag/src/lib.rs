#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
//! ACMP Layer 2 task decomposition and the buyer-side orchestrator that executes it over
//! Layer 1 invocations.
//!
//! * **Types** — [`Task`], [`TaskInput`] (literal `{type, data}` or reference
//!   `{source: {from_task | from_tasks, field?}}`), [`Edge`], [`Dag`], [`TaskState`]; the
//!   Layer 1 messages [`InvokeParams`], [`InvokeResult`], [`AcmpError`] with its
//!   [`ErrorCode`]s, [`InputChunk`], [`StreamChunk`], [`Heartbeat`], [`Cancel`]. JSON Schemas
//!   behind the `schema` feature (`schema::schemas()`).
//! * **Validation** — [`ValidatedDag::new`] reports every violated rule (cycles with their
//!   path, unknown tasks, references without an edge, duplicates, bad paths, limits) naming
//!   task and field; [`path::FieldPath`] is the `field` path grammar.
//! * **Orchestration** — [`Orchestrator`] walks a DAG over [`Provider`]s chosen by a
//!   [`Router`]: event-driven, cancellation breadth-first downstream, fail-fast or
//!   best-effort, per-task deadlines, streaming edges with a non-streaming fallback,
//!   [`Event`]s for every transition. [`Idempotent`] makes any provider run a `task_id` at
//!   most once.
//!
//! # Cost
//!
//! `cargo xtask bench dag` measures the orchestrator; the method and the figures are in
//! the crate's `README.md`.
//!
//! ```
//! use acmp_dag::{
//!     CapabilityRouter, Dag, Edge, Invocation, InvokeResult, Orchestrator, Payload, Task,
//!     TaskInput, from_fn,
//! };
//! use serde_json::json;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! // In-process providers: split text into words, count them.
//! let split = from_fn(|inv: Invocation| async move {
//!     let text = inv.params.input.as_ref().and_then(|i| i.data.as_str()).unwrap_or("").to_owned();
//!     let words: Vec<&str> = text.split_whitespace().collect();
//!     Ok(InvokeResult::new(inv.params.task_id, Payload::json(json!({ "words": words }))))
//! });
//! let count = from_fn(|inv: Invocation| async move {
//!     let n = inv.params.input.as_ref().and_then(|i| i.data.as_array()).map_or(0, Vec::len);
//!     Ok(InvokeResult::new(inv.params.task_id, Payload::json(json!(n))))
//! });
//! let router = CapabilityRouter::new()
//!     .with("text-split", split)?
//!     .with("count", count)?;
//!
//! let dag = Dag::new("dag_demo")
//!     .with_task(Task::new("task_split", "text-split", TaskInput::text("to be or not to be")))
//!     .with_task(Task::new(
//!         "task_count",
//!         "count",
//!         TaskInput::from_task_field("task_split", "data.words"),
//!     ))
//!     .with_edge(Edge::new("task_split", "task_count"));
//!
//! let outcome = Orchestrator::new(router).run(dag).await?;
//! assert_eq!(outcome.result(), vec![("task_count", &Payload::json(json!(6)))]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```

mod dag;
pub mod decode;
mod error_code;
mod events;
mod hash;
mod idempotent;
mod input;
pub mod jsonrpc;
pub mod layer1;
mod orchestrator;
pub mod path;
mod payload;
mod provider;
pub mod remote;
mod router;
#[cfg(feature = "schema")]
pub mod schema;
pub mod serve;
mod state;
mod task;
pub mod validate;

pub use crate::dag::{Dag, Edge};
pub use crate::error_code::{AcmpError, ErrorCode, ErrorData};
pub use crate::events::{DagEventSink, Event, EventKind, FallbackReason, TransitionCause};
pub use crate::idempotent::Idempotent;
pub use crate::input::{InputReference, Source, SourceTasks, TaskInput};
pub use crate::layer1::{
    AcmpCapabilities, Cancel, Heartbeat, InputChunk, InvokeParams, InvokeResult, Proof,
    ProviderFeatures, StreamChunk,
};
pub use crate::orchestrator::durable::{
    DagResume, DagRunOptions, ObserveFuture, TaskCall, TaskObserver,
};
pub use crate::orchestrator::outcome::{
    CancelReason, DagOutcome, DagStatus, ResolveError, TaskEnd, TaskError, TaskOutcome,
};
pub use crate::orchestrator::{
    DagRun, FailurePolicy, Orchestrator, OrchestratorConfig, RunControl, RunError, UnknownTask,
};
pub use crate::payload::Payload;
pub use crate::provider::{
    DynProvider, FnProvider, InputChunkSender, InputChunks, Invocation, OutputSink, Provider,
    ProviderMessage, ProviderRef, SinkError, from_fn,
};
pub use crate::router::{CapabilityRouter, DuplicateCapability, Router};
pub use crate::state::TaskState;
pub use crate::task::{DEFAULT_OUTPUT_TYPE, Task};
pub use crate::validate::{
    ValidatedDag, ValidationError, ValidationLimits, ValidationReport, ValidationWarning,
};
