//! Reading the JetStream layout back: documents checked one by one, so that
//! a record that does not decode names its run and the others still load.

use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, pull};
use async_nats::jetstream::{Message, stream};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{SEQ_HEADER, nats_err, unb64};
use crate::error::{JournalError, Result};
use crate::ids::RunId;
use crate::model::{
    CorruptRun, NodeOutcome, NodeRecord, NodeStart, RunKind, RunState, RunStatus, RunSummary,
};

/// A run's document in the runs bucket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunDoc {
    pub kind: String,
    pub agent: String,
    pub status: String,
    pub created_ms: u64,
    #[serde(default)]
    pub finished_ms: Option<u64>,
    pub request: Value,
    #[serde(default)]
    pub answer: Option<Value>,
    /// The host that created the run, or finished it after a take-over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<String>,
}

/// A node start or result document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct NodeDoc {
    pub at_ms: u64,
    #[serde(default)]
    pub outcome: Option<NodeOutcome>,
    /// A start's detail (its input, its trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<NodeStart>,
}

/// How long one message of a bounded read may take.
const READ_WAIT: Duration = Duration::from_secs(10);

/// Every message stored under `filter` (the last per subject with
/// `last_per_subject`), read with an ordered consumer until none is pending.
pub(crate) async fn read_all(
    stream: &stream::Stream,
    filter: String,
    last_per_subject: bool,
    limit: usize,
) -> Result<Vec<Message>> {
    let consumer = stream
        .create_consumer(pull::OrderedConfig {
            filter_subject: filter.clone(),
            deliver_policy: if last_per_subject {
                DeliverPolicy::LastPerSubject
            } else {
                DeliverPolicy::All
            },
            ..Default::default()
        })
        .await
        .map_err(|e| nats_err(format!("read {filter}"), e))?;
    if consumer.cached_info().num_pending == 0 || limit == 0 {
        return Ok(Vec::new());
    }
    let mut messages = consumer
        .messages()
        .await
        .map_err(|e| nats_err(format!("read {filter}"), e))?;
    let mut out = Vec::new();
    loop {
        let next = tokio::time::timeout(READ_WAIT, messages.next())
            .await
            .map_err(|_| nats_err(format!("read {filter}"), "timed out"))?;
        let Some(msg) = next else { break };
        let msg = msg.map_err(|e| nats_err(format!("read {filter}"), e))?;
        let pending = msg.info().map(|i| i.pending).unwrap_or(0);
        out.push(msg);
        if pending == 0 || out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

/// The last token of a subject (a key's last part).
pub(crate) fn after_prefix<'a>(subject: &'a str, prefix: &str) -> Option<&'a str> {
    subject.strip_prefix(prefix)
}

/// Whether a KV message is a delete or purge marker.
pub(crate) fn is_tombstone(msg: &Message) -> bool {
    msg.headers.as_ref().is_some_and(|h| {
        h.get("KV-Operation")
            .is_some_and(|v| v.as_str() == "DEL" || v.as_str() == "PURGE")
    })
}

fn corrupt(run_id: &str, message: impl Into<String>) -> CorruptRun {
    CorruptRun {
        run_id: run_id.to_owned(),
        message: message.into(),
    }
}

/// Decodes a run document stored under `run_id`.
pub(crate) fn decode_run(run_id: &str, payload: &[u8]) -> Result<(RunDoc, RunSummary), CorruptRun> {
    let doc: RunDoc =
        serde_json::from_slice(payload).map_err(|e| corrupt(run_id, format!("run record: {e}")))?;
    let id = RunId::parse(run_id).map_err(|e| corrupt(run_id, e.to_string()))?;
    let kind = RunKind::parse(&doc.kind).ok_or_else(|| {
        corrupt(
            run_id,
            format!("unknown kind `{}`", doc.kind.escape_debug()),
        )
    })?;
    let status = RunStatus::parse(&doc.status).ok_or_else(|| {
        corrupt(
            run_id,
            format!("unknown status `{}`", doc.status.escape_debug()),
        )
    })?;
    let summary = RunSummary {
        run_id: id,
        kind,
        agent: doc.agent.clone(),
        status,
        created_ms: doc.created_ms,
        finished_ms: doc.finished_ms,
        cancel_requested: false,
        next_seq: 0,
        coordinator: doc.coordinator.clone(),
    };
    Ok((doc, summary))
}

/// A run's node records from its node messages (`<run>.<node>.<attempt>.s|r`).
pub(crate) fn decode_nodes(
    run_id: &str,
    bucket_prefix: &str,
    messages: &[Message],
) -> Result<Vec<NodeRecord>, CorruptRun> {
    let mut nodes: std::collections::BTreeMap<(String, u32), NodeRecord> = Default::default();
    for msg in messages {
        if is_tombstone(msg) {
            continue;
        }
        let key = after_prefix(msg.subject.as_str(), bucket_prefix).unwrap_or_default();
        let parts: Vec<&str> = key.split('.').collect();
        let [_, node, attempt, what] = parts.as_slice() else {
            return Err(corrupt(run_id, format!("node key `{key}`")));
        };
        let node = unb64(node).ok_or_else(|| corrupt(run_id, format!("node key `{key}`")))?;
        let attempt: u32 = attempt
            .parse()
            .map_err(|_| corrupt(run_id, format!("node key `{key}`")))?;
        if *what == "c" {
            // A node's cancel marker: not part of its record.
            continue;
        }
        let doc: NodeDoc = serde_json::from_slice(&msg.payload)
            .map_err(|e| corrupt(run_id, format!("node `{node}` attempt {attempt}: {e}")))?;
        let rec = nodes
            .entry((node.clone(), attempt))
            .or_insert_with(|| NodeRecord {
                node_id: node.clone(),
                attempt,
                started_ms: 0,
                finished_ms: None,
                outcome: None,
                start: None,
            });
        match *what {
            "s" => {
                rec.started_ms = doc.at_ms;
                rec.start = doc.start;
            }
            "r" => {
                rec.finished_ms = Some(doc.at_ms);
                rec.outcome = Some(doc.outcome.ok_or_else(|| {
                    corrupt(
                        run_id,
                        format!("node `{node}` attempt {attempt}: result without outcome"),
                    )
                })?);
            }
            _ => return Err(corrupt(run_id, format!("node key `{key}`"))),
        }
    }
    Ok(nodes.into_values().collect())
}

/// A run's state from its document and node records.
pub(crate) fn state(doc: RunDoc, summary: RunSummary, nodes: Vec<NodeRecord>) -> RunState {
    RunState {
        summary,
        request: doc.request,
        nodes,
        answer: doc.answer,
    }
}

/// The `A2E-Seq` header of an event message.
pub(crate) fn seq_of(msg: &async_nats::Message) -> Option<u64> {
    msg.headers
        .as_ref()
        .and_then(|h| h.get(SEQ_HEADER))
        .and_then(|v| v.as_str().parse().ok())
}

/// Turns a client error into "not found" where the client says so.
pub(crate) fn not_found<E: std::fmt::Display>(e: &E) -> bool {
    let s = e.to_string().to_ascii_lowercase();
    s.contains("not found") || s.contains("no message found")
}

pub(crate) fn journal_corrupt(c: CorruptRun) -> JournalError {
    c.into()
}
