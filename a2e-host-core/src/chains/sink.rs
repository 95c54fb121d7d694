//! A streaming chain's events on their way to the session's writer: encoded
//! where they happen, handed on in runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2e_chain::{ChainEventSink, Event};
use a2e_proto::ChainEventRef;
use a2e_proto::ndjson::NdjsonCodec;
use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;
use tokio_util::codec::Encoder;
use tokio_util::sync::CancellationToken;

use crate::outbound::Outbound;

/// Bytes of encoded events a streaming chain gathers at most before it
/// hands them on although the engine is not about to wait.
pub(super) const EVENT_CHUNK: usize = 512 * 1024;

/// A run is gathered in segments of this size (one allocation each, none
/// grown and copied as the run gets longer); each goes to the writer as it
/// is (the stdio writer writes runs this long without copying them).
pub(super) const EVENT_SEGMENT: usize = 64 * 1024;

/// Room past a segment's size for the line that fills it.
pub(super) const EVENT_SLACK: usize = 4 * 1024;

/// How long an event may wait in a streaming chain's buffer while the
/// engine keeps working (a stretch of nodes that finish inline) before the
/// run is handed on.
pub(super) const EVENT_AGE: Duration = Duration::from_millis(5);

/// A streaming chain's events, each a `chain/event` message encoded by the
/// NDJSON codec on the chain's own task, handed to the session's channel in
/// runs of lines: whenever the engine is about to wait, and, while it keeps
/// working, once the run's first event is [`EVENT_AGE`] old or
/// [`EVENT_CHUNK`] bytes are ready. Each run handed on costs a switch to
/// the writer and a wake-up of the agent, so a stretch of inline nodes
/// shorter than the age goes out in one write when it ends. A run goes
/// straight into the channel when it has room and nothing is queued before
/// it; otherwise it queues (the engine's sink must not block) and the
/// request's forwarder sends it in order. One wake-up of the writer per run
/// instead of one per event; the engine flushes at the end of the run, so
/// every event precedes the response.
/// After handing a run on, the sink has the engine yield
/// ([`ChainEventSink::handed_on`]): the writer, woken on the chain's thread,
/// writes the run while the chain goes on, instead of all runs at its end.
/// A run is gathered in segments of [`EVENT_SEGMENT`] bytes, handed on one
/// item each. More than `limit` bytes queued (an agent that does not read)
/// cancels the run; the events after that point are dropped.
pub(super) struct LineSink {
    /// The request the events answer.
    req_id: String,
    codec: NdjsonCodec,
    buf: BytesMut,
    direct: mpsc::Sender<Outbound>,
    /// Runs behind the channel, with their length in bytes.
    queue: mpsc::UnboundedSender<(Outbound, usize)>,
    /// Bytes queued behind the channel.
    queued: Arc<AtomicUsize>,
    limit: usize,
    cancel: CancellationToken,
    overflowed: bool,
    /// A run went to the channel since the engine last asked.
    handed_on: bool,
    /// When the first event of the run was made (its `ts`).
    run_started: f64,
    /// The durable run's id, sent on its first event (empty: none).
    run_id: String,
    /// Full segments of the run, set aside before `buf`.
    segments: Vec<Bytes>,
    /// Bytes in `segments`.
    held: usize,
}

