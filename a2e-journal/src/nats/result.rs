//! A node's result as another host sees it: read once, or awaited until a
//! worker (or the dead-letter path) journals it.

use async_nats::jetstream::kv;
use futures::StreamExt;

use super::read::NodeDoc;
use super::store::NatsJournal;
use super::{Names, nats_err};
use crate::error::{JournalError, Result};
use crate::ids::NodeKey;
use crate::model::NodeOutcome;

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
    /// there already) and returns it. Dropping the future stops the wait.
    pub async fn wait_node_result(&self, key: &NodeKey) -> Result<NodeOutcome> {
        let name = Names::node_key(key, "r");
        let mut watch = self
            .inner
            .nodes
            .watch_with_history(&name)
            .await
            .map_err(|e| nats_err(format!("watch result of {key}"), e))?;
        while let Some(entry) = watch.next().await {
            let entry = entry.map_err(|e| nats_err(format!("watch result of {key}"), e))?;
            if entry.operation == kv::Operation::Put {
                return decode(key, &entry.value);
            }
        }
        Err(JournalError::Closed)
    }
}
