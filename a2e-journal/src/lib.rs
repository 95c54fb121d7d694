//! Durable runs for A2E hosts: a run journal.
//!
//! Every run a host executes (an A2E chain, an ACMP DAG, an Ontheia
//! document, an LLM skill's agentic loop) gets a [`RunId`] and a journal:
//! its request, each node's start and result (keyed by [`NodeKey`],
//! `run_id/node_id/attempt`, the idempotency key a plugin sees), its events
//! with their per-request `seq`, and its final answer. A host that starts
//! again loads the unfinished runs ([`Journal::load_unfinished`]) and resumes
//! them: finished nodes are not run again; a client re-attaches with
//! [`Journal::subscribe`] and gets each event once, then the answer.
//!
//! - [`Journal`]: the trait a host holds (`Arc<dyn Journal>`), whatever the
//!   store. Writes are queued in call order and acknowledged ([`Ack`]) once
//!   durable, so a host awaits a node's result write before anything
//!   downstream sees the result.
//! - [`SqliteJournal`]: the embedded default, `.a2e/runs.db` under the root,
//!   WAL, a writer thread with group commit; see [`Durability`] for what an
//!   acknowledged write survives. Finished runs are pruned by a
//!   [`Retention`] (age and count), so the file stays bounded.
//! - [`MemoryJournal`]: in the process's memory, bounded, for a host that
//!   keeps no durable journal but still shows its runs (nothing survives
//!   the process; nothing is resumed from it).
//! - `nats` (feature `nats`, on by default): the journal on NATS JetStream
//!   for hosts that share runs, with run leases and a work queue.
//!
//! What is journaled, the guarantees and the JetStream layout are described
//! in `docs/durability.md` at the workspace root.
//!
//! ```
//! use a2e_journal::{Journal, NewRun, NodeKey, NodeOutcome, RunId, RunItem, RunKind,
//!                   RunStatus, SqliteJournal, SqliteOptions};
//! use futures::StreamExt;
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let root = tempfile::tempdir().unwrap();
//! let journal = SqliteJournal::open_in(root.path(), SqliteOptions::default()).await.unwrap();
//!
//! let run = RunId::generate();
//! journal.create_run(NewRun {
//!     run_id: run.clone(),
//!     kind: RunKind::Chain,
//!     agent: "agent-1".into(),
//!     request: json!({"type": "chain/req", "nodes": []}),
//! }).await.unwrap();
//!
//! // A node starts and finishes; its result is durable once the ack resolves.
//! let key = NodeKey::new(run.clone(), "fetch", 1).unwrap();
//! journal.node_started(&key).await.unwrap();
//! let applied = journal.node_finished(&key, &NodeOutcome::output(json!({"n": 3}))).await.unwrap();
//! assert!(applied);
//! // A duplicate result for the same key is not applied.
//! assert!(!journal.node_finished(&key, &NodeOutcome::output(json!(0))).await.unwrap());
//!
//! let _ = journal.append_event(&run, 0, &json!({"node_id": "fetch", "phase": "done"}));
//! journal.finish_run(&run, RunStatus::Succeeded, &json!({"success": true})).await.unwrap();
//!
//! // A client that attaches later gets the events, then the answer.
//! let items: Vec<_> = journal.subscribe(&run, 0).collect().await;
//! assert_eq!(items.len(), 2);
//! assert!(matches!(&items[1], Ok(RunItem::Finished { status: RunStatus::Succeeded, .. })));
//!
//! let state = journal.show_run(&run).await.unwrap().unwrap();
//! assert_eq!(state.result_of("fetch").unwrap().1, &NodeOutcome::output(json!({"n": 3})));
//! # });
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod approval;
mod error;
mod ids;
mod journal;
mod memory;
mod model;
#[cfg(feature = "nats")]
pub mod nats;
mod sqlite;

pub use error::{JournalError, Result};
pub use ids::{MAX_NODE_ID_LEN, MAX_RUN_ID_LEN, NodeKey, RunId, check_node_id};
pub use journal::{Ack, Journal};
pub use memory::{MemoryJournal, MemoryOptions};
pub use model::{
    CorruptRun, INTERRUPTED, Loaded, MAX_START_INPUT_BYTES, NewRun, NodeOutcome, NodeRecord,
    NodeStart, PruneReport, Retention, RunFilter, RunItem, RunKind, RunState, RunStatus,
    RunSummary, StoredEvent, now_ms,
};
pub use sqlite::{CommitStats, Durability, RUNS_DB, SqliteJournal, SqliteOptions};
