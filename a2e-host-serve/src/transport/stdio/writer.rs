//! The stdio writer: a session's outbound items written as NDJSON, in
//! order, with as few writes as the output takes.

use std::time::Duration;

use a2e_proto::ndjson::{CodecError, NdjsonCodec};
use bytes::BytesMut;
use futures::SinkExt;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{Encoder, FramedWrite};
use tokio_util::sync::CancellationToken;

use super::pipe::PipeRoom;
use a2e_host_core::outbound::{EventReceiver, Outbound};

/// How long output may still be written once the input side has closed the
/// session (answers of calls that finished in the drain).
const WRITE_GRACE: Duration = Duration::from_secs(5);

/// Bytes buffered before the writer writes without waiting for more.
const OUTPUT_BATCH: usize = 64 * 1024;

/// Most items a writer's round keeps until its flush.
const MAX_HELD: usize = 64;

/// A run of lines at least this long is written as it is when nothing is
/// buffered before it, without a copy into the output buffer (a streaming
/// chain's events come in segments of 64 KiB, runs of up to 512 KiB, and
/// growing the buffer to hold them would copy each byte several times);
/// the runs queued right behind it go out in the same vectored writes
/// (fewer writes, and the agent woken once per write), and so does a
/// message right behind them (the chain's answer: written apart, the agent
/// may wake for the events and read them before the answer is written).
const DIRECT_LINES: usize = 16 * 1024;

/// Writes the session's messages as NDJSON: what is ready is written, then
/// flushed once (fewer syscalls under load). A broken output cancels the
/// session; after it, messages are drained without writing so that senders
/// never block on a dead output. With `room` (the output is a pipe), a run
/// of lines larger than the pipe grows it first (see [`PipeRoom`]).
pub(super) async fn write_out<W: AsyncWrite + Unpin>(
    writer: W,
    max: usize,
    mut rx: EventReceiver,
    cancel: CancellationToken,
    read_done: CancellationToken,
    mut room: Option<PipeRoom>,
) {
    let mut sink = FramedWrite::new(writer, OutboundCodec(NdjsonCodec::new(max)));
    // Written out once a pipe's worth (64 KiB) is buffered, or when nothing
    // more is ready: fewer writes, and fewer wake-ups of the reader.
    sink.set_backpressure_boundary(OUTPUT_BATCH);
    let ended = async {
        read_done.cancelled().await;
        tokio::time::sleep(WRITE_GRACE).await;
    };
    tokio::pin!(ended);
    let mut broken = false;
    // What was written in this round, freed once it is out: a chain's
    // answer holds every node's output, and freeing them before the write
    // would delay it.
    let mut written: Vec<Outbound> = Vec::new();
    loop {
        let msg = tokio::select! {
            msg = rx.recv() => msg,
            () = &mut ended => None,
        };
        let Some(msg) = msg else { return };
        if broken {
            continue;
        }
        let mut next = Some(msg);
        while let Some(msg) = next.take() {
            // What came after a run of lines gathered for one write.
            let mut after = None;
            let fed = match &msg {
                Outbound::Lines(lines)
                    if lines.len() >= DIRECT_LINES && sink.write_buffer().is_empty() =>
                {
                    // The runs queued right behind it go out in the same
                    // vectored writes: one wake-up of the reader for them all
                    // (freed once written, with `run`).
                    let mut run = vec![lines.clone()];
                    while run.len() < MAX_VECTORED {
                        match rx.try_recv() {
                            Some(Outbound::Lines(more)) => run.push(more),
                            Some(other) => {
                                after = Some(other);
                                break;
                            }
                            None => break,
                        }
                    }
                    // A message right behind the runs (a chain's answer
                    // after its events) ends them: encoded, it goes out in
                    // the same write, and the agent is woken once for all.
                    // (The sink's buffer is empty: feeding it only encodes.)
                    let mut encoded = Ok(());
                    if let Some(Outbound::Message(_)) = &after
                        && let Some(message) = after.take()
                    {
                        encoded = sink.feed(&message).await;
                        run.push(sink.write_buffer_mut().split().freeze());
                        // Freed once written, as the rest of the round.
                        written.push(message);
                    }
                    if let Some(room) = room.as_mut() {
                        room.make_room(run.iter().map(bytes::Bytes::len).sum());
                    }
                    write_all_vectored(sink.get_mut(), &mut run)
                        .await
                        .map_err(CodecError::from)
                        .and(encoded)
                }
                _ => sink.feed(&msg).await,
            };
            // A long round (the output keeps up with a fast producer) is
            // freed as it goes: past this many, the first are long written
            // (marks wait for the flush: they promise the write).
            if written.len() >= MAX_HELD {
                written.retain(|held| matches!(held, Outbound::Mark(_)));
            }
            written.push(msg);
            if let Err(e) = fed {
                tracing::info!("output closed ({e}); ending the session");
                cancel.cancel();
                broken = true;
                break;
            }
            next = after.or_else(|| rx.try_recv());
        }
        if !broken && let Err(e) = SinkExt::<&Outbound>::flush(&mut sink).await {
            tracing::info!("output closed ({e}); ending the session");
            cancel.cancel();
            broken = true;
        }
        written.clear();
    }
}

