//! The conformance crate's integration tests, in one test binary: linking
//! once instead of once per file keeps a workspace build's disk use and link
//! time down. `common` and `support` are the helpers the modules share. The
//! checks of the `a2e` host and the `a2e-client` SDK sit in `host_side` and
//! `client_side` (modules named after the crates would shadow them).

mod common;
mod support;

mod blackbox;
mod catalog;
#[path = "a2e_client.rs"]
mod client_side;
mod defaults;
mod framing;
#[path = "a2e_host.rs"]
mod host_side;
mod mutants;
mod negative;
mod plugin;
mod properties;
mod robust;
mod spec_examples;
