//! Transports: how sessions reach agents.

pub mod http;
pub mod net;
pub mod stdio;
pub mod ws;
