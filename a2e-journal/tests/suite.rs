//! The crate's integration tests, in one test binary: linking once instead
//! of once per file keeps a workspace build's disk use and link time down.
//! Run one area with `cargo test -p a2e-journal --test suite AREA::`.
//! `kill` is a binary of its own: it starts its own binary again as a child
//! (`--exact child_entry`) and kills it.

mod common;

mod memory;
mod nats;
mod node_start;
mod sqlite;
mod syncs;
