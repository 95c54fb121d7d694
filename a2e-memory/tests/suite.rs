//! The crate's integration tests, in one test binary: linking once instead
//! of once per file keeps a workspace build's disk use and link time down.
//! Run one area with `cargo test -p a2e-memory --test suite AREA::`.

mod common;

mod durability;
mod embeddings;
mod props;
mod recall;
mod store;
mod tools;
