//! The crate's integration tests, in one test binary: linking once instead
//! of once per file keeps a workspace build's disk use and link time down.
//! Run one area with `cargo test -p a2a-proto --test suite AREA::`.

mod common;

mod decode_errors;
mod enums;
mod errors;
mod examples;
mod http_routes;
mod jsonrpc;
mod schema;
mod validation;
