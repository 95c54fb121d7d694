//! Opening a database file: pragmas and the schema.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::StoreError;

/// The schema version this code writes (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    namespace TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    embed_model TEXT,
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS memories_by_namespace ON memories(namespace, seq);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    content,
    content = 'memories',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content) VALUES (new.seq, new.content);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;
CREATE TABLE IF NOT EXISTS namespaces (
    name TEXT PRIMARY KEY,
    count INTEGER NOT NULL,
    writes INTEGER NOT NULL,
    deletes INTEGER NOT NULL
) WITHOUT ROWID;
";

/// What an acknowledged write survives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=FULL`: the WAL is synced at every commit, so an
    /// acknowledged write survives the process being killed and the machine
    /// losing power. The default.
    #[default]
    PowerLoss,
    /// `synchronous=NORMAL`: the WAL is synced at checkpoints only; an
    /// acknowledged write survives the process being killed (the WAL is in
    /// the operating system's hands) but the last ones may be lost to a power
    /// cut. Faster single writes.
    ProcessCrash,
}

/// Runs `attempt` again, with backoff, while SQLite answers "database is
/// locked" at once and `limit` has not passed. The busy timeout makes SQLite
/// wait for another connection, but in a few cases (a switch to WAL while
/// another connection opens the same fresh file, a lock that could deadlock)
/// it answers at once without calling it; the documented remedy is to try
/// again.
pub(crate) fn retry_while_busy<T>(
    limit: Duration,
    mut attempt: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match attempt() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && started.elapsed() < limit =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Opens (creating if needed) the file, in WAL mode.
pub(crate) fn open(
    path: &Path,
    busy_timeout: Duration,
    durability: Durability,
) -> Result<Connection, StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| StoreError::Invalid(format!("cannot create {}: {e}", dir.display())))?;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(busy_timeout)?;
    let mode: String = retry_while_busy(busy_timeout, || {
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
    })?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Corrupt(format!(
            "journal_mode is {mode}, WAL was refused"
        )));
    }
    let synchronous = match durability {
        Durability::PowerLoss => "FULL",
        Durability::ProcessCrash => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", synchronous)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::Corrupt(format!(
            "schema version {version} is newer than this build's {SCHEMA_VERSION}"
        )));
    }
    if version < SCHEMA_VERSION {
        // Several handles may open a fresh file at once: one creates, the
        // others wait on the write lock and find it done.
        let tx =
            rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Immediate)?;
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        tx.commit()?;
    }
    Ok(conn)
}
