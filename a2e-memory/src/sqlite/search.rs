//! Search on an open connection (blocking): BM25, vectors, fusion.

use std::collections::{HashMap, HashSet};

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, params_from_iter};

use super::rows::{MEMORY_COLUMNS, memory_from_row};
use super::vectors::VectorCache;
use crate::error::StoreError;
use crate::fusion::reciprocal_rank_fusion;
use crate::types::{Hit, Memory, Score, ScoreKind};

/// Most query terms passed to FTS5.
const MAX_TERMS: usize = 32;
/// Candidates taken from each ranking before fusion, at least.
const MIN_CANDIDATES: usize = 100;

/// A validated search, ready to run.
pub(crate) struct Plan {
    pub(crate) namespaces: Vec<String>,
    /// The query's words, each quoted for FTS5; empty when it has none.
    pub(crate) terms: Vec<String>,
    /// `(json path, json value)` pairs of the metadata filter.
    pub(crate) filter: Vec<(String, String)>,
    pub(crate) top_k: usize,
    /// The query's unit vector and the model that made it.
    pub(crate) vector: Option<(String, Vec<f32>)>,
    /// No query text at all: newest first.
    pub(crate) recent: bool,
}

/// Below this many memories in the store, every query term is used.
const PRUNE_MIN_MEMORIES: i64 = 2_000;
/// A term found in more than one memory in this many is common.
const COMMON_SHARE: i64 = 10;

/// The words of `text`, each quoted for FTS5 (so no FTS5 syntax passes
/// through), lowercased, without repeats, at most [`MAX_TERMS`].
pub(crate) fn fts_terms(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .filter(|t| seen.insert(t.clone()))
        .take(MAX_TERMS)
        .map(|t| format!("\"{t}\""))
        .collect()
}

/// The terms that are not common, when some are and some are not; `None`
/// when all terms should be used. BM25 ranks every document matching any
/// term, so a common term (`the`, `is`) makes a query rank a large part of
/// the store for almost no gain in score: leaving it out first is what keeps
/// search fast at 100k memories.
fn rare_terms(conn: &Connection, terms: &[String]) -> Result<Option<Vec<String>>, StoreError> {
    if terms.len() < 2 {
        return Ok(None);
    }
    let total: i64 = conn.query_row("SELECT coalesce(sum(count), 0) FROM namespaces", [], |r| {
        r.get(0)
    })?;
    if total < PRUNE_MIN_MEMORIES {
        return Ok(None);
    }
    let mut stmt =
        conn.prepare_cached("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1")?;
    let mut rare = Vec::new();
    for term in terms {
        let df: i64 = stmt.query_row([term], |r| r.get(0))?;
        if df.saturating_mul(COMMON_SHARE) <= total {
            rare.push(term.clone());
        }
    }
    Ok((!rare.is_empty() && rare.len() < terms.len()).then_some(rare))
}

