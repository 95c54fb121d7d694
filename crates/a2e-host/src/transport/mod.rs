//! Transports: how sessions reach agents.

pub mod stdio;
