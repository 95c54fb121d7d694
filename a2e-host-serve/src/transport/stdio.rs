//! NDJSON over a pair of byte streams (the host's stdin/stdout, or any pipe).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use a2e_proto::ndjson::{Frame, NdjsonCodec};
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use crate::session::{OUTBOUND_CAPACITY, Session};
use a2e_host_core::host::Host;
use a2e_host_core::outbound::EventStream;

mod pipe;
mod writer;

pub use pipe::MAX_PIPE_BYTES;

/// What ends the session when the input stream ends.
#[derive(Debug, Clone, Copy)]
pub struct StdioOptions {
    /// On end of input, how long calls in flight may still finish and answer
    /// (while the output stays writable) before they are cancelled.
    pub drain_on_eof: Duration,
}

impl Default for StdioOptions {
    fn default() -> Self {
        Self {
            drain_on_eof: Duration::from_secs(30),
        }
    }
}

/// Serves one session over `reader`/`writer` until the input ends or the
/// agent sends `shutdown`; then drains, cancels what is left and kills the
/// session's processes. When the output breaks (the agent went away) the
/// session is cancelled at once.
///
/// Reading and writing are two futures of one task: a request answered on
/// its first poll (see the session) is written by the same thread that read
/// it, in the same run of the task, with no hand-off between threads on the
/// way (the writer is polled first, and again in the same run when the
/// reader has left something to write; see `both`).
pub async fn serve<R, W>(host: Arc<Host>, reader: R, writer: W, options: StdioOptions)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with_room(host, reader, writer, options, None, None).await;
}

/// [`serve`], growing the output pipe for large runs of lines when `room`
/// is given (see [`pipe::PipeRoom`]).
async fn serve_with_room<R, W>(
    host: Arc<Host>,
    reader: R,
    writer: W,
    options: StdioOptions,
    room: Option<pipe::PipeRoom>,
    beside: Option<Arc<super::net::NetState>>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = EventStream::channel(OUTBOUND_CAPACITY);
    let session = Session::on_transport(host.clone(), tx, "stdio");
    // Listed among the open sessions of the listeners beside it (their
    // live view shows it) until it ends.
    let listed = beside.map(|state| state.open.list(&session, "stdio"));
    let max = host.config().max_message_bytes;
    let read_done = CancellationToken::new();
    let write = writer::write_out(
        writer,
        max,
        rx,
        session.cancel_token().clone(),
        read_done.clone(),
        room,
    );
    let read = async move {
        let mut frames = FramedRead::new(reader, NdjsonCodec::new(max));
        loop {
            let next = tokio::select! {
                next = frames.next() => next,
                _ = session.cancel_token().cancelled() => break,
            };
            match next {
                Some(Ok(Frame::Line(line))) => session.handle_line(&line).await,
                Some(Ok(Frame::TooLong { limit })) => session.handle_too_long(limit).await,
                Some(Err(e)) => {
                    tracing::info!("input failed: {e}");
                    break;
                }
                None => break,
            }
            if session.cancel_token().is_cancelled() {
                break;
            }
        }
        session.close(options.drain_on_eof).await;
        drop(listed);
        drop(session);
        read_done.cancel();
    };
    both(write, read).await;
}

