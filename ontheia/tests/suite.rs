//! The crate's integration tests, in one test binary: linking once instead
//! of once per file keeps a workspace build's disk use and link time down.
//! Run one area with `cargo test -p ontheia --test suite AREA::`.

mod common;
use a2e_test_kit::skip;

mod control;
mod durable;
mod examples;
mod fuzz_decode;
mod model;
mod repair;
mod repair_differential;
mod steps;
mod templates;
mod validation;
