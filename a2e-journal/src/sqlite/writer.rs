//! The writer: the one connection that writes.
//!
//! It commits a batch of queued writes as one transaction, then
//! acknowledges each write (who hands it the batches, and when, is
//! `commit`'s: group commit). Every statement is atomic on its own, so one
//! write failing (an unknown run) fails only its own ack.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use super::live::Live;
use crate::error::{JournalError, Result};
use crate::ids::{NodeKey, RunId};
use crate::model::{NewRun, NodeStart, PruneReport, Retention, RunStatus, now_ms};

/// Most writes committed in one transaction.
pub(super) const MAX_BATCH: usize = 1024;

/// One queued write.
pub(super) enum Op {
    CreateRun {
        run: NewRun,
        request: String,
        reply: oneshot::Sender<Result<()>>,
    },
    NodeStarted {
        key: NodeKey,
        at: u64,
        /// The start detail, as JSON.
        start: Option<String>,
        reply: oneshot::Sender<Result<()>>,
    },
    NodeTraced {
        key: NodeKey,
        trace_id: String,
        span_id: String,
        reply: oneshot::Sender<Result<()>>,
    },
    NodeFinished {
        key: NodeKey,
        outcome: String,
        at: u64,
        reply: oneshot::Sender<Result<bool>>,
    },
    Event {
        run_id: RunId,
        seq: u64,
        event: String,
        reply: oneshot::Sender<Result<()>>,
    },
    FinishRun {
        run_id: RunId,
        status: RunStatus,
        answer: String,
        at: u64,
        reply: oneshot::Sender<Result<()>>,
    },
    Cancel {
        run_id: RunId,
        reply: oneshot::Sender<Result<bool>>,
    },
    Prune {
        retention: Retention,
        reply: oneshot::Sender<Result<PruneReport>>,
    },
    Flush {
        reply: oneshot::Sender<Result<()>>,
    },
}

/// An executed write waiting for its commit.
enum Done {
    Unit(oneshot::Sender<Result<()>>, Result<()>),
    Bool(oneshot::Sender<Result<bool>>, Result<bool>),
    Prune(oneshot::Sender<Result<PruneReport>>, Result<PruneReport>),
}

impl Done {
    /// The commit failed: every write of the batch failed with it.
    fn fail(&mut self, why: &str) {
        let err = || JournalError::Io {
            path: "commit".into(),
            source: std::io::Error::other(why.to_owned()),
        };
        match self {
            Done::Unit(_, r) if r.is_ok() => *r = Err(err()),
            Done::Bool(_, r) if r.is_ok() => *r = Err(err()),
            Done::Prune(_, r) if r.is_ok() => *r = Err(err()),
            _ => {}
        }
    }

    fn send(self) {
        // A dropped ack is a write nobody waits for: fine.
        match self {
            Done::Unit(tx, r) => drop(tx.send(r)),
            Done::Bool(tx, r) => drop(tx.send(r)),
            Done::Prune(tx, r) => drop(tx.send(r)),
        }
    }
}

/// What the writer needs besides its connection.
pub(super) struct Writer {
    pub conn: Connection,
    pub live: Arc<Live>,
    /// Pruned automatically every `prune_every` finished runs.
    pub retention: Option<Retention>,
    pub prune_every: u32,
    /// Runs finished since the last automatic prune.
    pub finished_since_prune: u32,
    /// Commits since the last checkpoint the writer thread ran (the
    /// connection's own checkpoints are off, so that no commit on an async
    /// thread copies the WAL into the file).
    pub commits_since_checkpoint: u32,
    /// Writes committed since that checkpoint.
    pub writes_since_checkpoint: usize,
    /// What the writer counts, for [`super::SqliteJournal::commit_stats`].
    pub stats: Arc<Stats>,
}

/// Commits and checkpoints made since the file was opened.
#[derive(Default)]
pub(super) struct Stats {
    pub commits: AtomicU64,
    pub checkpoints: AtomicU64,
}

/// Commits between two checkpoints by the writer thread (about what
/// SQLite's default of 1000 WAL pages holds when each commits a node or two).
const CHECKPOINT_EVERY: u32 = 300;

