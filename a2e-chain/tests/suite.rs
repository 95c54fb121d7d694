//! The crate's integration tests, in one test binary: linking once instead
//! of once per file keeps a workspace build's disk use and link time down.
//! Run one area with `cargo test -p a2e-chain --test suite AREA::`.

mod common;

mod branch;
mod events;
mod hostile;
mod linear;
mod map;
mod on_error;
mod props;
mod resume;
mod timeout;
mod validation;
