//! Reading runs back from JetStream (list, show, the unfinished runs,
//! events) and pruning finished ones.

use std::collections::HashSet;

use async_nats::jetstream::kv;

use super::Names;
use super::read::{self, RunDoc};
use super::store::NatsJournal;
use super::{SEQ_HEADER, nats_err};
use crate::error::{JournalError, Result};
use crate::ids::RunId;
use crate::model::{
    CorruptRun, Loaded, NodeRecord, PruneReport, Retention, RunFilter, RunState, RunStatus,
    RunSummary, StoredEvent, now_ms,
};

impl NatsJournal {
    /// Reads every run document.
    async fn docs(&self) -> Result<Loaded<(RunDoc, RunSummary)>> {
        let bucket = self.inner.names.runs_bucket();
        let prefix = format!("$KV.{bucket}.");
        let msgs = read::read_all(
            &self.inner.runs_stream,
            format!("{prefix}>"),
            true,
            usize::MAX,
        )
        .await?;
        let mut loaded = Loaded::default();
        for msg in &msgs {
            if read::is_tombstone(msg) {
                continue;
            }
            let id = read::after_prefix(msg.subject.as_str(), &prefix).unwrap_or_default();
            match read::decode_run(id, &msg.payload) {
                Ok(pair) => loaded.items.push(pair),
                Err(c) => loaded.corrupt.push(c),
            }
        }
        Ok(loaded)
    }

    /// The runs marked for cancellation.
    async fn cancelled(&self) -> Result<HashSet<String>> {
        let prefix = format!("$KV.{}.", self.inner.names.cancel_bucket());
        let msgs = read::read_all(
            &self.inner.cancel_stream,
            format!("{prefix}>"),
            true,
            usize::MAX,
        )
        .await?;
        Ok(msgs
            .iter()
            .filter(|m| !read::is_tombstone(m))
            .filter_map(|m| read::after_prefix(m.subject.as_str(), &prefix).map(str::to_owned))
            .collect())
    }

    /// The `seq` a run's next event takes.
    async fn next_seq(&self, run: &RunId) -> Result<u64> {
        let subject = self.inner.names.run_subject(run, "ev");
        match self
            .inner
            .events
            .get_last_raw_message_by_subject(&subject)
            .await
        {
            Ok(msg) => Ok(msg
                .headers
                .get(SEQ_HEADER)
                .and_then(|v| v.as_str().parse::<u64>().ok())
                .map_or(0, |s| s.saturating_add(1))),
            Err(e) if read::not_found(&e) => Ok(0),
            Err(e) => Err(nats_err(format!("last event of {run}"), e)),
        }
    }

    async fn nodes_of(&self, run: &RunId) -> Result<Result<Vec<NodeRecord>, CorruptRun>> {
        let prefix = format!("$KV.{}.", self.inner.names.nodes_bucket());
        let msgs = read::read_all(
            &self.inner.nodes_stream,
            self.inner.names.nodes_filter(run),
            true,
            usize::MAX,
        )
        .await?;
        Ok(read::decode_nodes(run.as_str(), &prefix, &msgs))
    }

    async fn full_state(
        &self,
        doc: RunDoc,
        mut summary: RunSummary,
        cancelled: &HashSet<String>,
    ) -> Result<Result<RunState, CorruptRun>> {
        summary.cancel_requested = cancelled.contains(summary.run_id.as_str());
        summary.next_seq = self.next_seq(&summary.run_id).await?;
        let run = summary.run_id.clone();
        Ok(self
            .nodes_of(&run)
            .await?
            .map(|nodes| read::state(doc, summary, nodes)))
    }