/// Writes between two checkpoints, for when commits are large (many runs
/// committing together).
const CHECKPOINT_WRITES: usize = 3000;

impl Writer {
    /// Commits `batch` as one transaction and sends the acks; prunes when
    /// due.
    pub(super) fn commit_batch(&mut self, mut batch: Vec<Op>) {
        let mut touched: Vec<RunId> = Vec::new();
        let mut finished = 0u32;
        let writes = batch.len();
        let done = self.commit(&mut batch, &mut touched, &mut finished);
        self.stats.commits.fetch_add(1, Ordering::Relaxed);
        self.commits_since_checkpoint = self.commits_since_checkpoint.saturating_add(1);
        self.writes_since_checkpoint = self.writes_since_checkpoint.saturating_add(writes);
        for d in done {
            d.send();
        }
        self.live.notify(&touched);
        self.finished_since_prune = self.finished_since_prune.saturating_add(finished);
        if let Some(retention) = self.retention
            && finished > 0
            && self.finished_since_prune >= self.prune_every.max(1)
        {
            self.finished_since_prune = 0;
            if let Err(e) = self.prune(&retention) {
                tracing::warn!(error = %e, "journal: automatic prune failed");
            }
        }
    }

    /// Whether the WAL is due to be copied into the file.
    pub(super) fn checkpoint_due(&self) -> bool {
        self.commits_since_checkpoint >= CHECKPOINT_EVERY
            || self.writes_since_checkpoint >= CHECKPOINT_WRITES
    }

    /// Copies the WAL into the file, then writes once: the first write after
    /// a checkpoint starts the WAL over and syncs its header, which belongs
    /// on the writer thread too.
    pub(super) fn checkpoint(&mut self) {
        self.commits_since_checkpoint = 0;
        self.writes_since_checkpoint = 0;
        let restarted = self
            .conn
            .execute_batch("PRAGMA wal_checkpoint(PASSIVE)")
            .and_then(|()| {
                self.conn
                    .pragma_update(None, "user_version", super::schema::SCHEMA_VERSION)
            });
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.stats.commits.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = restarted {
            tracing::warn!(error = %e, "journal: checkpoint failed");
        }
    }

    /// [`prune`], counted: a transaction, and another to give pages back.
    fn prune(&mut self, retention: &Retention) -> Result<PruneReport> {
        let report = prune(&mut self.conn, retention);
        let commits = match &report {
            Ok(r) if r.runs > 0 => 2,
            _ => 1,
        };
        self.stats.commits.fetch_add(commits, Ordering::Relaxed);
        report
    }

    /// Executes the batch in one transaction; returns the acks to send.
    fn commit(
        &mut self,
        batch: &mut Vec<Op>,
        touched: &mut Vec<RunId>,
        finished: &mut u32,
    ) -> Vec<Done> {
        let mut done = Vec::with_capacity(batch.len());
        let mut prunes = Vec::new();
        if let Err(e) = self.conn.execute_batch("BEGIN IMMEDIATE") {
            let why = e.to_string();
            for op in batch.drain(..) {
                let mut d = pending(op);
                d.fail(&why);
                done.push(d);
            }
            return done;
        }
        for op in batch.drain(..) {
            match op {
                Op::Prune { retention, reply } => prunes.push((retention, reply)),
                op => {
                    let d = self.apply(op, touched, finished);
                    done.push(d);
                }
            }
            if self.conn.is_autocommit() {
                // A failure rolled the whole transaction back (disk full, I/O).
                break;
            }
        }
        let committed = if self.conn.is_autocommit() {
            Err("the transaction was rolled back by a failed write".to_owned())
        } else {
            self.conn.execute_batch("COMMIT").map_err(|e| {
                let _ = self.conn.execute_batch("ROLLBACK");
                e.to_string()
            })
        };
        if let Err(why) = committed {
            touched.clear();
            for d in &mut done {
                d.fail(&why);
            }
            for op in batch.drain(..) {
                let mut d = pending(op);
                d.fail(&why);
                done.push(d);
            }
        }
        for (retention, reply) in prunes {
            let report = self.prune(&retention);
            done.push(Done::Prune(reply, report));
        }
        done
    }

