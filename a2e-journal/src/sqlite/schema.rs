//! Opening the file: pragmas and the schema.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::{JournalError, Result};

/// The schema version this code writes (`PRAGMA user_version`): 2 added
/// `nodes.start` (what a node started with), 3 made `runs` a table with
/// rowids; files of versions 1 and 2 are migrated when opened.
pub(crate) const SCHEMA_VERSION: i64 = 3;

/// The `runs` table of schema 3 under `$name` (the
/// migration builds it under another name first).
macro_rules! runs_table {
    ($name:literal) => {
        concat!(
            "CREATE TABLE IF NOT EXISTS ",
            $name,
            " (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    agent TEXT NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    finished_ms INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    answer TEXT
);
"
        )
    };
}

/// The indexes of `runs`.
macro_rules! runs_indexes {
    () => {
        "
CREATE INDEX IF NOT EXISTS runs_by_created ON runs(created_ms);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status, finished_ms);
"
    };
}

/// The tables (the `nodes.start` column of version 2 is added by [`open`]).
pub(crate) const SCHEMA: &str = concat!(
    runs_table!("runs"),
    runs_indexes!(),
    "
CREATE TABLE IF NOT EXISTS nodes (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    node_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    started_ms INTEGER NOT NULL,
    finished_ms INTEGER,
    outcome TEXT,
    PRIMARY KEY (run_id, node_id, attempt)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"
);

/// What a journal write survives once acknowledged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=NORMAL` in WAL mode: a commit is written to the WAL
    /// (the operating system holds it) before the ack, and synced to disk at
    /// checkpoints. An acknowledged write survives the host process being
    /// killed (SIGKILL, a panic, an OOM kill); a power cut or a kernel crash
    /// may lose the last acknowledged writes (the file stays consistent: a
    /// resumed run then runs those nodes again, with the same idempotency
    /// keys). The default: a sync per node would cost a disk flush each.
    #[default]
    ProcessCrash,
    /// `synchronous=FULL`: the WAL is synced at every commit, so an
    /// acknowledged write also survives a power cut. Commits are grouped
    /// (one sync for every write queued meanwhile), but each costs a flush.
    PowerLoss,
}

/// Opens (creating if needed) the file, in WAL mode, with the schema.
pub(crate) fn open(
    path: &Path,
    busy_timeout: Duration,
    durability: Durability,
) -> Result<Connection> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| JournalError::Io {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(busy_timeout)?;
    // Only takes effect on a file without tables: pages freed by a prune
    // can then go back to the file system (`incremental_vacuum`).
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(JournalError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(format!("journal_mode is {mode}; WAL was refused")),
        });
    }
    let synchronous = match durability {
        Durability::ProcessCrash => "NORMAL",
        Durability::PowerLoss => "FULL",
    };
    conn.pragma_update(None, "synchronous", synchronous)?;
    // On once the schema is current (a migration copies tables with it off).
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    // The WAL is truncated to this after a checkpoint, so that one burst of
    // writes does not leave a large file behind.
    conn.pragma_update(None, "journal_size_limit", 8 * 1024 * 1024)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(JournalError::Schema {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version < SCHEMA_VERSION {
        let tx = rusqlite::Transaction::new_unchecked(&conn, TransactionBehavior::Immediate)?;
        tx.execute_batch(SCHEMA)?;
        // Version 2: a node's start detail. Looked for, not assumed: another
        // process may have migrated the file meanwhile.
        let has_start: bool = tx.query_row(
            "SELECT COUNT(*) FROM pragma_table_info('nodes') WHERE name = 'start'",
            [],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if !has_start {
            tx.execute_batch("ALTER TABLE nodes ADD COLUMN start TEXT")?;
        }
        // Version 3: `runs` is a table with rowids. As a WITHOUT ROWID table
        // it kept each run's request and answer in its key tree, and the
        // foreign-key check of every node and event write read them whole.
        let without_rowid: bool = tx.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs' \
             AND sql LIKE '%WITHOUT ROWID%'",
            [],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if without_rowid {
            // Foreign keys are checked per statement only while they are
            // on: off for the copy (no cascade when the old table goes).
            tx.execute_batch(RUNS_WITH_ROWIDS)?;
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        tx.commit()?;
    }
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

/// Rebuilds a `runs` table of schema 1–2 as a table with rowids (the
/// documented way: a new table, the rows copied, the old one dropped, the
/// new one renamed; with foreign keys off).
const RUNS_WITH_ROWIDS: &str = concat!(
    runs_table!("runs_v3"),
    "
INSERT INTO runs_v3 (run_id, kind, agent, request, status, created_ms, finished_ms,
                     cancel_requested, answer)
    SELECT run_id, kind, agent, request, status, created_ms, finished_ms,
           cancel_requested, answer FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v3 RENAME TO runs;
",
    runs_indexes!()
);
