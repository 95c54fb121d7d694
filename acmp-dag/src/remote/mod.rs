//! The buyer side of Layer 1, independent of the transport: a [`Connection`] to one
//! provider (requests matched to responses, stream chunks and heartbeats routed to their
//! task), a [`RemoteProvider`] that invokes tasks over it (liveness by heartbeats,
//! `acmp/cancel` when the task is cancelled, input chunks forwarded), and a [`PoolRouter`]
//! that routes each task of a DAG to a provider by capability, tier, price, budget and
//! health, retrying a retryable failure on the next provider with the same `task_id`.
//!
//! A transport (WebSocket, MCP) feeds a connection the messages it receives
//! ([`Connection::deliver`]), sends what the connection puts in its outbox, and closes the
//! connection when it ends ([`Connection::close`]).

mod connection;
mod pool;
mod provider;

pub use self::connection::{Connection, Notice};
pub use self::pool::{Budget, BudgetError, PoolRouter};
pub use self::provider::{
    Attempt, COOLDOWN, Connector, MISSED_HEARTBEATS, RemoteProvider, Unreachable, is_retryable,
    refused_token,
};
