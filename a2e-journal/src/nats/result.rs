//! A node's result as another host sees it: read once, or awaited until a
//! worker (or the dead-letter path) journals it; and a node's cancel marker,
//! by which the coordinator of a run stops a node running on a worker.

use std::time::Duration;

use async_nats::jetstream::kv;
use futures::StreamExt;

use super::read::NodeDoc;
use super::store::NatsJournal;
use super::{Names, nats_err};
use crate::error::{JournalError, Result};
use crate::ids::NodeKey;
use crate::model::{NodeOutcome, now_ms};

fn decode(key: &NodeKey, value: &[u8]) -> Result<NodeOutcome> {
    let doc: NodeDoc = serde_json::from_slice(value).map_err(|e| JournalError::Corrupt {
        run_id: key.run_id().to_string(),
        message: format!("result of `{}`: {e}", key.node_id()),
    })?;
    doc.outcome.ok_or_else(|| JournalError::Corrupt {
        run_id: key.run_id().to_string(),
        message: format!("result of `{}` has no outcome", key.node_id()),
    })
}

impl NatsJournal {
    /// The result journaled for `key`, if any.
    pub async fn node_result(&self, key: &NodeKey) -> Result<Option<NodeOutcome>> {
        let entry = self
            .inner
            .nodes
            .entry(Names::node_key(key, "r"))
            .await
            .map_err(|e| nats_err(format!("read result of {key}"), e))?;
        entry
            .filter(|e| e.operation == kv::Operation::Put)
            .map(|e| decode(key, &e.value))
            .transpose()
    }

    /// Waits until a result is journaled for `key` (at once when it is
    /// there already) and returns it. A watch the server ends (it restarted,
    /// the connection dropped) is opened again: the wait outlives an outage
    /// of the server. Dropping the future stops the wait.
    pub async fn wait_node_result(&self, key: &NodeKey) -> Result<NodeOutcome> {
        let name = Names::node_key(key, "r");
        let entry = watch_until_put(&self.inner.nodes, &name).await;
        decode(key, &entry.value)
    }

    /// Asks the worker running `key` to stop it: the node was cancelled or
    /// timed out on its run's coordinator. Kept with the run's node records
    /// (`<run_id>.<node>.<attempt>.c`) and pruned with them.
    pub async fn cancel_node(&self, key: &NodeKey) -> Result<()> {
        let doc = NodeDoc {
            at_ms: now_ms(),
            outcome: None,
            start: None,
        };
        let value = serde_json::to_vec(&doc).map_err(|e| nats_err("encode cancel", e))?;
        self.inner
            .nodes
            .put(Names::node_key(key, "c"), value.into())
            .await
            .map_err(|e| nats_err(format!("cancel {key}"), e))?;
        Ok(())
    }

    /// Resolves once `key` is asked to stop: its own cancel marker
    /// ([`NatsJournal::cancel_node`]) or its run's (`a2e runs cancel`), at
    /// once when one is there already; through outages of the server as
    /// [`NatsJournal::wait_node_result`]. Dropping the future stops the wait.
    pub async fn node_cancelled(&self, key: &NodeKey) {
        let node = Names::node_key(key, "c");
        tokio::select! {
            _ = watch_until_put(&self.inner.nodes, &node) => {}
            _ = watch_until_put(&self.inner.cancel, key.run_id().as_str()) => {}
        }
    }
}

/// The first put of `key` in `store` (the current value first, then
/// updates). A watch that cannot be opened or that ends is opened again
/// after a wait that grows to a second.
async fn watch_until_put(store: &kv::Store, key: &str) -> kv::Entry {
    let mut wait = Duration::from_millis(50);
    loop {
        match store.watch_with_history(key).await {
            Ok(mut watch) => {
                while let Some(entry) = watch.next().await {
                    match entry {
                        Ok(e) if e.operation == kv::Operation::Put => return e,
                        Ok(_) => {}
                        Err(e) => {
                            tracing::debug!(key, "watch ended, opened again: {e}");
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::debug!(key, "cannot watch yet: {e}"),
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(1));
    }
}