/// Runs the writer and the reader as one future. The writer is polled
/// first, each time the task runs, and again in the same run whenever it
/// was woken meanwhile (the reader handled a request inline and sent its
/// answer): that answer is written at once, not after a trip through the
/// scheduler, and a handler that waits after sending (a chain, before it
/// frees its plan) finds its answer written when it goes on.
///
/// The writer gets a waker of its own ([`WriterWake`]): a wake that comes
/// while this task runs is taken here and not passed on. Passed on, it
/// would mark the running task as woken, and tokio then reschedules the
/// task as if it had yielded, waking an idle worker (an `eventfd` write and
/// a thread wake-up per answer; on a busy machine the woken worker can take
/// the CPU of the one about to write the answer).
async fn both(write: impl Future<Output = ()>, read: impl Future<Output = ()>) {
    /// Rounds of one run, at most (a reader that keeps answering inline
    /// yields to the scheduler after them).
    const ROUNDS: usize = 4;
    let (mut write, mut read) = (std::pin::pin!(write), std::pin::pin!(read));
    let (mut written, mut read_all) = (false, false);
    let wake = Arc::new(WriterWake::default());
    let writer_waker = futures::task::waker(wake.clone());
    std::future::poll_fn(|cx| {
        wake.task.register(cx.waker());
        wake.running.store(true, Ordering::SeqCst);
        // The first round polls the writer whether woken or not: the task
        // may run for it (its waker went to the task before this run).
        wake.woken.store(true, Ordering::SeqCst);
        for _ in 0..ROUNDS {
            if !written && wake.woken.swap(false, Ordering::SeqCst) {
                let mut writer_cx = Context::from_waker(&writer_waker);
                written = write.as_mut().poll(&mut writer_cx).is_ready();
            }
            if !read_all {
                read_all = read.as_mut().poll(cx).is_ready();
            }
            if written && read_all {
                return Poll::Ready(());
            }
            if written || !wake.woken.load(Ordering::SeqCst) {
                break;
            }
        }
        wake.running.store(false, Ordering::SeqCst);
        // A wake taken here but not acted on (the last round, or one that
        // came just before `running` was cleared) is passed on now.
        if !written && wake.woken.load(Ordering::SeqCst) {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    })
    .await;
}

/// The stdio writer's waker (see [`both`]): records each wake, and passes
/// it on to the task only while the task is not running.
#[derive(Default)]
struct WriterWake {
    /// The task's own waker, as of its last run.
    task: futures::task::AtomicWaker,
    /// The task is inside [`both`]'s poll.
    running: AtomicBool,
    /// The writer was woken since it was last polled.
    woken: AtomicBool,
}

impl futures::task::ArcWake for WriterWake {
    fn wake_by_ref(arc_self: &Arc<Self>) {
        arc_self.woken.store(true, Ordering::SeqCst);
        if !arc_self.running.load(Ordering::SeqCst) {
            arc_self.task.wake();
        }
    }
}

/// Serves one session on the process's own stdin/stdout. Also ends the
/// session as soon as stdout's reader goes away, even while nothing is written.
pub async fn serve_stdio(host: Arc<Host>) {
    serve_stdio_beside(host, None).await;
}

/// [`serve_stdio`] beside network listeners (`a2e serve --stdio --http
/// ADDR`): the session is listed among `state`'s open sessions, with
/// transport `stdio`, so that their live view shows it.
pub async fn serve_stdio_beside(host: Arc<Host>, state: Option<Arc<super::net::NetState>>) {
    let (stdin, stdout, room) = std_streams();
    let gone = tokio_util::sync::CancellationToken::new();
    let watcher = tokio::spawn(watch_stdout(gone.clone()));
    // On a runtime worker, not on the thread that blocks on the runtime: the
    // worker that sees the input ready runs the session at once, where the
    // blocking thread would have to be woken by it first.
    let mut session = tokio::spawn(serve_with_room(
        host,
        stdin,
        stdout,
        StdioOptions::default(),
        room,
        state,
    ));
    let ended = tokio::select! {
        _ = &mut session => true,
        _ = gone.cancelled() => {
            tracing::info!("stdout closed; ending");
            false
        }
        _ = terminated() => {
            tracing::info!("signal received; ending");
            false
        }
    };
    if !ended {
        // Dropping the session (on a signal or a vanished reader) cancels
        // its calls and kills its process groups; wait until it has.
        session.abort();
        let _ = session.await;
    }
    watcher.abort();
}

type Input = Box<dyn AsyncRead + Unpin + Send>;
type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// The process's stdin and stdout. Pipes (how agents start a host) are
/// read and written without blocking, registered with the runtime's reactor:
/// no hand-off to the blocking pool per read or write, and enlarged to
/// [`PIPE_BYTES`] (see [`enlarge_pipe`]); the output pipe grows further for
/// large runs of lines (the [`pipe::PipeRoom`] returned). Anything else (a
/// terminal, a file) goes through tokio's blocking stdin/stdout.
fn std_streams() -> (Input, Output, Option<pipe::PipeRoom>) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let stdin: Input = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Receiver::from_owned_fd(fd).ok())
        .map_or_else(
            || Box::new(tokio::io::stdin()) as Input,
            |r| {
                enlarge_pipe(&r, "stdin");
                Box::new(r)
            },
        );
    let mut room = None;
    let stdout: Output = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Sender::from_owned_fd(fd).ok())
        .map_or_else(
            || Box::new(tokio::io::stdout()) as Output,
            |w| {
                enlarge_pipe(&w, "stdout");
                room = w
                    .as_fd()
                    .try_clone_to_owned()
                    .ok()
                    .map(self::pipe::PipeRoom::new);
                Box::new(w)
            },
        );
    (stdin, stdout, room)
}

/// The size the host asks for its stdin and stdout pipes: 256 KiB, four
/// times the kernel's default. Larger pipes count against the user's
/// `pipe-user-pages-soft` (64 MiB by default), past which every new pipe of
/// that user gets a single page: at this size 128 hosts of one user stay
/// below it.
pub const PIPE_BYTES: usize = 256 * 1024;

