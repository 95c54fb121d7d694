//! Exact vector search over an in-memory copy of each namespace's vectors.
//!
//! Vectors are stored unit-length as little-endian `f32` blobs. A search
//! loads a namespace's vectors once and then only what was written since:
//! the `namespaces` table counts writes and deletes in the same transaction
//! as the change, so a handle sees another handle's (or process's) writes
//! as new rows past the last `seq` it read, and any delete as a reason to
//! reload the namespace.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::StoreError;
use crate::fusion::dot;

/// Unit vector → blob.
pub(crate) fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8]) -> Option<Vec<f32>> {
    let (chunks, rest) = b.as_chunks::<4>();
    if !rest.is_empty() || chunks.is_empty() {
        return None;
    }
    Some(chunks.iter().map(|c| f32::from_le_bytes(*c)).collect())
}

#[derive(Default)]
struct Space {
    writes: i64,
    deletes: i64,
    last_seq: i64,
    dims: usize,
    seqs: Vec<i64>,
    data: Vec<f32>,
}

impl Space {
    fn push(&mut self, seq: i64, v: &[f32]) {
        if self.dims == 0 {
            self.dims = v.len();
        }
        if v.len() == self.dims {
            self.seqs.push(seq);
            self.data.extend_from_slice(v);
        }
    }
}

/// Vectors of one embedding model, per namespace.
#[derive(Default)]
pub(crate) struct VectorCache {
    spaces: HashMap<String, Space>,
}

impl VectorCache {
    /// Brings `namespace` up to date with the database.
    fn refresh(
        &mut self,
        conn: &Connection,
        namespace: &str,
        model: &str,
    ) -> Result<(), StoreError> {
        let counters: Option<(i64, i64)> = conn
            .query_row(
                "SELECT writes, deletes FROM namespaces WHERE name = ?1",
                [namespace],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let (writes, deletes) = counters.unwrap_or((0, 0));
        let space = self.spaces.entry(namespace.to_owned()).or_default();
        if space.writes == writes && space.deletes == deletes {
            return Ok(());
        }
        if space.deletes != deletes {
            *space = Space::default();
        }
        let mut stmt = conn.prepare_cached(
            "SELECT seq, embedding FROM memories
             WHERE namespace = ?1 AND seq > ?2 AND embed_model = ?3 AND embedding IS NOT NULL
             ORDER BY seq",
        )?;
        let mut rows = stmt.query(params![namespace, space.last_seq, model])?;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let blob: Vec<u8> = row.get(1)?;
            let v = from_blob(&blob)
                .ok_or_else(|| StoreError::Corrupt(format!("vector of row {seq}")))?;
            space.push(seq, &v);
            space.last_seq = seq;
        }
        // Counters read before the rows: a write landing in between is read
        // now and counted again next time, which only costs a no-op query.
        space.writes = writes;
        space.deletes = deletes;
        Ok(())
    }

    /// The `limit` most similar rows to the unit vector `query` in
    /// `namespaces` (restricted to `allowed` when given), best first; rows
    /// with a cosine of 0 or less are left out.
    pub(crate) fn nearest(
        &mut self,
        conn: &Connection,
        model: &str,
        namespaces: &[String],
        query: &[f32],
        allowed: Option<&HashSet<i64>>,
        limit: usize,
    ) -> Result<Vec<(i64, f32)>, StoreError> {
        // The best `limit` so far, worst on top, so each row costs one
        // comparison unless it enters.
        let mut best: BinaryHeap<Reverse<Ranked>> =
            BinaryHeap::with_capacity(limit.saturating_add(1));
        for ns in namespaces {
            self.refresh(conn, ns, model)?;
            let Some(space) = self.spaces.get(ns) else {
                continue;
            };
            if space.dims != query.len() || space.dims == 0 {
                continue;
            }
            for (seq, v) in space.seqs.iter().zip(space.data.chunks_exact(space.dims)) {
                if allowed.is_none_or(|a| a.contains(seq)) {
                    let cosine = dot(query, v);
                    // Orthogonal or opposite: unrelated, not a weak match.
                    if cosine > 0.0 && limit > 0 {
                        let entry = Reverse(Ranked(cosine, *seq));
                        if best.len() < limit {
                            best.push(entry);
                        } else if best.peek().is_some_and(|worst| entry < *worst) {
                            best.pop();
                            best.push(entry);
                        }
                    }
                }
            }
        }
        // Ascending `Reverse` order is best first.
        Ok(best
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse(Ranked(c, seq))| (seq, c))
            .collect())
    }
}

/// A cosine and its row, ordered by cosine, then newer row first.
#[derive(Clone, Copy, PartialEq)]
struct Ranked(f32, i64);

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}
