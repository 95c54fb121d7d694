//! The crate's integration tests, in one test binary: linking once instead
//! of once per file keeps a workspace build's disk use and link time down.
//! Run one area with `cargo test -p a2e-llm --test suite AREA::`.
//! `logs` is a binary of its own: `tracing` caches callsite interest
//! process-wide, and the other tests would leave its callsites disabled.

mod common;
use a2e_test_kit::skip;

mod anthropic;
mod config;
mod live;
mod openai;
mod resilience;
mod skill;
