//! `[cluster]`: hosts that share runs over NATS JetStream
//! (docs/durability.md, "A cluster").

use serde::{Deserialize, Serialize};

/// `[cluster]`: when `nats_url` is set (or `a2e serve --cluster URL`), the
/// run journal lives in JetStream instead of SQLite, the tool and skill
/// nodes of every durable run go to a work queue pulled by the hosts that
/// serve their toolkit, and a run whose coordinating host dies is taken
/// over by another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// The NATS server (`nats://host:4222`); empty: no cluster.
    pub nats_url: String,
    /// Prefix of every stream, bucket and subject (lower-case ASCII letters,
    /// digits and `_`); hosts with the same prefix share runs.
    pub prefix: String,
    /// This host's name in leases (empty: the machine's name, the process
    /// id and a random suffix, unique per process).
    pub name: String,
    /// The toolkits whose nodes this host runs: `*` for every toolkit it
    /// has (the built-in tools are toolkit `builtin`, skills `skills`, a
    /// plugin or MCP server its name); empty: none (a host that only
    /// coordinates runs).
    pub serve: Vec<String>,
    /// Nodes one host runs at once per toolkit.
    pub workers: usize,
    /// A coordinator's lease on a run lives this long without renewal
    /// (renewed every third of it); a dead coordinator's runs are taken
    /// over after about this long. Every host must use the same value.
    pub lease_ttl_secs: u64,
    /// A node whose worker neither finished nor reported progress within
    /// this long is delivered to another worker.
    pub ack_wait_secs: u64,
    /// Most deliveries of one node; after the last one it fails with
    /// `worker_lost`.
    pub max_deliver: i64,
    /// Waits before each redelivery (seconds; the last repeats); fewer
    /// entries than `max_deliver`. Empty: `ack_wait_secs` each time.
    pub backoff_secs: Vec<u64>,
    /// Replicas of each stream and bucket (3 on a JetStream cluster).
    pub replicas: usize,
    /// How long the server drops a second publish of a node (seconds, 1 to
    /// 86,400): above the longest time a node waits in the work queue, so
    /// that a run taken over does not queue a waiting node twice. Used when
    /// the work stream is created.
    pub duplicate_window_secs: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            nats_url: String::new(),
            prefix: "a2e".into(),
            name: String::new(),
            serve: vec!["*".into()],
            workers: 4,
            lease_ttl_secs: 10,
            ack_wait_secs: 30,
            max_deliver: 5,
            backoff_secs: Vec::new(),
            replicas: 1,
            duplicate_window_secs: 120,
        }
    }
}

impl ClusterConfig {
    /// Whether cluster mode is on.
    pub fn enabled(&self) -> bool {
        !self.nats_url.is_empty()
    }

    /// Whether this host runs the nodes of `toolkit`.
    pub fn serves(&self, toolkit: &str) -> bool {
        self.serve.iter().any(|s| s == "*" || s == toolkit)
    }

    /// Checks values that types alone cannot.
    pub(super) fn check(&self) -> Result<(), String> {
        if !self.enabled() {
            return Ok(());
        }
        if self.lease_ttl_secs == 0 || self.ack_wait_secs == 0 || self.workers == 0 {
            return Err(
                "[cluster] lease_ttl_secs, ack_wait_secs and workers must be at least 1".into(),
            );
        }
        if self.max_deliver < 1 {
            return Err("[cluster] max_deliver must be at least 1".into());
        }
        if !self.backoff_secs.is_empty()
            && i64::try_from(self.backoff_secs.len()).unwrap_or(i64::MAX) >= self.max_deliver
        {
            return Err(format!(
                "[cluster] backoff_secs has {} entries; it needs fewer than max_deliver ({})",
                self.backoff_secs.len(),
                self.max_deliver
            ));
        }
        Ok(())
    }
}