/// Grows a pipe from the kernel's 64 KiB to [`PIPE_BYTES`]. A request larger
/// than the pipe (a 1000-node `chain/req` is ~80 KB) otherwise crosses in
/// pieces: the agent's write blocks halfway until the host has read, and
/// each piece costs the host a wake-up, which on a busy machine takes
/// hundreds of microseconds. The output pipe grows further when a run of
/// lines needs it (a streaming chain's events, ~400 KB for 1000 nodes: see
/// [`pipe::PipeRoom`]). Refused (a lower limit, not Linux): the pipe keeps
/// its size.
fn enlarge_pipe(pipe: &impl std::os::fd::AsFd, name: &str) {
    if let Err(e) = self::pipe::grow(pipe, PIPE_BYTES) {
        tracing::debug!("{name}: pipe kept its size ({e})");
    }
}

/// Fires `gone` when stdout reports an error or hang-up (its reader closed).
async fn watch_stdout(gone: tokio_util::sync::CancellationToken) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let stdout = std::io::stdout();
        let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
        if poll(&mut fds, PollTimeout::ZERO).is_ok() {
            let broken = fds
                .first()
                .and_then(PollFd::revents)
                .is_some_and(|r| r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP));
            if broken {
                gone.cancel();
                return;
            }
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

#[cfg(test)]
mod order_tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use tokio::sync::mpsc;

    use a2e_test_kit::plugin::Wakes;

    /// A writer that records the last number it took.
    async fn taking(mut rx: mpsc::Receiver<u32>, taken: Arc<AtomicU32>) {
        while let Some(n) = rx.recv().await {
            taken.store(n, Ordering::SeqCst);
        }
    }

    /// A handler that sends and then yields finds what it sent already
    /// taken by the writer when it goes on, every time (two futures joined
    /// in turn would leave it unwritten every other time).
    #[tokio::test]
    async fn the_writer_takes_what_the_reader_sent_before_the_reader_goes_on() {
        let (tx, rx) = mpsc::channel::<u32>(8);
        let taken = Arc::new(AtomicU32::new(0));
        let write = taking(rx, taken.clone());
        let read = async move {
            for n in 1..=50 {
                tx.send(n).await.unwrap();
                tokio::task::yield_now().await;
                assert_eq!(taken.load(Ordering::SeqCst), n, "sent {n}, not yet taken");
            }
        };
        super::both(write, read).await;
    }

    /// What the reader sends while the task runs is written in that run and
    /// does not wake the task (tokio would reschedule it and wake an idle
    /// worker); what arrives while the task is idle wakes it.
    #[test]
    fn only_a_send_from_outside_the_run_wakes_the_task() {
        let (tx, rx) = mpsc::channel::<u32>(8);
        let outside = tx.clone();
        let taken = Arc::new(AtomicU32::new(0));
        let write = taking(rx, taken.clone());
        let read = async move {
            tx.send(1).await.unwrap();
            std::future::pending::<()>().await;
        };
        let (wakes, waker) = Wakes::waker();
        let mut cx = std::task::Context::from_waker(&waker);
        let mut run = std::pin::pin!(super::both(write, read));
        assert!(run.as_mut().poll(&mut cx).is_pending());
        assert_eq!(taken.load(Ordering::SeqCst), 1, "written in the same run");
        assert_eq!(wakes.count(), 0, "the task woke itself");
        outside.try_send(2).unwrap();
        assert_eq!(wakes.count(), 1, "a send from outside");
        assert!(run.as_mut().poll(&mut cx).is_pending());
        assert_eq!(taken.load(Ordering::SeqCst), 2);
        assert_eq!(wakes.count(), 1);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use nix::fcntl::{FcntlArg, fcntl};

    #[test]
    fn a_pipe_is_enlarged_for_both_its_ends() {
        let (reader, writer) = std::io::pipe().unwrap();
        let before = fcntl(&writer, FcntlArg::F_GETPIPE_SZ).unwrap();
        let ceiling: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if ceiling < super::PIPE_BYTES {
            eprintln!(
                "SKIPPED: pipe-max-size is {ceiling}, below {}",
                super::PIPE_BYTES
            );
            return;
        }
        super::enlarge_pipe(&reader, "stdin");
        let after = fcntl(&writer, FcntlArg::F_GETPIPE_SZ).unwrap();
        assert!(before < after, "{before} -> {after}");
        assert_eq!(usize::try_from(after).unwrap(), super::PIPE_BYTES);
    }
}
