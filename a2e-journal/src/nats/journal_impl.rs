//! [`Journal`] for [`NatsJournal`]: each write queued to the writer task,
//! each read on the caller's task.

use async_nats::header::{self, HeaderMap};
use async_nats::jetstream::kv;
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

use super::read::{NodeDoc, RunDoc};
use super::store::{NatsJournal, expect_new};
use super::writer::{OnTaken, Op, Reply};
use super::{Names, SEQ_HEADER, json_bytes, nats_err};
use crate::error::Result;
use crate::ids::{NodeKey, RunId};
use crate::journal::{Ack, Journal};
use crate::model::{
    Loaded, NewRun, NodeOutcome, NodeStart, PruneReport, Retention, RunFilter, RunItem, RunState,
    RunStatus, RunSummary, StoredEvent, now_ms,
};

impl NatsJournal {
    /// A node's start document, with its detail when given.
    fn start_node(&self, key: &NodeKey, start: Option<NodeStart>) -> Ack {
        let payload = match json_bytes(&NodeDoc {
            at_ms: now_ms(),
            outcome: None,
            start,
        }) {
            Ok(p) => p,
            Err(e) => return Ack::ready(Err(e)),
        };
        let subject =
            Names::kv_subject(&self.inner.names.nodes_bucket(), &Names::node_key(key, "s"));
        self.publish(
            key.run_id(),
            subject,
            HeaderMap::new(),
            payload,
            OnTaken::Error,
        )
    }
}

impl Journal for NatsJournal {
    fn create_run(&self, run: NewRun) -> Ack {
        let doc = RunDoc {
            kind: run.kind.as_str().to_owned(),
            agent: run.agent,
            status: RunStatus::Running.as_str().to_owned(),
            created_ms: now_ms(),
            finished_ms: None,
            request: run.request,
            answer: None,
            coordinator: self.inner.host.clone(),
        };
        let payload = match json_bytes(&doc) {
            Ok(p) => p,
            Err(e) => return Ack::ready(Err(e)),
        };
        let subject = Names::kv_subject(&self.inner.names.runs_bucket(), run.run_id.as_str());
        self.publish(
            &run.run_id,
            subject,
            expect_new(),
            payload,
            OnTaken::DuplicateRun,
        )
    }

    fn node_started(&self, key: &NodeKey) -> Ack {
        self.start_node(key, None)
    }

    fn node_started_with(&self, key: &NodeKey, start: &NodeStart) -> Ack {
        self.start_node(key, Some(start.clone().bounded()))
    }

    fn node_traced(&self, key: &NodeKey, trace_id: &str, span_id: &str) -> Ack {
        // After the writes queued before it (the start among them).
        let flushed = self.flush();
        let nodes = self.inner.nodes.clone();
        let name = Names::node_key(key, "s");
        let (trace_id, span_id) = (trace_id.to_owned(), span_id.to_owned());
        Ack::from_future(async move {
            flushed.await?;
            let entry = nodes
                .entry(name.as_str())
                .await
                .map_err(|e| nats_err(format!("read node start {name}"), e))?;
            let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
                return Ok(());
            };
            let Ok(mut doc) = serde_json::from_slice::<NodeDoc>(&entry.value) else {
                return Ok(());
            };
            let mut start = doc.start.take().unwrap_or_default();
            start.trace_id = Some(trace_id);
            start.span_id = Some(span_id);
            doc.start = Some(start.bounded());
            // A start written again meanwhile (a resumed node) wins.
            match nodes
                .update(name.as_str(), json_bytes(&doc)?, entry.revision)
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(()),
                Err(e) => Err(nats_err(format!("update node start {name}"), e)),
            }
        })
    }

    fn node_finished(&self, key: &NodeKey, outcome: &NodeOutcome) -> Ack<bool> {
        let payload = match json_bytes(&NodeDoc {
            at_ms: now_ms(),
            outcome: Some(outcome.clone()),
            start: None,
        }) {
            Ok(p) => p,
            Err(e) => return Ack::ready(Err(e)),
        };
        let subject =
            Names::kv_subject(&self.inner.names.nodes_bucket(), &Names::node_key(key, "r"));
        let (reply, ack) = Ack::channel();
        self.send(Op::Publish {
            subject,
            headers: expect_new(),
            payload,
            on_taken: OnTaken::NotApplied,
            run: key.run_id().clone(),
            reply: Reply::Bool(reply),
        });
        ack
    }

    fn append_event(&self, run_id: &RunId, seq: u64, event: &Value) -> Ack {
        let payload = match json_bytes(event) {
            Ok(p) => p,
            Err(e) => return Ack::ready(Err(e)),
        };
        let mut headers = HeaderMap::new();
        headers.insert(header::NATS_MESSAGE_ID, format!("{run_id}:{seq}").as_str());
        headers.insert(SEQ_HEADER, seq.to_string().as_str());
        let subject = self.inner.names.run_subject(run_id, "ev");
        self.publish(run_id, subject, headers, payload, OnTaken::Error)
    }

    fn finish_run(&self, run_id: &RunId, status: RunStatus, answer: &Value) -> Ack {
        let (reply, ack) = Ack::channel();
        self.send(Op::Finish {
            run: run_id.clone(),
            status,
            answer: answer.clone(),
            coordinator: self.inner.host.clone(),
            reply,
        });
        ack
    }

    fn request_cancel(&self, run_id: &RunId) -> Ack<bool> {
        let (reply, ack) = Ack::channel();
        self.send(Op::Cancel {
            run: run_id.clone(),
            reply,
        });
        ack
    }

    fn cancel_requested(&self, run_id: &RunId) -> BoxFuture<'static, Result<bool>> {
        let cancel = self.inner.cancel.clone();
        let run = run_id.clone();
        async move {
            let entry = cancel
                .entry(run.as_str())
                .await
                .map_err(|e| nats_err(format!("read cancel marker of {run}"), e))?;
            Ok(entry.is_some_and(|e| e.operation == kv::Operation::Put))
        }
        .boxed()
    }

    fn list_runs(&self, filter: &RunFilter) -> BoxFuture<'static, Result<Loaded<RunSummary>>> {
        let me = self.clone();
        let filter = filter.clone();
        async move { me.list(filter).await }.boxed()
    }

    fn show_run(&self, run_id: &RunId) -> BoxFuture<'static, Result<Option<RunState>>> {
        let me = self.clone();
        let run = run_id.clone();
        async move { me.show(run).await }.boxed()
    }

    fn load_unfinished(&self) -> BoxFuture<'static, Result<Loaded<RunState>>> {
        let me = self.clone();
        async move { me.unfinished().await }.boxed()
    }

    fn events(
        &self,
        run_id: &RunId,
        from_seq: u64,
        limit: usize,
    ) -> BoxFuture<'static, Result<Vec<StoredEvent>>> {
        let me = self.clone();
        let run = run_id.clone();
        async move { me.read_events(run, from_seq, limit).await }.boxed()
    }

    fn subscribe(&self, run_id: &RunId, from_seq: u64) -> BoxStream<'static, Result<RunItem>> {
        super::follow::follow(self.clone(), run_id.clone(), from_seq)
    }

    fn prune(&self, retention: &Retention) -> Ack<PruneReport> {
        let me = self.clone();
        let retention = *retention;
        Ack::from_future(async move { me.prune_runs(retention).await })
    }

    fn flush(&self) -> Ack {
        let (reply, ack) = Ack::channel();
        self.send(Op::Flush { reply });
        ack
    }
}
