//! Namespaced long-term memory for A2E hosts.
//!
//! - [`MemoryStore`]: write, search, get, delete, list namespaces (with
//!   [`DynMemoryStore`] for `Arc<dyn …>`). Async, because a write or a search
//!   may call an embeddings provider over the network and a backend may be
//!   remote; the embedded store keeps SQLite's blocking calls on tokio's
//!   blocking pool, never on a runtime worker.
//! - [`SqliteStore`]: the embedded default, one SQLite file (bundled SQLite,
//!   WAL, `synchronous=FULL`: an acknowledged write is on disk), FTS5 BM25
//!   ranking, and with an [`Embedder`] (such as [`OpenAiEmbedder`], any
//!   OpenAI-compatible `/embeddings` endpoint) a vector per memory and
//!   hybrid search: BM25 and cosine similarity fused by reciprocal rank.
//!   Each hit's `score.kind` says `bm25`, `hybrid` or `recent` (no query).
//! - Isolation: [`validate_namespace`] (a strict grammar), [`NamespacePolicy`]
//!   (patterns with `${agent_id}` / `${user_id}`), [`Limits`] (content size,
//!   default 16 KiB), [`resolve_top_k`] (default 5, clamped to 20, 0 refused).
//! - Tools: [`MemoryTools`] runs `memory_write`, `memory_search`,
//!   `memory_delete` ([`MemoryWriteArgs`], [`MemorySearchArgs`],
//!   [`MemoryDeleteArgs`], named as the Ontheia step parameters) and answers
//!   JSON or a [`ToolError`] that tells a refusal from a failure.
//!
//! # Scale
//!
//! Vectors are searched exactly: each handle keeps a namespace's unit vectors
//! in memory (4 bytes × dimensions per memory, loaded once, then only what
//! was written since) and scans them per query, which is meant for up to
//! 100k memories per namespace. Past that the next step is an approximate
//! index (HNSW, e.g. through the `sqlite-vec` extension or a `usearch` index
//! file beside the database, with int8-quantised vectors), or a vector
//! database behind the same [`MemoryStore`] trait (pgvector, Qdrant).
//!
//! # Figures
//!
//! `cargo xtask bench memory` measures search latency (BM25 alone and
//! hybrid), write throughput and the file size per memory at 10k and 100k
//! memories; its figures are in the crate's README.
//!
//! # Example
//!
//! ```
//! use a2e_memory::{MemoryStore, MemoryTools, NamespacePolicy, NewMemory, Principal,
//!                  SearchQuery, SqliteStore, StoreOptions};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let store = SqliteStore::open(dir.path().join("memory.db"), StoreOptions::default()).await.unwrap();
//!
//! // The store directly.
//! let m = store.write(NewMemory::new("notes.team", "The deploy window is Tuesday 14:00.")).await.unwrap();
//! let hits = store.search(SearchQuery::new("when do we deploy", ["notes.team"])).await.unwrap();
//! assert_eq!(hits[0].id, m.id);
//! assert_eq!(hits[0].score.kind.as_str(), "bm25");
//!
//! // The tools, as a host calls them for a session.
//! let policy = NamespacePolicy::new(["vector.user.${user_id}.memory"]).unwrap();
//! let tools = MemoryTools::new(store, policy);
//! let me = Principal::new("assistant", "u42");
//! tools.call(&me, "memory_write", json!({
//!     "namespace": "vector.user.u42.memory", "content": "Prefers tea over coffee."
//! })).await.unwrap();
//! let found = tools.call(&me, "memory_search", json!({
//!     "query": "coffee", "namespaces": ["vector.user.u42.memory"]
//! })).await.unwrap();
//! assert_eq!(found["hits"][0]["content"], "Prefers tea over coffee.");
//!
//! let err = tools.call(&me, "memory_search", json!({
//!     "query": "coffee", "namespaces": ["vector.user.u43.memory"]
//! })).await.unwrap_err();
//! assert_eq!(err.code().as_str(), "unauthorized");
//! assert!(err.is_refusal());
//! # });
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod embed;
mod error;
mod fusion;
mod limits;
mod namespace;
mod policy;
mod sqlite;
mod store;
mod time;
mod tools;
mod types;

pub use embed::{DynEmbedder, Embedder, EmbedderConfig, OpenAiEmbedder};
pub use error::{EmbedError, StoreError};
pub use fusion::{RRF_K, reciprocal_rank_fusion};
pub use limits::{DEFAULT_TOP_K, Limits, MAX_TOP_K, TopK, resolve_top_k};
pub use namespace::{
    MAX_NAMESPACE_LEN, MAX_SEGMENT_LEN, MAX_SEGMENTS, NamespaceError, validate_namespace,
};
pub use policy::{NamespacePolicy, PolicyError, Principal};
pub use sqlite::{Durability, SqliteStore, StoreOptions};
pub use store::{DynMemoryStore, MemoryStore};
pub use tools::{
    MEMORY_DELETE, MEMORY_SEARCH, MEMORY_WRITE, MemoryDeleteArgs, MemorySearchArgs, MemoryTools,
    MemoryWriteArgs, TOOL_NAMES, ToolError, ToolSpec, tool_specs,
};
pub use types::{Hit, Memory, Metadata, NamespaceInfo, NewMemory, Score, ScoreKind, SearchQuery};
