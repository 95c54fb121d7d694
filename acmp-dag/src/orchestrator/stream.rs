//! Forwarding a task's output chunks to its streaming dependents, and assembling the chunks
//! into the output its other dependents receive.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::{InputChunk, InvokeResult, Payload};

/// The output stream of a task invoked with `stream: true`.
pub(crate) struct OutStream {
    targets: Vec<(mpsc::UnboundedSender<InputChunk>, Arc<str>)>,
    seq: u64,
    chunks: Vec<Payload>,
    finished: bool,
}

impl OutStream {
    pub(crate) fn new(targets: Vec<(mpsc::UnboundedSender<InputChunk>, Arc<str>)>) -> Self {
        Self {
            targets,
            seq: 0,
            chunks: Vec::new(),
            finished: false,
        }
    }

    /// Forwards one chunk as an `acmp/inputChunk` to every streaming dependent.
    pub(crate) fn push(&mut self, chunk: Payload, last: bool) {
        if self.finished {
            return;
        }
        for (tx, task_id) in &self.targets {
            // A dependent that already finished or was cancelled no longer listens.
            let _ = tx.send(InputChunk {
                task_id: task_id.to_string(),
                seq: self.seq,
                chunk: chunk.clone(),
                is_final: last,
            });
        }
        self.seq += 1;
        self.chunks.push(chunk);
        if last {
            self.finished = true;
            self.targets.clear();
        }
    }

    /// Closes the stream when the result arrives, and returns the output assembled from
    /// the chunks (`None` when the result's own output stands).
    ///
    /// A provider that streamed nothing but returned its output has that output forwarded
    /// as one final chunk. Chunks without a final one are a protocol violation.
    pub(crate) fn finish(&mut self, result: &InvokeResult) -> Result<Option<Payload>, String> {
        if !self.finished {
            match (&result.output, self.chunks.is_empty()) {
                (Some(output), true) => {
                    self.push(output.clone(), true);
                    return Ok(None);
                }
                (None, true) => {
                    return Err("streamed result without any chunk or output".to_owned());
                }
                (_, false) => {
                    return Err("output stream ended without a final chunk".to_owned());
                }
            }
        }
        Ok(assemble(std::mem::take(&mut self.chunks)))
    }
}

/// The output of a streamed task: one chunk as is; several string chunks concatenated (with
/// the first chunk's type); otherwise a `json` array of the chunks' data.
pub(crate) fn assemble(chunks: Vec<Payload>) -> Option<Payload> {
    let mut iter = chunks.into_iter();
    let first = iter.next()?;
    let rest: Vec<Payload> = iter.collect();
    if rest.is_empty() {
        return Some(first);
    }
    if first.data.is_string() && rest.iter().all(|c| c.data.is_string()) {
        let mut text = String::new();
        for c in std::iter::once(&first).chain(&rest) {
            if let Value::String(s) = &c.data {
                text.push_str(s);
            }
        }
        return Some(Payload::new(first.kind, Value::String(text)));
    }
    let items = std::iter::once(first).chain(rest).map(|c| c.data).collect();
    Some(Payload::json(Value::Array(items)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn assembles_text_json_and_single_chunks() {
        assert_eq!(assemble(vec![]), None);
        let one = Payload::json(json!({"a": 1}));
        assert_eq!(assemble(vec![one.clone()]), Some(one));
        assert_eq!(
            assemble(vec![Payload::text("ab"), Payload::text("c")]),
            Some(Payload::text("abc"))
        );
        assert_eq!(
            assemble(vec![Payload::json(json!(1)), Payload::text("x")]),
            Some(Payload::json(json!([1, "x"])))
        );
    }
}
