//! The physical floor of a journal write: one SQLite commit of one small
//! row, in WAL mode, on a connection of its own, with `synchronous=FULL`
//! (one disk sync) and `NORMAL` (none), measured in the same run as what it
//! is compared with.

use std::path::Path;
use std::time::Instant;

use a2e_bench::stats::{median, us};
use rusqlite::{Connection, params};

/// Commits timed per figure.
const COMMITS: usize = 200;

/// The median µs of one commit of a one-row insert into a fresh file at
/// `path`, with `synchronous` (`FULL` or `NORMAL`).
pub fn commit_us(path: &Path, synchronous: &str) -> Result<f64, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.pragma_update(None, "synchronous", synchronous)?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
    )?;
    let mut insert = conn.prepare("INSERT INTO floor (v) VALUES (?1)")?;
    let mut times = Vec::with_capacity(COMMITS);
    for i in 0..COMMITS + 10 {
        let t = Instant::now();
        conn.execute_batch("BEGIN IMMEDIATE")?;
        insert.execute(params![format!(
            "{{\"node\": \"n{i}\", \"output\": {{\"v\": {i}}}}}"
        )])?;
        conn.execute_batch("COMMIT")?;
        // The first commits warm the cache and grow the WAL.
        if i >= 10 {
            times.push(us(t.elapsed()));
        }
    }
    Ok(median(&mut times))
}