/// Most runs of lines one vectored write takes.
const MAX_VECTORED: usize = 16;

/// Writes every byte of `bufs`, in order, in as few vectored writes as the
/// output takes.
async fn write_all_vectored<W: AsyncWrite + Unpin>(
    writer: &mut W,
    bufs: &mut [bytes::Bytes],
) -> std::io::Result<()> {
    use bytes::Buf;
    let mut start = 0;
    loop {
        while bufs.get(start).is_some_and(|b| b.is_empty()) {
            start += 1;
        }
        let Some(rest) = bufs.get_mut(start..).filter(|rest| !rest.is_empty()) else {
            return Ok(());
        };
        let slices: Vec<std::io::IoSlice<'_>> =
            rest.iter().map(|b| std::io::IoSlice::new(b)).collect();
        let mut n = writer.write_vectored(&slices).await?;
        drop(slices);
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        for buf in rest.iter_mut() {
            let take = n.min(buf.len());
            buf.advance(take);
            n -= take;
            if n == 0 {
                break;
            }
        }
    }
}

/// NDJSON for a session's outbound items: a message is encoded, lines
/// encoded elsewhere are copied as they are.
struct OutboundCodec(NdjsonCodec);

impl Encoder<&Outbound> for OutboundCodec {
    type Error = CodecError;

    fn encode(&mut self, item: &Outbound, dst: &mut BytesMut) -> Result<(), CodecError> {
        match item {
            Outbound::Message(msg) => self.0.encode(msg, dst),
            Outbound::Lines(lines) => {
                dst.extend_from_slice(lines);
                Ok(())
            }
            // Kept with what this round wrote, dropped after its flush.
            Outbound::Mark(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::AsyncWrite;

    use a2e_host_core::outbound::EventStream;
    use a2e_host_core::outbound::{Mark, Outbound};

    /// Runs of lines larger than the output pipe grow it first, and arrive
    /// whole and in order.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_run_larger_than_the_pipe_grows_it() {
        use std::io::Read;
        use std::os::fd::OwnedFd;

        let ceiling: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if ceiling < super::super::pipe::MAX_PIPE_BYTES {
            eprintln!("SKIPPED: pipe-max-size is {ceiling}, below the host's ceiling");
            return;
        }
        let (mut reader, writer) = std::io::pipe().unwrap();
        let room = super::PipeRoom::new(OwnedFd::from(writer.try_clone().unwrap()));
        let size = |fd: &std::io::PipeWriter| {
            nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETPIPE_SZ).unwrap()
        };
        assert_eq!(size(&writer), 64 * 1024, "a new pipe's size");
        let out = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(
            writer.try_clone().unwrap(),
        ))
        .unwrap();
        let read_all = std::thread::spawn(move || {
            let mut all = Vec::new();
            reader.read_to_end(&mut all).unwrap();
            all
        });
        let (tx, rx) = EventStream::channel(16);
        let cancel = tokio_util::sync::CancellationToken::new();
        let writing = tokio::spawn(super::write_out(
            out,
            1 << 20,
            rx,
            cancel.clone(),
            cancel.clone(),
            Some(room),
        ));
        let mut sent = Vec::new();
        for run in 0..5u8 {
            let line: Vec<u8> = std::iter::repeat_n(b'a' + run, 64 * 1024 - 1)
                .chain([b'\n'])
                .collect();
            sent.extend_from_slice(&line);
            assert!(tx.send(Outbound::Lines(line.into())).await);
        }
        drop(tx);
        writing.await.unwrap();
        assert!(size(&writer) >= 256 * 1024, "grown to {}", size(&writer));
        drop(writer);
        assert!(
            read_all.join().unwrap() == sent,
            "the runs arrived whole, in order"
        );
    }

