//! Row-level operations on an open connection (blocking).

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use crate::error::StoreError;
use crate::time::{now_millis, rfc3339};
use crate::types::{Memory, Metadata, NamespaceInfo};

/// A memory ready to insert: validated, with its vector if any.
pub(crate) struct Prepared {
    pub(crate) namespace: String,
    pub(crate) content: String,
    pub(crate) metadata: String,
    pub(crate) vector: Option<(String, Vec<u8>)>,
}

/// The columns [`memory_from_row`] reads, in order.
pub(crate) const MEMORY_COLUMNS: &str =
    "id, namespace, content, metadata, created_at, embedding IS NOT NULL";

pub(crate) fn parse_metadata(text: &str) -> Result<Metadata, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("metadata {text:.40}: {e}")))
}

/// A [`Memory`] from a row of [`MEMORY_COLUMNS`] (offset by `at`).
pub(crate) fn memory_from_row(row: &Row<'_>, at: usize) -> Result<Memory, StoreError> {
    let metadata: String = row.get(at + 3)?;
    Ok(Memory {
        id: row.get(at)?,
        namespace: row.get(at + 1)?,
        content: row.get(at + 2)?,
        metadata: parse_metadata(&metadata)?,
        created_at: rfc3339(row.get(at + 4)?),
        embedded: row.get(at + 5)?,
    })
}

/// Most time spent retrying a `BEGIN IMMEDIATE` that SQLite refused at once.
const BEGIN_RETRY: std::time::Duration = std::time::Duration::from_secs(10);

/// `BEGIN IMMEDIATE`, retried while SQLite refuses it at once.
fn begin_immediate(conn: &Connection) -> Result<rusqlite::Transaction<'_>, StoreError> {
    Ok(super::schema::retry_while_busy(BEGIN_RETRY, || {
        rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
    })?)
}

/// Inserts every memory in one immediate transaction, synced on commit.
pub(crate) fn insert(
    conn: &mut Connection,
    items: Vec<Prepared>,
) -> Result<Vec<Memory>, StoreError> {
    let tx = begin_immediate(conn)?;
    let mut out = Vec::with_capacity(items.len());
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO memories (id, namespace, content, metadata, created_at, embed_model, embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        let mut count = tx.prepare_cached(
            "INSERT INTO namespaces (name, count, writes, deletes) VALUES (?1, 1, 1, 0)
             ON CONFLICT(name) DO UPDATE SET count = count + 1, writes = writes + 1",
        )?;
        for item in items {
            let id = uuid::Uuid::new_v4().to_string();
            let created = now_millis();
            let (model, blob) = item
                .vector
                .map_or((None, None), |(m, b)| (Some(m), Some(b)));
            let embedded = blob.is_some();
            insert.execute(params![
                id,
                item.namespace,
                item.content,
                item.metadata,
                created,
                model,
                blob
            ])?;
            count.execute([&item.namespace])?;
            out.push(Memory {
                id,
                metadata: parse_metadata(&item.metadata)?,
                namespace: item.namespace,
                content: item.content,
                created_at: rfc3339(created),
                embedded,
            });
        }
    }
    tx.commit()?;
    Ok(out)
}

pub(crate) fn get(conn: &Connection, id: &str) -> Result<Option<Memory>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?1"
    ))?;
    let mut rows = stmt.query([id])?;
    match rows.next()? {
        Some(row) => memory_from_row(row, 0).map(Some),
        None => Ok(None),
    }
}

pub(crate) fn delete(conn: &mut Connection, id: &str) -> Result<bool, StoreError> {
    let tx = begin_immediate(conn)?;
    let found: Option<(i64, String)> = tx
        .query_row(
            "SELECT seq, namespace FROM memories WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((seq, namespace)) = found else {
        return Ok(false);
    };
    tx.execute("DELETE FROM memories WHERE seq = ?1", [seq])?;
    tx.execute(
        "UPDATE namespaces SET count = count - 1, deletes = deletes + 1 WHERE name = ?1",
        [&namespace],
    )?;
    tx.commit()?;
    Ok(true)
}

pub(crate) fn namespaces(conn: &Connection) -> Result<Vec<NamespaceInfo>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT name, count FROM namespaces WHERE count > 0 ORDER BY name")?;
    let rows = stmt.query_map([], |r| {
        let count: i64 = r.get(1)?;
        Ok(NamespaceInfo {
            name: r.get(0)?,
            count: u64::try_from(count).unwrap_or(0),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(crate) fn recent(
    conn: &Connection,
    namespace: &str,
    limit: usize,
) -> Result<Vec<Memory>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = ?1 ORDER BY seq DESC LIMIT ?2"
    ))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut rows = stmt.query(params![namespace, limit])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(memory_from_row(row, 0)?);
    }
    Ok(out)
}
