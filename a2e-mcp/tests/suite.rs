//! The crate's integration tests, in one test binary: linking once instead
//! of once per file keeps a workspace build's disk use and link time down.
//! Run one area with `cargo test -p a2e-mcp --test suite AREA::`.

#[path = "../examples/demo/backend.rs"]
mod backend;
mod common;

mod client_lifecycle;
mod client_stdio;
mod mounts;
mod server_side;