    /// A mark sent after an answer resolves only once the answer is out:
    /// what it promises a chain that waits to free its plan.
    #[tokio::test]
    async fn a_mark_resolves_once_what_came_before_it_is_written() {
        use tokio::io::AsyncReadExt;
        let (tx, rx) = EventStream::channel(8);
        let (mut agent, host) = tokio::io::duplex(1 << 20);
        let cancel = tokio_util::sync::CancellationToken::new();
        let writer = tokio::spawn(super::write_out(
            host,
            1 << 20,
            rx,
            cancel.clone(),
            cancel.clone(),
            None,
        ));
        let ping = a2e_proto::Message::from(a2e_proto::Ping::default());
        let (mark, written) = Mark::new();
        assert!(tx.send(Outbound::Message(ping.clone())).await);
        assert!(tx.send(Outbound::Mark(mark)).await);
        let _ = written.await;
        let mut line = ping.to_json();
        line.push(b'\n');
        let mut got = vec![0u8; line.len()];
        // Already in the pipe: the read completes without waiting.
        let read = futures::FutureExt::now_or_never(agent.read_exact(&mut got));
        assert!(read.is_some_and(|r| r.is_ok()), "the answer is not out yet");
        assert_eq!(got, line);
        drop(tx);
        writer.await.unwrap();
    }

    /// Takes at most `step` bytes per write, and records each write's
    /// buffers (the sizes of the slices it was handed).
    #[derive(Default)]
    struct Recording {
        step: usize,
        out: Vec<u8>,
        writes: Vec<Vec<usize>>,
    }

    impl AsyncWrite for Recording {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let n = buf.len().min(self.step);
            self.out.extend_from_slice(&buf[..n]);
            self.writes.push(vec![buf.len()]);
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[std::io::IoSlice<'_>],
        ) -> Poll<std::io::Result<usize>> {
            self.writes.push(bufs.iter().map(|b| b.len()).collect());
            let mut room = self.step;
            let mut n = 0;
            for buf in bufs {
                let take = buf.len().min(room);
                self.out.extend_from_slice(&buf[..take]);
                room -= take;
                n += take;
                if room == 0 {
                    break;
                }
            }
            Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn lines(tag: u8, len: usize) -> bytes::Bytes {
        let mut line = vec![tag; len - 1];
        line.push(b'\n');
        line.into()
    }

    /// Every byte goes out, in order, however little each write takes (the
    /// cut falls inside a buffer and across them; empty buffers are passed).
    #[tokio::test]
    async fn a_vectored_write_resumes_where_the_output_stopped() {
        for step in [1, 7, 64, 1 << 20] {
            let mut bufs = vec![
                lines(b'a', 100),
                bytes::Bytes::new(),
                lines(b'b', 33),
                lines(b'c', 1),
            ];
            let expected: Vec<u8> = bufs.iter().flat_map(|b| b.to_vec()).collect();
            let mut out = Recording {
                step,
                ..Recording::default()
            };
            super::write_all_vectored(&mut out, &mut bufs)
                .await
                .unwrap();
            assert_eq!(out.out, expected, "step {step}");
            assert!(bufs.iter().all(|b| b.is_empty()));
        }
    }

    /// Runs of lines queued right behind a long one go out in the same
    /// vectored write (one wake-up of the reader for them all), and so does
    /// the message right after them, encoded; what follows it is written
    /// after.
    #[tokio::test]
    async fn runs_queued_together_go_out_in_one_write() {
        let (tx, rx) = EventStream::channel(8);
        let ping = a2e_proto::Message::from(a2e_proto::Ping::default());
        let runs = [lines(b'a', 20_000), lines(b'b', 20_000), lines(b'c', 300)];
        for run in &runs {
            assert!(tx.send(Outbound::Lines(run.clone())).await);
        }
        assert!(tx.send(Outbound::Message(ping.clone())).await);
        assert!(tx.send(Outbound::Message(ping.clone())).await);
        drop(tx);
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut out = Recording {
            step: 1 << 20,
            ..Recording::default()
        };
        super::write_out(&mut out, 1 << 20, rx, cancel.clone(), cancel.clone(), None).await;
        let mut line = ping.to_json();
        line.push(b'\n');
        assert_eq!(
            out.writes.first(),
            Some(&vec![20_000, 20_000, 300, line.len()])
        );
        assert_eq!(
            out.writes.len(),
            2,
            "the second message in a write of its own"
        );
        let mut expected: Vec<u8> = runs.iter().flat_map(|b| b.to_vec()).collect();
        expected.extend_from_slice(&line);
        expected.extend_from_slice(&line);
        assert_eq!(out.out, expected);
        assert!(!cancel.is_cancelled());
    }
}
