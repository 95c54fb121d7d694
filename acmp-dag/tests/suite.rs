//! The crate's integration tests, in one test binary: linking once instead
//! of once per file keeps a workspace build's disk use and link time down.
//! Run one area with `cargo test -p acmp-dag --test suite AREA::`.
//! `fixtures` is a binary of its own: its insta snapshots are named after
//! its module path.

mod common;

mod durable;
mod fuzz_decode;
mod idempotency;
mod layer1_loopback;
mod orchestration;
mod orchestration_io;
mod pipeline;
mod properties;
mod streaming;
mod validation;
