//! The input chunks of one task: put back in `seq` order, checked for duplicates, gaps and
//! chunks after the final one, and handed over whole once the final chunk is in.

use std::collections::BTreeMap;

use tokio::sync::oneshot;

use super::rpc::invalid_params;
use crate::{AcmpError, InputChunk, Payload};

/// How far ahead of the next expected `seq` a chunk may arrive; one further is a gap.
pub const REORDER_WINDOW: u64 = 64;

/// The chunks of a streamed input, in order; the whole input once the final chunk is in.
pub(crate) type InputDone = oneshot::Sender<Result<Vec<Payload>, AcmpError>>;

/// Collects one task's input chunks.
#[derive(Debug)]
pub(crate) struct Reorder {
    task_id: String,
    next: u64,
    in_order: Vec<Payload>,
    ahead: BTreeMap<u64, InputChunk>,
    final_seq: Option<u64>,
    done: Option<InputDone>,
}

impl Reorder {
    pub(crate) fn new(task_id: &str, done: InputDone) -> Self {
        Self {
            task_id: task_id.to_owned(),
            next: 0,
            in_order: Vec::new(),
            ahead: BTreeMap::new(),
            final_seq: None,
            done: Some(done),
        }
    }

    /// Whether the input is complete or failed (further chunks are ignored).
    pub(crate) fn is_closed(&self) -> bool {
        self.done.is_none()
    }

    /// Fails the input (the task answers with `error`).
    pub(crate) fn fail(&mut self, error: AcmpError) {
        if let Some(done) = self.done.take() {
            let _ = done.send(Err(error));
        }
    }

    /// Takes one chunk; a chunk that breaks the order rules fails the input.
    pub(crate) fn push(&mut self, chunk: InputChunk) {
        if self.is_closed() {
            return;
        }
        let seq = chunk.seq;
        let problem = if seq < self.next || self.ahead.contains_key(&seq) {
            Some(format!("acmp/inputChunk: seq: {seq} was already received"))
        } else if self.final_seq.is_some_and(|f| seq > f) {
            Some(format!(
                "acmp/inputChunk: seq: {seq} comes after the final chunk"
            ))
        } else if seq > self.next + REORDER_WINDOW {
            Some(format!(
                "acmp/inputChunk: seq: gap: {seq} received while {} is missing",
                self.next
            ))
        } else if chunk.is_final && self.ahead.keys().any(|&s| s > seq) {
            Some(format!(
                "acmp/inputChunk: seq: final chunk {seq} before a later one"
            ))
        } else {
            None
        };
        if let Some(message) = problem {
            let error = invalid_params(&self.task_id, "seq", message);
            self.fail(error);
            return;
        }
        if chunk.is_final {
            self.final_seq = Some(seq);
        }
        self.ahead.insert(seq, chunk);
        while let Some(chunk) = self.ahead.remove(&self.next) {
            self.in_order.push(chunk.chunk);
            self.next += 1;
        }
        if self.final_seq.is_some_and(|f| self.next > f)
            && let Some(done) = self.done.take()
        {
            let _ = done.send(Ok(std::mem::take(&mut self.in_order)));
        }
    }
}

/// The whole input from its chunks: text chunks joined, anything else a `json` list of
/// the chunks' data.
pub(crate) fn assemble(chunks: Vec<Payload>) -> Payload {
    if !chunks.is_empty() && chunks.iter().all(|c| c.kind == "text") {
        let text: String = chunks
            .iter()
            .filter_map(|c| c.data.as_str())
            .collect::<Vec<_>>()
            .concat();
        Payload::text(text)
    } else {
        Payload::json(serde_json::Value::Array(
            chunks.into_iter().map(|c| c.data).collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(seq: u64, text: &str, last: bool) -> InputChunk {
        InputChunk {
            task_id: "t".into(),
            seq,
            chunk: Payload::text(text),
            is_final: last,
        }
    }

    #[tokio::test]
    async fn chunks_out_of_order_are_put_back_in_order() {
        let (tx, rx) = oneshot::channel();
        let mut r = Reorder::new("t", tx);
        r.push(chunk(2, "c", true));
        r.push(chunk(0, "a", false));
        assert!(!r.is_closed());
        r.push(chunk(1, "b", false));
        let all = rx.await.unwrap().unwrap();
        assert_eq!(assemble(all), Payload::text("abc"));
    }

    #[tokio::test]
    async fn gaps_duplicates_and_late_chunks_fail_naming_seq() {
        for chunks in [
            vec![chunk(0, "a", false), chunk(0, "a", false)],
            vec![chunk(0, "a", false), chunk(100, "b", false)],
            vec![chunk(1, "a", true), chunk(2, "b", false)],
            vec![chunk(3, "a", false), chunk(1, "b", true)],
        ] {
            let (tx, rx) = oneshot::channel();
            let mut r = Reorder::new("t", tx);
            for c in chunks {
                r.push(c);
            }
            let e = rx.await.unwrap().unwrap_err();
            assert_eq!(e.data.unwrap().extra["field"], "seq", "{}", e.message);
        }
    }
}