    fn apply(&mut self, op: Op, touched: &mut Vec<RunId>, finished: &mut u32) -> Done {
        let conn = &self.conn;
        match op {
            Op::CreateRun {
                run,
                request,
                reply,
            } => {
                let r = conn
                    .prepare_cached(
                        "INSERT INTO runs (run_id, kind, agent, request, status, created_ms) \
                         VALUES (?1, ?2, ?3, ?4, 'running', ?5)",
                    )
                    .and_then(|mut s| {
                        s.execute(params![
                            run.run_id.as_str(),
                            run.kind.as_str(),
                            run.agent,
                            request,
                            now_ms() as i64
                        ])
                    })
                    .map(|_| ())
                    .map_err(|e| match e {
                        rusqlite::Error::SqliteFailure(f, _)
                            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
                        {
                            JournalError::DuplicateRun(run.run_id.to_string())
                        }
                        e => e.into(),
                    });
                Done::Unit(reply, r)
            }
            Op::NodeStarted {
                key,
                at,
                start,
                reply,
            } => {
                let r = conn
                    .prepare_cached(
                        "INSERT INTO nodes (run_id, node_id, attempt, started_ms, start) \
                         VALUES (?1, ?2, ?3, ?4, ?5) \
                         ON CONFLICT (run_id, node_id, attempt) DO UPDATE \
                         SET started_ms = excluded.started_ms, start = COALESCE(excluded.start, nodes.start) \
                         WHERE nodes.outcome IS NULL",
                    )
                    .and_then(|mut s| {
                        s.execute(params![
                            key.run_id().as_str(),
                            key.node_id(),
                            key.attempt(),
                            at as i64,
                            start
                        ])
                    })
                    .map(|_| ())
                    .map_err(|e| unknown_run(e, key.run_id()));
                Done::Unit(reply, r)
            }
            Op::NodeTraced {
                key,
                trace_id,
                span_id,
                reply,
            } => Done::Unit(reply, traced(conn, &key, trace_id, span_id)),
            Op::NodeFinished {
                key,
                outcome,
                at,
                reply,
            } => {
                let r = conn
                    .prepare_cached(
                        "INSERT INTO nodes (run_id, node_id, attempt, started_ms, finished_ms, outcome) \
                         VALUES (?1, ?2, ?3, 0, ?4, ?5) \
                         ON CONFLICT (run_id, node_id, attempt) DO UPDATE \
                         SET finished_ms = excluded.finished_ms, outcome = excluded.outcome \
                         WHERE nodes.outcome IS NULL",
                    )
                    .and_then(|mut s| {
                        s.execute(params![
                            key.run_id().as_str(),
                            key.node_id(),
                            key.attempt(),
                            at as i64,
                            outcome
                        ])
                    })
                    .map(|n| n > 0)
                    .map_err(|e| unknown_run(e, key.run_id()));
                Done::Bool(reply, r)
            }
            Op::Event {
                run_id,
                seq,
                event,
                reply,
            } => {
                let r = i64::try_from(seq)
                    .map_err(|_| JournalError::InvalidId {
                        what: "event seq",
                        message: format!("{seq} is past the store's range"),
                    })
                    .and_then(|seq| {
                        conn.prepare_cached(
                            "INSERT OR IGNORE INTO events (run_id, seq, event) VALUES (?1, ?2, ?3)",
                        )
                        .and_then(|mut s| s.execute(params![run_id.as_str(), seq, event]))
                        .map(|_| ())
                        .map_err(|e| unknown_run(e, &run_id))
                    });
                if r.is_ok() {
                    touched.push(run_id);
                }
                Done::Unit(reply, r)
            }
            Op::FinishRun {
                run_id,
                status,
                answer,
                at,
                reply,
            } => {
                let r = conn
                    .prepare_cached(
                        "UPDATE runs SET status = ?2, answer = ?3, finished_ms = ?4 WHERE run_id = ?1",
                    )
                    .and_then(|mut s| {
                        s.execute(params![run_id.as_str(), status.as_str(), answer, at as i64])
                    })
                    .map_err(JournalError::from)
                    .and_then(|n| {
                        if n == 0 {
                            Err(JournalError::UnknownRun(run_id.to_string()))
                        } else {
                            Ok(())
                        }
                    });
                if r.is_ok() {
                    *finished += 1;
                    touched.push(run_id);
                }
                Done::Unit(reply, r)
            }
            Op::Cancel { run_id, reply } => {
                let r = conn
                    .prepare_cached(
                        "UPDATE runs SET cancel_requested = 1 WHERE run_id = ?1 AND status = 'running'",
                    )
                    .and_then(|mut s| s.execute(params![run_id.as_str()]))
                    .map(|n| n > 0)
                    .map_err(JournalError::from);
                if matches!(r, Ok(true)) {
                    touched.push(run_id);
                }
                Done::Bool(reply, r)
            }
            Op::Flush { reply } => Done::Unit(reply, Ok(())),
            Op::Prune { reply, .. } => Done::Prune(
                reply,
                Err(JournalError::Io {
                    path: "prune".into(),
                    source: std::io::Error::other("prune inside a batch"),
                }),
            ),
        }
    }
}