/// BM25 candidates: `(seq, score)` best first, score = −bm25.
fn bm25(
    conn: &Connection,
    terms: &[String],
    cond: &str,
    args: &[SqlValue],
    n: usize,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let sql = format!(
        "SELECT m.seq, bm25(memories_fts) AS r FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
         WHERE memories_fts MATCH ? AND {cond} ORDER BY r, m.seq DESC LIMIT ?"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let all = std::iter::once(SqlValue::Text(terms.join(" OR ")))
        .chain(args.iter().cloned())
        .chain([limit(n)]);
    let rows = stmt.query_map(params_from_iter(all), |r| {
        Ok((r.get::<_, i64>(0)?, -r.get::<_, f64>(1)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// BM25 over the rare terms when they find at least `top_k` memories, else
/// over every term.
fn bm25_candidates(
    conn: &Connection,
    plan: &Plan,
    cond: &str,
    args: &[SqlValue],
    n: usize,
) -> Result<Vec<(i64, f64)>, StoreError> {
    if plan.terms.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(rare) = rare_terms(conn, &plan.terms)? {
        let found = bm25(conn, &rare, cond, args, n)?;
        if found.len() >= plan.top_k {
            return Ok(found);
        }
    }
    bm25(conn, &plan.terms, cond, args, n)
}

/// `m.namespace IN (…) AND <filter>` and its parameters.
fn where_clause(plan: &Plan) -> (String, Vec<SqlValue>) {
    let marks = vec!["?"; plan.namespaces.len()].join(", ");
    let mut sql = format!("m.namespace IN ({marks})");
    let mut args: Vec<SqlValue> = plan
        .namespaces
        .iter()
        .map(|n| SqlValue::Text(n.clone()))
        .collect();
    for (path, value) in &plan.filter {
        sql.push_str(" AND json_extract(m.metadata, ?) IS json_extract(?, '$')");
        args.push(SqlValue::Text(path.clone()));
        args.push(SqlValue::Text(value.clone()));
    }
    (sql, args)
}

fn limit(n: usize) -> SqlValue {
    SqlValue::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

pub(crate) fn run(
    conn: &mut Connection,
    cache: &mut VectorCache,
    plan: &Plan,
) -> Result<Vec<Hit>, StoreError> {
    // One read transaction: every part of the search sees the same snapshot.
    let tx = conn.transaction()?;
    let (cond, args) = where_clause(plan);
    if plan.recent {
        let sql = format!(
            "SELECT {MEMORY_COLUMNS} FROM memories m WHERE {cond} ORDER BY m.seq DESC LIMIT ?"
        );
        let mut stmt = tx.prepare(&sql)?;
        let mut rows = stmt.query(params_from_iter(
            args.into_iter().chain([limit(plan.top_k)]),
        ))?;
        let mut hits = Vec::new();
        while let Some(row) = rows.next()? {
            hits.push(hit(
                memory_from_row(row, 0)?,
                Score {
                    kind: ScoreKind::Recent,
                    value: 0.0,
                    bm25: None,
                    cosine: None,
                },
            ));
        }
        return Ok(hits);
    }
    let candidates = plan.top_k.saturating_mul(10).max(MIN_CANDIDATES);

    let bm25 = bm25_candidates(&tx, plan, &cond, &args, candidates)?;

    let mut cosine: Vec<(i64, f32)> = Vec::new();
    if let Some((model, query)) = &plan.vector {
        let allowed = if plan.filter.is_empty() {
            None
        } else {
            let sql = format!("SELECT m.seq FROM memories m WHERE {cond}");
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params_from_iter(args.iter()), |r| r.get::<_, i64>(0))?;
            Some(rows.collect::<Result<HashSet<i64>, _>>()?)
        };
        cosine = cache.nearest(
            &tx,
            model,
            &plan.namespaces,
            query,
            allowed.as_ref(),
            candidates,
        )?;
    }

    let bm25_of: HashMap<i64, f64> = bm25.iter().copied().collect();
    let cos_of: HashMap<i64, f32> = cosine.iter().copied().collect();
    let ranked: Vec<(i64, Score)> = if plan.vector.is_some() {
        let lists = [
            bm25.iter().map(|x| x.0).collect(),
            cosine.iter().map(|x| x.0).collect(),
        ];
        reciprocal_rank_fusion(&lists)
            .into_iter()
            .take(plan.top_k)
            .map(|(seq, value)| {
                let score = Score {
                    kind: ScoreKind::Hybrid,
                    value,
                    bm25: bm25_of.get(&seq).copied(),
                    cosine: cos_of.get(&seq).map(|c| f64::from(*c)),
                };
                (seq, score)
            })
            .collect()
    } else {
        bm25.iter()
            .take(plan.top_k)
            .map(|&(seq, value)| {
                (
                    seq,
                    Score {
                        kind: ScoreKind::Bm25,
                        value,
                        bm25: Some(value),
                        cosine: None,
                    },
                )
            })
            .collect()
    };

    let mut rows = fetch(&tx, ranked.iter().map(|(seq, _)| *seq))?;
    let hits = ranked
        .into_iter()
        .filter_map(|(seq, score)| rows.remove(&seq).map(|m| hit(m, score)))
        .collect();
    tx.commit()?;
    Ok(hits)
}

fn fetch(
    conn: &Connection,
    seqs: impl Iterator<Item = i64>,
) -> Result<HashMap<i64, Memory>, StoreError> {
    let seqs: Vec<SqlValue> = seqs.map(SqlValue::Integer).collect();
    if seqs.is_empty() {
        return Ok(HashMap::new());
    }
    let marks = vec!["?"; seqs.len()].join(", ");
    let sql = format!("SELECT seq, {MEMORY_COLUMNS} FROM memories WHERE seq IN ({marks})");
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(params_from_iter(seqs))?;
    let mut out = HashMap::new();
    while let Some(row) = rows.next()? {
        out.insert(row.get::<_, i64>(0)?, memory_from_row(row, 1)?);
    }
    Ok(out)
}

fn hit(m: Memory, score: Score) -> Hit {
    Hit {
        id: m.id,
        namespace: m.namespace,
        content: m.content,
        metadata: m.metadata,
        score,
        created_at: m.created_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts_terms_quote_words_and_drop_syntax() {
        assert_eq!(
            fts_terms("Coffee, OR tea?"),
            ["\"coffee\"", "\"or\"", "\"tea\""]
        );
        assert_eq!(
            fts_terms("a* NEAR(\"b\") -c"),
            ["\"a\"", "\"near\"", "\"b\"", "\"c\""]
        );
        assert!(fts_terms("  ?! ").is_empty());
        assert_eq!(fts_terms("café café"), ["\"café\""]);
        assert_eq!(fts_terms(&"w ".repeat(100)).len(), 1);
        let many: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        assert_eq!(fts_terms(&many.join(" ")).len(), MAX_TERMS);
    }
}
