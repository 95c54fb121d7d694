//! The document limits: the spec's caps, the notes' per-array caps, and the
//! few bounds this crate adds so that bad input stays cheap.

/// Top-level steps per chain (spec: 50).
pub const MAX_STEPS: usize = 50;
/// Edges per chain (spec: 200).
pub const MAX_EDGES: usize = 200;
/// Steps of a nested `steps` array: `parallel`, `loop`, `retry` (spec: 4).
pub const MAX_NESTED_STEPS: usize = 4;
/// Cases of a `branch` or `router` (1–10).
pub const MAX_CASES: usize = 10;
/// Steps of one case, and of `default` (20).
pub const MAX_CASE_STEPS: usize = 20;
/// `loop.count` (1–20).
pub const MAX_LOOP_COUNT: u64 = 20;
/// `retry.count` (1–5).
pub const MAX_RETRY_COUNT: u64 = 5;
/// `retry.count` when absent.
pub const DEFAULT_RETRY_COUNT: u64 = 3;
/// `delay_ms` (0–600000).
pub const MAX_DELAY_MS: u64 = 600_000;
/// `memory_search` `top_k` (1–20).
pub const MAX_TOP_K: u64 = 20;
/// `memory_search` `top_k` when absent.
pub const DEFAULT_TOP_K: u64 = 5;
/// Longest edge path, counted in steps (50).
pub const MAX_EDGE_PATH: usize = 50;
/// Step, edge and case-target ids: 1–64 characters.
pub const MAX_ID_CHARS: usize = 64;
/// `agent_id` and `chain_id`: 1–128 characters.
pub const MAX_AGENT_ID_CHARS: usize = 128;
/// Agent delegation depth (5).
pub const MAX_AGENT_DEPTH: usize = 5;
/// The HTTP methods `rest_call` accepts.
pub const HTTP_METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// This crate's bound: how deep control steps may nest (a `branch` inside a
/// `loop` inside a `retry` is depth 3).
pub const MAX_NESTING: usize = 6;
/// This crate's bound: steps in a whole document, nested ones included.
pub const MAX_TOTAL_STEPS: usize = 1000;
/// This crate's bound: size of a document's JSON text (1 MiB).
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;
