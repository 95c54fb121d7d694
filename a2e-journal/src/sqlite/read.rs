//! Reading runs back, each record checked: a row that does not decode names
//! its run and leaves the others readable.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

use crate::error::{JournalError, Result};
use crate::ids::RunId;
use crate::model::{
    CorruptRun, Loaded, NodeOutcome, NodeRecord, RunFilter, RunKind, RunState, RunStatus,
    RunSummary, StoredEvent,
};

/// The columns of a run row, in this order.
const RUN_COLUMNS: &str = "run_id, kind, agent, status, created_ms, finished_ms, cancel_requested, \
     (SELECT COALESCE(MAX(seq) + 1, 0) FROM events e WHERE e.run_id = runs.run_id), request, answer";

/// A run row as stored, before it is checked.
struct RawRun {
    run_id: String,
    kind: String,
    agent: String,
    status: String,
    created_ms: i64,
    finished_ms: Option<i64>,
    cancel_requested: bool,
    next_seq: i64,
    request: String,
    answer: Option<String>,
}

impl RawRun {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            run_id: row.get(0)?,
            kind: row.get(1)?,
            agent: row.get(2)?,
            status: row.get(3)?,
            created_ms: row.get(4)?,
            finished_ms: row.get(5)?,
            cancel_requested: row.get::<_, i64>(6)? != 0,
            next_seq: row.get(7)?,
            request: row.get(8)?,
            answer: row.get(9)?,
        })
    }

    fn corrupt(&self, message: impl Into<String>) -> CorruptRun {
        CorruptRun {
            run_id: self.run_id.clone(),
            message: message.into(),
        }
    }

    fn summary(&self) -> Result<RunSummary, CorruptRun> {
        let run_id = RunId::parse(&self.run_id).map_err(|e| self.corrupt(e.to_string()))?;
        let kind = RunKind::parse(&self.kind)
            .ok_or_else(|| self.corrupt(format!("unknown kind `{}`", self.kind.escape_debug())))?;
        let status = RunStatus::parse(&self.status).ok_or_else(|| {
            self.corrupt(format!("unknown status `{}`", self.status.escape_debug()))
        })?;
        Ok(RunSummary {
            coordinator: None,
            run_id,
            kind,
            agent: self.agent.clone(),
            status,
            created_ms: u64::try_from(self.created_ms).unwrap_or(0),
            finished_ms: self.finished_ms.map(|t| u64::try_from(t).unwrap_or(0)),
            cancel_requested: self.cancel_requested,
            next_seq: u64::try_from(self.next_seq).unwrap_or(0),
        })
    }

    fn state(&self, conn: &Connection) -> Result<Result<RunState, CorruptRun>> {
        let summary = match self.summary() {
            Ok(s) => s,
            Err(c) => return Ok(Err(c)),
        };
        let request: Value = match serde_json::from_str(&self.request) {
            Ok(v) => v,
            Err(e) => return Ok(Err(self.corrupt(format!("request: {e}")))),
        };
        let answer = match self.answer.as_deref().map(serde_json::from_str::<Value>) {
            None => None,
            Some(Ok(v)) => Some(v),
            Some(Err(e)) => return Ok(Err(self.corrupt(format!("answer: {e}")))),
        };
        let nodes = match nodes(conn, &self.run_id)? {
            Ok(n) => n,
            Err(message) => return Ok(Err(self.corrupt(message))),
        };
        Ok(Ok(RunState {
            summary,
            request,
            nodes,
            answer,
        }))
    }
}

/// A run's node records, or why one does not decode.
fn nodes(conn: &Connection, run_id: &str) -> Result<Result<Vec<NodeRecord>, String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT node_id, attempt, started_ms, finished_ms, outcome, start FROM nodes \
         WHERE run_id = ?1 ORDER BY node_id, attempt",
    )?;
    let rows = stmt.query_map(params![run_id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, Option<i64>>(3)?,
            r.get::<_, Option<String>>(4)?,
            r.get::<_, Option<String>>(5)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (node_id, attempt, started, finished, outcome, start) = row?;
        let Ok(attempt) = u32::try_from(attempt) else {
            return Ok(Err(format!("node `{node_id}`: attempt {attempt}")));
        };
        let outcome = match outcome.as_deref().map(serde_json::from_str::<NodeOutcome>) {
            None => None,
            Some(Ok(o)) => Some(o),
            Some(Err(e)) => {
                return Ok(Err(format!(
                    "node `{node_id}` attempt {attempt}: result: {e}"
                )));
            }
        };
        out.push(NodeRecord {
            node_id,
            attempt,
            started_ms: u64::try_from(started).unwrap_or(0),
            finished_ms: finished.map(|t| u64::try_from(t).unwrap_or(0)),
            outcome,
            // Informational only: a detail that does not decode is left
            // out rather than making the run unreadable.
            start: start.as_deref().and_then(|s| serde_json::from_str(s).ok()),
        });
    }
    Ok(Ok(out))
}

