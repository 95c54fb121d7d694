//! The writer task: a [`NatsJournal`]'s writes published in call order on
//! one connection, their acknowledgements awaited in a pipeline.

use async_nats::header::{self, HeaderMap};
use async_nats::jetstream;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::kv::{self, UpdateErrorKind};
use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesOrdered;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::read;
use super::{Names, json_bytes, nats_err};
use crate::error::{JournalError, Result};
use crate::ids::RunId;
use crate::model::{RunStatus, now_ms};

/// What a rejected compare-and-set means for a write.
#[derive(Clone, Copy)]
pub(super) enum OnTaken {
    /// Nothing was expected (a plain put or publish).
    Error,
    /// `create_run`: the id is taken.
    DuplicateRun,
    /// `node_finished`: a result is already there; not applied.
    NotApplied,
}

pub(super) enum Reply {
    Unit(oneshot::Sender<Result<()>>),
    Bool(oneshot::Sender<Result<bool>>),
}

pub(super) enum Op {
    Publish {
        subject: String,
        headers: HeaderMap,
        payload: Bytes,
        on_taken: OnTaken,
        run: RunId,
        reply: Reply,
    },
    Finish {
        run: RunId,
        status: RunStatus,
        answer: Value,
        /// The finishing host, recorded as the run's coordinator.
        coordinator: Option<String>,
        reply: oneshot::Sender<Result<()>>,
    },
    Cancel {
        run: RunId,
        reply: oneshot::Sender<Result<bool>>,
    },
    Flush {
        reply: oneshot::Sender<Result<()>>,
    },
}

// --- the writer task ---------------------------------------------------------

type Done = BoxFuture<'static, Box<dyn FnOnce() + Send>>;

pub(super) async fn writer(
    mut rx: mpsc::UnboundedReceiver<Op>,
    js: jetstream::Context,
    names: Names,
    runs: kv::Store,
    cancel: kv::Store,
) {
    let mut pending: FuturesOrdered<Done> = FuturesOrdered::new();
    let mut open = true;
    loop {
        tokio::select! {
            op = rx.recv(), if open => match op {
                None => open = false,
                Some(Op::Publish { subject, headers, payload, on_taken, run, reply }) => {
                    match js.publish_with_headers(subject, headers, payload).await {
                        Ok(ack) => pending.push_back(Box::pin(async move {
                            let result = ack.await;
                            Box::new(move || answer(reply, result, on_taken, &run)) as Box<dyn FnOnce() + Send>
                        })),
                        Err(e) => {
                            let e = nats_err("publish", e);
                            match reply {
                                Reply::Unit(tx) => drop(tx.send(Err(e))),
                                Reply::Bool(tx) => drop(tx.send(Err(e))),
                            }
                        }
                    }
                }
                Some(Op::Flush { reply }) => pending.push_back(Box::pin(async move {
                    Box::new(move || drop(reply.send(Ok(())))) as Box<dyn FnOnce() + Send>
                })),
                Some(Op::Finish { run, status, answer, coordinator, reply }) => {
                    drain(&mut pending).await;
                    let r = finish(&js, &names, &runs, &run, (status, answer), coordinator).await;
                    let _ = reply.send(r);
                }
                Some(Op::Cancel { run, reply }) => {
                    drain(&mut pending).await;
                    let r = mark_cancel(&runs, &cancel, &run).await;
                    let _ = reply.send(r);
                }
            },
            Some(done) = pending.next(), if !pending.is_empty() => done(),
            else => break,
        }
    }
}

async fn drain(pending: &mut FuturesOrdered<Done>) {
    while let Some(done) = pending.next().await {
        done();
    }
}

fn answer(
    reply: Reply,
    result: Result<jetstream::publish::PublishAck, jetstream::context::PublishError>,
    on_taken: OnTaken,
    run: &RunId,
) {
    let taken = matches!(&result, Err(e) if e.kind() == PublishErrorKind::WrongLastSequence);
    let outcome: Result<bool> = match (result, on_taken) {
        (Ok(_), _) => Ok(true),
        (Err(_), OnTaken::NotApplied) if taken => Ok(false),
        (Err(_), OnTaken::DuplicateRun) if taken => {
            Err(JournalError::DuplicateRun(run.to_string()))
        }
        (Err(e), _) => Err(nats_err("publish", e)),
    };
    match reply {
        Reply::Unit(tx) => drop(tx.send(outcome.map(|_| ()))),
        Reply::Bool(tx) => drop(tx.send(outcome)),
    }
}

/// The run's record says it finished (compare-and-set, so that a concurrent
/// writer is not overwritten), then its end goes out on its subject.
async fn finish(
    js: &jetstream::Context,
    names: &Names,
    runs: &kv::Store,
    run: &RunId,
    (status, answer): (RunStatus, Value),
    coordinator: Option<String>,
) -> Result<()> {
    let at = now_ms();
    let mut tries = 0;
    loop {
        tries += 1;
        let entry = runs
            .entry(run.as_str())
            .await
            .map_err(|e| nats_err(format!("read run {run}"), e))?
            .filter(|e| e.operation == kv::Operation::Put)
            .ok_or_else(|| JournalError::UnknownRun(run.to_string()))?;
        let (mut doc, _) =
            read::decode_run(run.as_str(), &entry.value).map_err(read::journal_corrupt)?;
        doc.status = status.as_str().to_owned();
        doc.finished_ms = Some(at);
        doc.answer = Some(answer.clone());
        if coordinator.is_some() {
            doc.coordinator.clone_from(&coordinator);
        }
        match runs
            .update(run.as_str(), json_bytes(&doc)?, entry.revision)
            .await
        {
            Ok(_) => break,
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision && tries < 10 => continue,
            Err(e) => return Err(nats_err(format!("update run {run}"), e)),
        }
    }
    let mut headers = HeaderMap::new();
    headers.insert(header::NATS_MESSAGE_ID, format!("{run}:end").as_str());
    let payload = json_bytes(&json!({"status": status.as_str(), "answer": answer}))?;
    js.publish_with_headers(names.run_subject(run, "end"), headers, payload)
        .await
        .map_err(|e| nats_err("publish end", e))?
        .await
        .map_err(|e| nats_err("publish end", e))?;
    Ok(())
}

async fn mark_cancel(runs: &kv::Store, cancel: &kv::Store, run: &RunId) -> Result<bool> {
    let entry = runs
        .entry(run.as_str())
        .await
        .map_err(|e| nats_err(format!("read run {run}"), e))?;
    let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
        return Ok(false);
    };
    let (_, summary) =
        read::decode_run(run.as_str(), &entry.value).map_err(read::journal_corrupt)?;
    if summary.status.is_finished() {
        return Ok(false);
    }
    cancel
        .put(run.as_str(), Bytes::from_static(b"1"))
        .await
        .map_err(|e| nats_err(format!("mark {run} cancelled"), e))?;
    Ok(true)
}
