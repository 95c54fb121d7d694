//! The journal on NATS JetStream, for hosts that share runs; run leases and
//! the work queue that spreads a run's nodes over the hosts.
//!
//! Written against nats-server 2.9 (Debian 12's package): only JetStream
//! features of 2.9 are used (KV with `Nats-Expected-Last-Subject-Sequence`,
//! message deduplication by `Nats-Msg-Id`, work-queue streams, consumer
//! `backoff`, `CONSUMER.CREATE` with a filter subject); `async-nats` is built
//! without its `server_2_10`+ features, so it sends no field 2.9 does not know.
//!
//! # Layout
//!
//! Names start with a prefix (default `a2e`; [`NatsOptions::prefix`]), so
//! that several clusters (or tests) share one server. With `a2e`:
//!
//! | what | where | key / subject | written with |
//! |---|---|---|---|
//! | a run: kind, agent, status, request, answer, times | KV `a2e_runs` (stream `KV_a2e_runs`) | `<run_id>` | create (expected last subject sequence 0: a taken id is refused), then compare-and-set updates |
//! | a node's start | KV `a2e_nodes` | `<run_id>.<node>.<attempt>.s` | put |
//! | a node's result | KV `a2e_nodes` | `<run_id>.<node>.<attempt>.r` | create: the first result of a key wins, a duplicate is not applied |
//! | a node's cancel marker | KV `a2e_nodes` | `<run_id>.<node>.<attempt>.c` | put: the worker running the node stops it |
//! | a cancel marker | KV `a2e_cancel` | `<run_id>` | put |
//! | a run's events | stream `A2E_EVENTS` | `a2e.run.<run_id>.ev`, header `A2E-Seq`, `Nats-Msg-Id: <run_id>:<seq>` | publish (a repeated `seq` is dropped by the server within the duplicate window, and by every reader after it) |
//! | a run's end (status, answer) | stream `A2E_EVENTS` | `a2e.run.<run_id>.end`, `Nats-Msg-Id: <run_id>:end` | publish |
//! | run leases | KV `a2e_leases`, `max_age` = the lease TTL | `<run_id>` | create / compare-and-set renew ([`Leases`]) |
//! | work | stream `A2E_WORK`, work-queue retention | `a2e.work.<toolkit>`, `Nats-Msg-Id: <idempotency key>` | publish ([`WorkQueue`]) |
//! | nodes whose deliveries ran out | stream `A2E_DEAD` | `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.A2E_WORK.*` | the server's advisories |
//!
//! `<node>` is the node id in unpadded URL-safe base64 (node ids may hold
//! any character; KV keys may not); `<toolkit>` is the toolkit name when it
//! is made of ASCII letters, digits, `_` and `-`, else `b64_` and its
//! base64. A run's events are one subject: a client attached to any host
//! follows a run whose nodes run anywhere.

mod cluster;
mod follow;
mod journal_impl;
mod lease;
mod query;
mod read;
mod result;
mod store;
mod streams;
mod work;
mod writer;

pub use cluster::Cluster;
pub use lease::{Lease, LeaseKeeper, Leases};
pub use store::NatsJournal;
pub use work::{DeadItem, DeadLetters, Job, WORKER_LOST, WorkConfig, WorkItem, WorkQueue, Worker};

use std::time::Duration;

use base64::Engine as _;

use crate::error::JournalError;
use crate::ids::{NodeKey, RunId};

/// The header carrying an event's `seq` (see the layout above).
pub(crate) const SEQ_HEADER: &str = "A2E-Seq";

/// How the JetStream store names and sizes what it creates.
#[derive(Debug, Clone)]
pub struct NatsOptions {
    /// Prefix of every stream, bucket and subject: lower-case ASCII letters,
    /// digits and `_` (default `a2e`).
    pub prefix: String,
    /// Replicas of each stream and bucket (1 for a single server; 3 in a
    /// JetStream cluster).
    pub replicas: usize,
    /// Most bytes the events stream keeps: the oldest events go first past
    /// it (a backstop; finished runs are pruned by [`crate::Retention`]).
    /// Default 1 GiB.
    pub max_event_bytes: i64,
    /// How long the server remembers `Nats-Msg-Id`s to drop duplicate
    /// publishes (default 2 minutes).
    pub duplicate_window: Duration,
    /// How long an acknowledgement from the server may take (default 10 s).
    pub ack_timeout: Duration,
    /// This host's name in the cluster (its `[cluster] name`): a run it
    /// creates or finishes records it as its coordinator. Empty: none.
    pub host: String,
}

impl Default for NatsOptions {
    fn default() -> Self {
        Self {
            prefix: "a2e".into(),
            replicas: 1,
            max_event_bytes: 1 << 30,
            duplicate_window: Duration::from_secs(120),
            ack_timeout: Duration::from_secs(10),
            host: String::new(),
        }
    }
}