pub(super) fn list(conn: &Connection, filter: &RunFilter) -> Result<Loaded<RunSummary>> {
    let limit = match filter.limit {
        0 => 100,
        n => n,
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE (?1 IS NULL OR agent = ?1) \
         AND (?2 IS NULL OR status = ?2) ORDER BY created_ms DESC, run_id DESC LIMIT ?3"
    ))?;
    let rows = stmt.query_map(
        params![
            filter.agent,
            filter.status.map(RunStatus::as_str),
            i64::try_from(limit).unwrap_or(i64::MAX)
        ],
        RawRun::from_row,
    )?;
    let mut loaded = Loaded::default();
    for row in rows {
        match row?.summary() {
            Ok(s) => loaded.items.push(s),
            Err(c) => loaded.corrupt.push(c),
        }
    }
    Ok(loaded)
}

pub(super) fn show(conn: &Connection, run_id: &RunId) -> Result<Option<RunState>> {
    let raw = conn
        .prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?1"))?
        .query_row(params![run_id.as_str()], RawRun::from_row)
        .optional()?;
    match raw {
        None => Ok(None),
        Some(raw) => raw.state(conn)?.map(Some).map_err(JournalError::from),
    }
}

pub(super) fn unfinished(conn: &Connection) -> Result<Loaded<RunState>> {
    // Every status that is not a finished one: `running`, and a corrupt
    // value, which is reported rather than passed over.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE status NOT IN ('succeeded', 'failed', 'cancelled') \
         ORDER BY created_ms, run_id"
    ))?;
    let raws = stmt
        .query_map([], RawRun::from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut loaded = Loaded::default();
    for raw in raws {
        match raw.state(conn)? {
            Ok(s) => loaded.items.push(s),
            Err(c) => loaded.corrupt.push(c),
        }
    }
    Ok(loaded)
}

/// Events from `from` on, each decoded on its own: a corrupt one is an
/// `Err` naming its run and `seq`, and the ones after it still come.
pub(super) fn events(
    conn: &Connection,
    run_id: &RunId,
    from: u64,
    limit: usize,
) -> Result<Vec<(u64, Result<StoredEvent>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, event FROM events WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3",
    )?;
    let rows = stmt.query_map(
        params![
            run_id.as_str(),
            i64::try_from(from).unwrap_or(i64::MAX),
            i64::try_from(limit).unwrap_or(i64::MAX)
        ],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
    )?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, text) = row?;
        let seq = u64::try_from(seq).unwrap_or(0);
        let event = serde_json::from_str(&text)
            .map(|event| StoredEvent { seq, event })
            .map_err(|e| JournalError::Corrupt {
                run_id: run_id.to_string(),
                message: format!("event seq {seq}: {e}"),
            });
        out.push((seq, event));
    }
    Ok(out)
}

/// Where a run is, for a subscription: `None` when unknown; else its status
/// (a corrupt one is an error) and its answer once finished.
pub(super) fn status(
    conn: &Connection,
    run_id: &RunId,
) -> Result<Option<(RunStatus, Option<Value>, bool)>> {
    let row = conn
        .prepare_cached("SELECT status, answer, cancel_requested FROM runs WHERE run_id = ?1")?
        .query_row(params![run_id.as_str()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, i64>(2)? != 0,
            ))
        })
        .optional()?;
    let Some((status, answer, cancel)) = row else {
        return Ok(None);
    };
    let corrupt = |message: String| JournalError::Corrupt {
        run_id: run_id.to_string(),
        message,
    };
    let status = RunStatus::parse(&status)
        .ok_or_else(|| corrupt(format!("unknown status `{}`", status.escape_debug())))?;
    let answer = answer
        .as_deref()
        .map(serde_json::from_str::<Value>)
        .transpose()
        .map_err(|e| corrupt(format!("answer: {e}")))?;
    Ok(Some((status, answer, cancel)))
}