/// The ack of a write that never ran (its batch failed before it).
fn pending(op: Op) -> Done {
    match op {
        Op::CreateRun { reply, .. }
        | Op::NodeStarted { reply, .. }
        | Op::NodeTraced { reply, .. }
        | Op::Event { reply, .. }
        | Op::FinishRun { reply, .. }
        | Op::Flush { reply } => Done::Unit(reply, Ok(())),
        Op::NodeFinished { reply, .. } | Op::Cancel { reply, .. } => Done::Bool(reply, Ok(false)),
        Op::Prune { reply, .. } => Done::Prune(reply, Ok(PruneReport::default())),
    }
}

/// Adds a trace and span id to a node's start detail (nothing when the
/// node has no start row).
fn traced(conn: &Connection, key: &NodeKey, trace_id: String, span_id: String) -> Result<()> {
    let args = params![key.run_id().as_str(), key.node_id(), key.attempt()];
    let old: Option<Option<String>> = conn
        .prepare_cached(
            "SELECT start FROM nodes WHERE run_id = ?1 AND node_id = ?2 AND attempt = ?3",
        )?
        .query_row(args, |r| r.get(0))
        .optional()?;
    let Some(old) = old else {
        return Ok(());
    };
    let mut start: NodeStart = old
        .as_deref()
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    start.trace_id = Some(trace_id);
    start.span_id = Some(span_id);
    let start = start.bounded_json()?;
    conn.prepare_cached(
        "UPDATE nodes SET start = ?4 WHERE run_id = ?1 AND node_id = ?2 AND attempt = ?3",
    )?
    .execute(params![
        key.run_id().as_str(),
        key.node_id(),
        key.attempt(),
        start
    ])?;
    Ok(())
}

/// A foreign key failure is a write for a run that is not journaled.
fn unknown_run(e: rusqlite::Error, run_id: &RunId) -> JournalError {
    match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            JournalError::UnknownRun(run_id.to_string())
        }
        e => e.into(),
    }
}

/// Removes finished runs past `retention`, then gives freed pages back.
pub(super) fn prune(conn: &mut Connection, retention: &Retention) -> Result<PruneReport> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut removed = 0u64;
    if let Some(age) = retention.max_age {
        let cutoff = now_ms().saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
        removed += tx.execute(
            "DELETE FROM runs WHERE status != 'running' AND finished_ms < ?1",
            params![i64::try_from(cutoff).unwrap_or(i64::MAX)],
        )? as u64;
    }
    if let Some(keep) = retention.max_runs {
        removed += tx.execute(
            "DELETE FROM runs WHERE run_id IN (SELECT run_id FROM runs WHERE status != 'running' \
             ORDER BY finished_ms DESC, run_id DESC LIMIT -1 OFFSET ?1)",
            params![i64::try_from(keep).unwrap_or(i64::MAX)],
        )? as u64;
    }
    tx.commit()?;
    if removed > 0 {
        // Freed pages go back to the file system; the file does not keep
        // the size of its largest moment.
        conn.execute_batch("PRAGMA incremental_vacuum")?;
    }
    Ok(PruneReport { runs: removed })
}
