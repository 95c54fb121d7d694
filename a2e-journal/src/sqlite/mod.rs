//! The embedded journal: one SQLite file (`.a2e/runs.db` under a root), WAL.

mod commit;
mod live;
mod read;
mod schema;
mod writer;

pub use self::schema::Durability;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use rusqlite::Connection;
use serde_json::Value;

use self::commit::Shared;
use self::live::Live;
use self::writer::{Op, Writer};
use crate::error::{JournalError, Result};
use crate::ids::{NodeKey, RunId};
use crate::journal::{Ack, Journal, Kick};
use crate::model::{
    Loaded, NewRun, NodeOutcome, NodeStart, PruneReport, Retention, RunFilter, RunItem, RunState,
    RunStatus, RunSummary, StoredEvent, now_ms,
};

/// Where the journal lives under a root directory.
pub const RUNS_DB: &str = ".a2e/runs.db";

/// How to open a [`SqliteJournal`].
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// What an acknowledged write survives (default: the process being
    /// killed; see [`Durability`]).
    pub durability: Durability,
    /// Finished runs kept; `None` keeps all (prune by hand). Default: see
    /// [`Retention::default`].
    pub retention: Option<Retention>,
    /// The retention is applied after every this many finished runs
    /// (default 16).
    pub prune_every: u32,
    /// How long to wait for another process's write lock (default 10 s).
    pub busy_timeout: Duration,
    /// How often a subscription looks for events written by another process
    /// on the same file (default 250 ms; writes of this process wake it at
    /// once).
    pub poll_interval: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            durability: Durability::default(),
            retention: Some(Retention::default()),
            prune_every: 16,
            busy_timeout: Duration::from_secs(10),
            poll_interval: Duration::from_millis(250),
        }
    }
}

/// What a [`SqliteJournal`]'s writer has done since the file was opened
/// ([`SqliteJournal::commit_stats`]). Under [`Durability::PowerLoss`] each
/// commit syncs the WAL to disk once; under [`Durability::ProcessCrash`] a
/// commit makes no sync. A checkpoint (copying the WAL into the file) syncs
/// both files, in either mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Transactions committed (each holds every write queued before it).
    pub commits: u64,
    /// Checkpoints the writer ran.
    pub checkpoints: u64,
}

/// The reading connection, used on tokio's blocking pool.
pub(crate) struct Reader {
    conn: Mutex<Connection>,
}

impl Reader {
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on the connection, off the async threads.
    pub(crate) async fn with<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let me = Arc::clone(self);
        tokio::task::spawn_blocking(move || f(&me.lock()))
            .await
            .map_err(|e| JournalError::Io {
                path: "reader".into(),
                source: std::io::Error::other(e.to_string()),
            })?
    }
}

struct Inner {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
    reader: Arc<Reader>,
    live: Arc<Live>,
    path: PathBuf,
    poll: Duration,
}

impl Drop for Inner {
    /// Closes the queue and waits for the writer to commit what is queued.
    fn drop(&mut self) {
        self.shared.close();
        if let Some(handle) = self.writer.take() {
            let _ = handle.join();
        }
    }
}

/// The embedded [`Journal`]: one SQLite file in WAL mode.
///
/// - **Durable before downstream**: a write's [`Ack`] resolves after its
///   transaction committed. With the default [`Durability::ProcessCrash`]
///   (`synchronous=NORMAL`) the commit is in the WAL, in the operating
///   system's hands: it survives SIGKILL of the host; a power cut may lose
///   the last commits, never the file's consistency.
///   [`Durability::PowerLoss`] (`synchronous=FULL`) syncs every commit.
/// - **Group commit**: one writing connection commits whatever is queued
///   as one transaction. With [`Durability::ProcessCrash`] an awaited ack
///   commits on its own thread when the connection is free (no sync, a few
///   tens of microseconds); the writer thread commits the rest, and every
///   commit under [`Durability::PowerLoss`], off the async threads. Reads
///   run on tokio's blocking pool on a second connection.
/// - **Bounded**: finished runs past the [`Retention`] are pruned every
///   [`SqliteOptions::prune_every`] finished runs, and freed pages go back
///   to the file system.
/// - **One host per file** for writes (the runs it resumes are its own);
///   other processes may read it and mark runs for cancellation.
#[derive(Clone)]
pub struct SqliteJournal {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl SqliteJournal {
    /// Opens (creating if needed) the journal of `root`: `root/.a2e/runs.db`.
    pub async fn open_in(root: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        Self::open(root.as_ref().join(RUNS_DB), options).await
    }

