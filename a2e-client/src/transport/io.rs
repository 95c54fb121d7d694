//! NDJSON over any pair of byte streams.

use std::sync::Arc;

use a2e_proto::Message;
use a2e_proto::ndjson::{Frame, NdjsonCodec};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};

use super::Guard;
use crate::conn::Shared;

/// Spawns the reader and writer of an NDJSON connection.
pub(crate) fn spawn<R, W>(
    reader: R,
    writer: W,
    shared: &Arc<Shared>,
    out: mpsc::Receiver<Message>,
    max: usize,
) -> Guard
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let read = tokio::spawn(read_loop(reader, shared.clone(), max));
    let write = tokio::spawn(write_loop(writer, out, shared.clone(), max));
    Guard {
        tasks: vec![read, write],
        child: None,
    }
}

async fn read_loop<R: AsyncRead + Unpin>(reader: R, shared: Arc<Shared>, max: usize) {
    let mut frames = FramedRead::new(reader, NdjsonCodec::new(max));
    let reason = loop {
        match frames.next().await {
            Some(Ok(Frame::Line(line))) => super::receive(&shared, &line, max),
            Some(Ok(Frame::TooLong { limit })) => {
                tracing::warn!("{} sent a line over {limit} bytes; skipped", shared.peer());
            }
            Some(Err(e)) => break format!("reading from {} failed: {e}", shared.peer()),
            None => break format!("{} closed the connection", shared.peer()),
        }
    };
    shared.fail_all(&reason);
}

async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    mut out: mpsc::Receiver<Message>,
    shared: Arc<Shared>,
    max: usize,
) {
    let mut sink = FramedWrite::new(writer, NdjsonCodec::new(max));
    loop {
        let msg = tokio::select! {
            msg = out.recv() => msg,
            () = shared.stop.cancelled() => None,
        };
        let Some(msg) = msg else { break };
        let mut result = sink.feed(&msg).await;
        // Whatever else is queued goes out with the same flush.
        while result.is_ok() {
            match out.try_recv() {
                Ok(more) => result = sink.feed(&more).await,
                Err(_) => break,
            }
        }
        if let Err(e) = result.and(SinkExt::<&Message>::flush(&mut sink).await) {
            shared.fail_all(&format!("writing to the host failed: {e}"));
            return;
        }
    }
    // Closing the output tells the host this agent is done.
    let _ = SinkExt::<&Message>::close(&mut sink).await;
}