    pub(super) async fn show(&self, run: RunId) -> Result<Option<RunState>> {
        let entry = self
            .inner
            .runs
            .entry(run.as_str())
            .await
            .map_err(|e| nats_err(format!("read run {run}"), e))?;
        let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
            return Ok(None);
        };
        let (doc, summary) =
            read::decode_run(run.as_str(), &entry.value).map_err(read::journal_corrupt)?;
        let cancelled = self.cancelled().await?;
        self.full_state(doc, summary, &cancelled)
            .await?
            .map(Some)
            .map_err(read::journal_corrupt)
    }

    pub(super) async fn list(&self, filter: RunFilter) -> Result<Loaded<RunSummary>> {
        let docs = self.docs().await?;
        let cancelled = self.cancelled().await?;
        let mut items: Vec<RunSummary> = docs
            .items
            .into_iter()
            .map(|(_, s)| s)
            .filter(|s| filter.agent.as_ref().is_none_or(|a| *a == s.agent))
            .filter(|s| filter.status.is_none_or(|st| st == s.status))
            .collect();
        items.sort_by(|a, b| (b.created_ms, &b.run_id).cmp(&(a.created_ms, &a.run_id)));
        items.truncate(match filter.limit {
            0 => 100,
            n => n,
        });
        for s in &mut items {
            s.cancel_requested = cancelled.contains(s.run_id.as_str());
            s.next_seq = self.next_seq(&s.run_id).await?;
        }
        Ok(Loaded {
            items,
            corrupt: docs.corrupt,
        })
    }

    pub(super) async fn unfinished(&self) -> Result<Loaded<RunState>> {
        let docs = self.docs().await?;
        let cancelled = self.cancelled().await?;
        let mut loaded = Loaded {
            items: Vec::new(),
            corrupt: docs.corrupt,
        };
        let mut running: Vec<_> = docs
            .items
            .into_iter()
            .filter(|(_, s)| s.status == RunStatus::Running)
            .collect();
        running.sort_by(|a, b| (a.1.created_ms, &a.1.run_id).cmp(&(b.1.created_ms, &b.1.run_id)));
        for (doc, summary) in running {
            match self.full_state(doc, summary, &cancelled).await? {
                Ok(s) => loaded.items.push(s),
                Err(c) => loaded.corrupt.push(c),
            }
        }
        Ok(loaded)
    }

    pub(super) async fn read_events(
        &self,
        run: RunId,
        from: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>> {
        let msgs = read::read_all(
            &self.inner.events,
            self.inner.names.run_subject(&run, "ev"),
            false,
            usize::MAX,
        )
        .await?;
        let mut out = Vec::new();
        for msg in msgs {
            let Some(seq) = read::seq_of(&msg) else {
                continue;
            };
            if seq < from || out.iter().any(|e: &StoredEvent| e.seq == seq) {
                continue;
            }
            let event =
                serde_json::from_slice(&msg.payload).map_err(|e| JournalError::Corrupt {
                    run_id: run.to_string(),
                    message: format!("event seq {seq}: {e}"),
                })?;
            out.push(StoredEvent { seq, event });
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    pub(super) async fn prune_runs(&self, retention: Retention) -> Result<PruneReport> {
        let docs = self.docs().await?;
        let mut finished: Vec<RunSummary> = docs
            .items
            .into_iter()
            .map(|(_, s)| s)
            .filter(|s| s.status.is_finished())
            .collect();
        finished.sort_by(|a, b| (b.finished_ms, &b.run_id).cmp(&(a.finished_ms, &a.run_id)));
        let cutoff = retention
            .max_age
            .map(|age| now_ms().saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX)));
        let names = &self.inner.names;
        let mut removed = 0;
        for (i, s) in finished.iter().enumerate() {
            let too_old = cutoff.is_some_and(|c| s.finished_ms.unwrap_or(0) < c);
            let too_many = retention.max_runs.is_some_and(|m| i >= m);
            if !(too_old || too_many) {
                continue;
            }
            let run = &s.run_id;
            let purges = [
                (&self.inner.events, names.run_filter(run)),
                (&self.inner.nodes_stream, names.nodes_filter(run)),
                (
                    &self.inner.cancel_stream,
                    Names::kv_subject(&names.cancel_bucket(), run.as_str()),
                ),
                (
                    &self.inner.runs_stream,
                    Names::kv_subject(&names.runs_bucket(), run.as_str()),
                ),
            ];
            for (stream, filter) in purges {
                stream
                    .purge()
                    .filter(filter.clone())
                    .await
                    .map_err(|e| nats_err(format!("purge {filter}"), e))?;
            }
            removed += 1;
        }
        Ok(PruneReport { runs: removed })
    }
}