/// The names of everything under one prefix.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    p: String,
    up: String,
}

impl Names {
    pub(crate) fn new(prefix: &str) -> Result<Self, JournalError> {
        if prefix.is_empty()
            || prefix.len() > 32
            || !prefix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(JournalError::InvalidId {
                what: "NATS prefix",
                message: format!(
                    "`{}`: 1 to 32 lower-case ASCII letters, digits or `_`",
                    prefix.escape_debug()
                ),
            });
        }
        Ok(Self {
            p: prefix.to_owned(),
            up: prefix.to_ascii_uppercase(),
        })
    }

    pub(crate) fn runs_bucket(&self) -> String {
        format!("{}_runs", self.p)
    }
    pub(crate) fn nodes_bucket(&self) -> String {
        format!("{}_nodes", self.p)
    }
    pub(crate) fn cancel_bucket(&self) -> String {
        format!("{}_cancel", self.p)
    }
    pub(crate) fn leases_bucket(&self) -> String {
        format!("{}_leases", self.p)
    }
    pub(crate) fn events_stream(&self) -> String {
        format!("{}_EVENTS", self.up)
    }
    pub(crate) fn work_stream(&self) -> String {
        format!("{}_WORK", self.up)
    }
    pub(crate) fn dead_stream(&self) -> String {
        format!("{}_DEAD", self.up)
    }
    /// All subjects of the events stream.
    pub(crate) fn events_subjects(&self) -> String {
        format!("{}.run.>", self.p)
    }
    /// A run's event subject (`ev`) or end subject (`end`).
    pub(crate) fn run_subject(&self, run: &RunId, what: &str) -> String {
        format!("{}.run.{run}.{what}", self.p)
    }
    /// Both subjects of a run.
    pub(crate) fn run_filter(&self, run: &RunId) -> String {
        format!("{}.run.{run}.*", self.p)
    }
    /// The subject a KV put of `key` in `bucket` goes to.
    pub(crate) fn kv_subject(bucket: &str, key: &str) -> String {
        format!("$KV.{bucket}.{key}")
    }
    /// A node's start (`s`) or result (`r`) key.
    pub(crate) fn node_key(key: &NodeKey, what: &str) -> String {
        format!(
            "{}.{}.{}.{what}",
            key.run_id(),
            b64(key.node_id().as_bytes()),
            key.attempt()
        )
    }
    /// All of a run's node keys, as a subject filter of the nodes bucket.
    pub(crate) fn nodes_filter(&self, run: &RunId) -> String {
        format!("$KV.{}.{run}.>", self.nodes_bucket())
    }
    pub(crate) fn work_subjects(&self) -> String {
        format!("{}.work.>", self.p)
    }
    pub(crate) fn work_subject(&self, toolkit: &str) -> String {
        format!("{}.work.{}", self.p, token(toolkit))
    }
    pub(crate) fn advisories(&self) -> String {
        format!(
            "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{}.*",
            self.work_stream()
        )
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub(crate) fn unb64(s: &str) -> Option<String> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
}

/// A toolkit name as one subject token (and part of a consumer name).
pub(crate) fn token(toolkit: &str) -> String {
    if !toolkit.is_empty()
        && toolkit.len() <= 64
        && toolkit
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        toolkit.to_owned()
    } else {
        format!("b64_{}", b64(toolkit.as_bytes()))
    }
}

/// A value as the JSON payload of a KV entry or a message.
pub(crate) fn json_bytes(v: &impl serde::Serialize) -> Result<bytes::Bytes, JournalError> {
    Ok(bytes::Bytes::from(serde_json::to_vec(v)?))
}

/// A client error as a journal error.
pub(crate) fn nats_err(op: impl Into<String>, e: impl std::fmt::Display) -> JournalError {
    JournalError::Nats {
        op: op.into(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_keys() {
        let n = Names::new("a2e").unwrap();
        assert_eq!(n.events_stream(), "A2E_EVENTS");
        assert_eq!(n.runs_bucket(), "a2e_runs");
        let run = RunId::parse("r1").unwrap();
        assert_eq!(n.run_subject(&run, "ev"), "a2e.run.r1.ev");
        let key = NodeKey::new(run, "fetch all/[3]", 2).unwrap();
        let k = Names::node_key(&key, "r");
        assert_eq!(k, "r1.ZmV0Y2ggYWxsL1szXQ.2.r");
        assert_eq!(unb64("ZmV0Y2ggYWxsL1szXQ").unwrap(), "fetch all/[3]");
        assert_eq!(n.work_subject("browser"), "a2e.work.browser");
        assert_eq!(
            n.work_subject("mcp:git hub"),
            "a2e.work.b64_bWNwOmdpdCBodWI"
        );
        for bad in ["", "A2E", "a.b", "a b"] {
            assert!(Names::new(bad).is_err(), "{bad}");
        }
    }
}