impl LineSink {
    /// A sink for the events of request `req_id`: runs go to `direct`, or
    /// behind it to `queue` (whose bytes `queued` counts) once it is full;
    /// more than `limit` bytes queued fires `cancel`.
    pub(super) fn new(
        req_id: &str,
        direct: mpsc::Sender<Outbound>,
        queue: mpsc::UnboundedSender<(Outbound, usize)>,
        queued: Arc<AtomicUsize>,
        limit: usize,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            req_id: req_id.to_owned(),
            codec: NdjsonCodec::default(),
            buf: BytesMut::with_capacity(EVENT_SEGMENT + EVENT_SLACK),
            direct,
            queue,
            queued,
            limit,
            cancel,
            overflowed: false,
            handed_on: false,
            run_started: 0.0,
            run_id: String::new(),
            segments: Vec::new(),
            held: 0,
        }
    }

    /// The same sink, naming durable run `run_id` on the run's first event.
    pub(super) fn for_run(mut self, run_id: &str) -> Self {
        self.run_id = run_id.to_owned();
        self
    }

    /// Bytes of the run not handed on yet.
    fn held(&self) -> usize {
        self.held + self.buf.len()
    }

    /// Hands one segment of the run on: into the channel when it has room
    /// and nothing of this chain is queued before it, else behind it.
    fn hand_on(&mut self, bytes: Bytes) {
        let len = bytes.len();
        let lines = Outbound::Lines(bytes);
        let lines = if self.queued.load(Ordering::Acquire) == 0 {
            match self.direct.try_send(lines) {
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => return,
                Err(mpsc::error::TrySendError::Full(lines)) => lines,
            }
        } else {
            lines
        };
        let before = self.queued.fetch_add(len, Ordering::AcqRel);
        let _ = self.queue.send((lines, len));
        if before.saturating_add(len) > self.limit {
            self.overflowed = true;
            self.buf = BytesMut::new();
            self.segments.clear();
            self.cancel.cancel();
        }
    }
}

impl ChainEventSink for LineSink {
    fn event(&mut self, event: &Event<'_>) {
        if self.overflowed {
            return;
        }
        let first = self.held() == 0;
        // A chain event always encodes (every key is a string); one that
        // did not would leave nothing behind. Its `ts` dates the run.
        let run_id = if event.seq == 0 {
            self.run_id.as_str()
        } else {
            ""
        };
        let made = event.with_wire(&self.req_id, |wire| {
            if run_id.is_empty() {
                let _ = self.codec.encode(wire, &mut self.buf);
            } else {
                let named = ChainEventRef {
                    run_id,
                    ..wire.clone()
                };
                let _ = self.codec.encode(&named, &mut self.buf);
            }
            wire.ts
        });
        if first {
            self.run_started = made;
        }
        // A full segment is set aside, not grown (growing copies it).
        if self.buf.len() >= EVENT_SEGMENT {
            let next = BytesMut::with_capacity(EVENT_SEGMENT + EVENT_SLACK);
            let full = std::mem::replace(&mut self.buf, next).freeze();
            self.held += full.len();
            self.segments.push(full);
        }
        if self.held() >= EVENT_CHUNK || made - self.run_started >= EVENT_AGE.as_secs_f64() {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.held() == 0 || self.overflowed {
            return;
        }
        self.handed_on = true;
        for segment in std::mem::take(&mut self.segments) {
            if self.overflowed {
                return;
            }
            self.hand_on(segment);
        }
        self.held = 0;
        if !self.buf.is_empty() && !self.overflowed {
            let next =
                BytesMut::with_capacity(self.buf.len().clamp(1024, EVENT_SEGMENT + EVENT_SLACK));
            let rest = std::mem::replace(&mut self.buf, next).freeze();
            self.hand_on(rest);
        }
    }

    fn handed_on(&mut self) -> bool {
        std::mem::take(&mut self.handed_on)
    }
}

/// Two sinks that see every event: a streaming chain's [`LineSink`] and the
/// sink that journals a durable run's events.
pub(super) struct Tee<A, B>(pub A, pub B);

impl<A: ChainEventSink, B: ChainEventSink> ChainEventSink for Tee<A, B> {
    fn event(&mut self, event: &Event<'_>) {
        self.1.event(event);
        self.0.event(event);
    }

    fn flush(&mut self) {
        self.1.flush();
        self.0.flush();
    }

    fn handed_on(&mut self) -> bool {
        let a = self.0.handed_on();
        let b = self.1.handed_on();
        a || b
    }
}