    /// Opens (creating if needed) the journal file at `path`.
    pub async fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let p = path.clone();
        let opts = options.clone();
        let (write, read) = tokio::task::spawn_blocking(move || -> Result<_> {
            let write = schema::open(&p, opts.busy_timeout, opts.durability)?;
            let read = schema::open(&p, opts.busy_timeout, opts.durability)?;
            Ok((write, read))
        })
        .await
        .map_err(|e| JournalError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        })??;
        let live = Arc::new(Live::default());
        let inline = options.durability == Durability::ProcessCrash;
        // Checkpoints run on the writer thread (see `commit`).
        write.pragma_update(None, "wal_autocheckpoint", 0)?;
        let writer = Writer {
            conn: write,
            live: Arc::clone(&live),
            retention: options.retention,
            prune_every: options.prune_every,
            finished_since_prune: 0,
            commits_since_checkpoint: 0,
            writes_since_checkpoint: 0,
            stats: Arc::default(),
        };
        let shared = Arc::new(Shared::new(writer, inline));
        let on_thread = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("a2e-journal-writer".into())
            .spawn(move || commit::run(&on_thread))
            .map_err(|source| JournalError::Io {
                path: path.display().to_string(),
                source,
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                shared,
                writer: Some(handle),
                reader: Arc::new(Reader {
                    conn: Mutex::new(read),
                }),
                live,
                path,
                poll: options.poll_interval,
            }),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The transactions and checkpoints the writer made since the file was
    /// opened: what the journal costs in disk syncs (see [`CommitStats`]).
    pub fn commit_stats(&self) -> CommitStats {
        let w = self.inner.shared.stats();
        CommitStats {
            commits: w.commits.load(std::sync::atomic::Ordering::Relaxed),
            checkpoints: w.checkpoints.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Queues the op `make` builds around a fresh ack sender. The ack
    /// tells the queue when it is awaited (see `commit`).
    fn queue<T>(&self, make: impl FnOnce(tokio::sync::oneshot::Sender<Result<T>>) -> Op) -> Ack<T> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        match self.inner.shared.push(make(reply)) {
            Some(ticket) => {
                Ack::kicked(rx, Arc::clone(&self.inner.shared) as Arc<dyn Kick>, ticket)
            }
            None => Ack::ready(Err(JournalError::Closed)),
        }
    }

    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> BoxFuture<'static, Result<T>> {
        let reader = Arc::clone(&self.inner.reader);
        async move { reader.with(f).await }.boxed()
    }
}

impl Journal for SqliteJournal {
    fn commits_in_order(&self) -> bool {
        true
    }

    fn create_run(&self, run: NewRun) -> Ack {
        let request = match serde_json::to_string(&run.request) {
            Ok(r) => r,
            Err(e) => return Ack::ready(Err(e.into())),
        };
        self.queue(|reply| Op::CreateRun {
            run,
            request,
            reply,
        })
    }

    fn node_started(&self, key: &NodeKey) -> Ack {
        self.queue(|reply| Op::NodeStarted {
            key: key.clone(),
            at: now_ms(),
            start: None,
            reply,
        })
    }

    fn node_started_with(&self, key: &NodeKey, start: &NodeStart) -> Ack {
        let start = match start.bounded_json() {
            Ok(s) => s,
            Err(e) => return Ack::ready(Err(e.into())),
        };
        self.queue(|reply| Op::NodeStarted {
            key: key.clone(),
            at: now_ms(),
            start: Some(start),
            reply,
        })
    }

    fn node_traced(&self, key: &NodeKey, trace_id: &str, span_id: &str) -> Ack {
        self.queue(|reply| Op::NodeTraced {
            key: key.clone(),
            trace_id: trace_id.to_owned(),
            span_id: span_id.to_owned(),
            reply,
        })
    }

    fn node_finished(&self, key: &NodeKey, outcome: &NodeOutcome) -> Ack<bool> {
        let outcome = match serde_json::to_string(outcome) {
            Ok(o) => o,
            Err(e) => return Ack::ready(Err(e.into())),
        };
        self.queue(|reply| Op::NodeFinished {
            key: key.clone(),
            outcome,
            at: now_ms(),
            reply,
        })
    }

    fn append_event(&self, run_id: &RunId, seq: u64, event: &Value) -> Ack {
        let event = match serde_json::to_string(event) {
            Ok(e) => e,
            Err(e) => return Ack::ready(Err(e.into())),
        };
        self.queue(|reply| Op::Event {
            run_id: run_id.clone(),
            seq,
            event,
            reply,
        })
    }

    fn finish_run(&self, run_id: &RunId, status: RunStatus, answer: &Value) -> Ack {
        let answer = match serde_json::to_string(answer) {
            Ok(a) => a,
            Err(e) => return Ack::ready(Err(e.into())),
        };
        self.queue(|reply| Op::FinishRun {
            run_id: run_id.clone(),
            status,
            answer,
            at: now_ms(),
            reply,
        })
    }

    fn request_cancel(&self, run_id: &RunId) -> Ack<bool> {
        self.queue(|reply| Op::Cancel {
            run_id: run_id.clone(),
            reply,
        })
    }

    fn cancel_requested(&self, run_id: &RunId) -> BoxFuture<'static, Result<bool>> {
        let run = run_id.clone();
        self.read(move |conn| Ok(read::status(conn, &run)?.is_some_and(|(_, _, cancel)| cancel)))
    }

    fn list_runs(&self, filter: &RunFilter) -> BoxFuture<'static, Result<Loaded<RunSummary>>> {
        let filter = filter.clone();
        self.read(move |conn| read::list(conn, &filter))
    }

    fn show_run(&self, run_id: &RunId) -> BoxFuture<'static, Result<Option<RunState>>> {
        let run = run_id.clone();
        self.read(move |conn| read::show(conn, &run))
    }

    fn load_unfinished(&self) -> BoxFuture<'static, Result<Loaded<RunState>>> {
        self.read(read::unfinished)
    }

    fn events(
        &self,
        run_id: &RunId,
        from_seq: u64,
        limit: usize,
    ) -> BoxFuture<'static, Result<Vec<StoredEvent>>> {
        let run = run_id.clone();
        self.read(move |conn| {
            read::events(conn, &run, from_seq, limit)?
                .into_iter()
                .map(|(_, e)| e)
                .collect()
        })
    }

    fn subscribe(&self, run_id: &RunId, from_seq: u64) -> BoxStream<'static, Result<RunItem>> {
        live::subscribe(
            &self.inner.live,
            Arc::clone(&self.inner.reader),
            run_id.clone(),
            from_seq,
            self.inner.poll,
        )
    }

    fn prune(&self, retention: &Retention) -> Ack<PruneReport> {
        let retention = *retention;
        self.queue(|reply| Op::Prune { retention, reply })
    }

    fn flush(&self) -> Ack {
        self.queue(|reply| Op::Flush { reply })
    }
}
