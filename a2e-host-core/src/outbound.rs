//! What a session hands its transport, and a call its caller: messages, and
//! lines already encoded, over an [`EventStream`].

use std::sync::Arc;

use a2e_proto::Message;
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

/// One item of a session's outbound channel.
///
/// Most answers are a [`Message`] the transport encodes. A streaming chain's
/// events are encoded where they happen, on the chain's own task, into runs
/// of NDJSON lines: the transport writes them as they are (stdio) or one
/// frame per line (WebSocket, SSE), without an item per event.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "answers, the common item, would pay an allocation each if boxed"
)]
pub enum Outbound {
    /// A message to encode.
    Message(Message),
    /// Whole NDJSON lines, each a JSON message ending in `\n`.
    Lines(Bytes),
    /// Nothing to write: a [`Mark`] the writer drops once what came before
    /// it is written.
    Mark(Mark),
}

/// Tells its sender that the writer is past it: dropped (with every clone)
/// once the items sent before it are written, or when the output is gone.
///
/// A request that frees much after its answer (a large chain's plan and
/// request) waits for it instead of yielding: a yield makes the scheduler
/// wake an idle worker, which on a busy machine can take the CPU from the
/// worker about to write the answer; a wait wakes nothing until the
/// writer is done.
#[derive(Debug, Clone)]
pub struct Mark(Arc<oneshot::Sender<()>>);

impl Mark {
    /// A mark, and what resolves when it is dropped.
    pub fn new() -> (Self, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (Self(Arc::new(tx)), rx)
    }
}

impl PartialEq for Mark {
    /// The same mark (a clone of it).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl From<Message> for Outbound {
    fn from(msg: Message) -> Self {
        Self::Message(msg)
    }
}

impl Outbound {
    /// Each message's JSON text, without its newline.
    pub fn json_texts(&self) -> Vec<Bytes> {
        match self {
            Self::Message(msg) => vec![Bytes::from(msg.to_json())],
            Self::Lines(lines) => split_lines(lines).collect(),
            Self::Mark(_) => Vec::new(),
        }
    }

    /// The messages, decoded (lines that do not decode are left out; the
    /// host only writes lines it encoded itself).
    pub fn into_messages(self) -> Vec<Message> {
        match self {
            Self::Message(msg) => vec![msg],
            Self::Lines(lines) => split_lines(&lines)
                .filter_map(|line| a2e_proto::decode(&line).ok())
                .collect(),
            Self::Mark(_) => Vec::new(),
        }
    }
}

/// Where a session's or a call's messages go: the sending side of a bounded
/// channel of [`Outbound`] items. Clones send into the same channel; a full
/// channel makes the sender wait (back-pressure on whoever produces events).
#[derive(Debug, Clone)]
pub struct EventStream(mpsc::Sender<Outbound>);

/// What an [`EventStream`] sends, in order: a transport writes it out, an
/// embedder reads the events of its calls from it.
#[derive(Debug)]
pub struct EventReceiver(mpsc::Receiver<Outbound>);

impl EventStream {
    /// A stream holding at most `capacity` items (at least 1) that were not yet received.
    pub fn channel(capacity: usize) -> (EventStream, EventReceiver) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (EventStream(tx), EventReceiver(rx))
    }

    /// Sends one item; `false` when the receiver is gone.
    pub async fn send(&self, item: Outbound) -> bool {
        self.0.send(item).await.is_ok()
    }

    /// The channel's sender, for the host's own producers.
    pub(crate) fn into_sender(self) -> mpsc::Sender<Outbound> {
        self.0
    }

    /// Whether the receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

impl EventReceiver {
    /// The next item, or `None` once every [`EventStream`] clone is dropped
    /// and everything sent was received.
    pub async fn recv(&mut self) -> Option<Outbound> {
        self.0.recv().await
    }

    /// The next item if one is ready now.
    pub fn try_recv(&mut self) -> Option<Outbound> {
        self.0.try_recv().ok()
    }

    /// Up to `limit` items that are ready, appended to `into`, waiting for the
    /// first; 0 once the stream has ended.
    pub async fn recv_many(&mut self, into: &mut Vec<Outbound>, limit: usize) -> usize {
        self.0.recv_many(into, limit).await
    }

    /// Polls for the next item (for transports that drive the receiver by hand).
    pub fn poll_recv(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Outbound>> {
        self.0.poll_recv(cx)
    }

    /// Stops new items; those already sent can still be received.
    pub fn close(&mut self) {
        self.0.close();
    }
}

/// The lines of `lines` (each without its `\n`), sharing its buffer.
fn split_lines(lines: &Bytes) -> impl Iterator<Item = Bytes> + '_ {
    let mut rest = lines.clone();
    std::iter::from_fn(move || {
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let line = rest.split_to(end);
            if !rest.is_empty() {
                // The newline itself.
                let _ = rest.split_to(1);
            }
            if !line.is_empty() {
                return Some(line);
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_into_their_messages_and_decode_back() {
        let ping = Message::from(a2e_proto::Ping::default());
        let mut text = ping.to_json();
        text.push(b'\n');
        text.extend_from_slice(b"\n");
        text.extend(ping.to_json());
        text.push(b'\n');
        let lines = Outbound::Lines(Bytes::from(text));
        assert_eq!(lines.json_texts().len(), 2);
        assert_eq!(lines.json_texts()[0], Bytes::from(ping.to_json()));
        assert_eq!(lines.into_messages(), vec![ping.clone(), ping.clone()]);
        let one = Outbound::from(ping.clone());
        assert_eq!(one.json_texts(), vec![Bytes::from(ping.to_json())]);
        assert_eq!(one.into_messages(), vec![ping]);
    }

    #[tokio::test]
    async fn a_mark_resolves_when_its_last_clone_is_dropped() {
        let (mark, mut done) = Mark::new();
        let out = Outbound::Mark(mark.clone());
        assert_eq!(out, Outbound::Mark(mark.clone()));
        assert_ne!(out, Outbound::Mark(Mark::new().0));
        assert!(out.json_texts().is_empty());
        drop(mark);
        assert!(
            done.try_recv()
                .is_err_and(|e| e == oneshot::error::TryRecvError::Empty)
        );
        assert!(out.into_messages().is_empty());
        assert!(
            done.await.is_err(),
            "no value is ever sent: the drop is the signal"
        );
    }

    #[test]
    fn a_last_line_without_its_newline_still_counts() {
        let lines = Bytes::from_static(b"{\"a\":1}\n{\"b\":2}");
        let got: Vec<Bytes> = split_lines(&lines).collect();
        assert_eq!(got, [&b"{\"a\":1}"[..], &b"{\"b\":2}"[..]]);
    }
}
