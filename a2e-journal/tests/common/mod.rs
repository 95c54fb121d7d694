//! Helpers shared by the integration tests.
#![allow(dead_code, unused_imports)] // each test binary uses a part

pub use a2e_test_kit::journaled_chain as chain;
pub use a2e_test_kit::nats_server;
