//! Full-text search over the FTS5 index and the term statistics behind it.
//! How many chunks hold a term is counted once per store generation (the
//! relevance judge asks for the same terms the search just used), and BM25
//! is asked only for the terms it gives weight to: a term in half the
//! chunks or more scores (almost) nothing, yet scoring its matches was most
//! of a search's time on a large folder.

use std::collections::{HashMap, HashSet};

use rusqlite::params;

use super::Store;
use crate::error::Result;
use crate::segment;

/// Terms remembered per generation before the memo starts over.
const MEMO_LIMIT: usize = 4096;

/// The score of a match found only by terms without weight (what FTS5's
/// clamped IDF gives them): below every weighted match.
const UNWEIGHTED_SCORE: f32 = 1e-6;

/// Chunk counts of terms, valid for one store generation.
#[derive(Default)]
pub(super) struct TermCounts {
    generation: Option<i64>,
    chunks: usize,
    counts: HashMap<String, usize>,
}

/// Whether BM25 gives a term found in `n` of `chunks` chunks any weight.
/// FTS5's IDF, ln((N − n + ½) / (n + ½)), is clamped to 10⁻⁶ once n ≥ N/2.
fn carries_weight(n: usize, chunks: usize) -> bool {
    n > 0 && 2 * n < chunks
}

impl Store {
    /// How many chunks contain each term (its document frequency in BM25's
    /// sense), and the number of chunks.
    pub fn token_chunk_counts(&self, terms: &[String]) -> Result<(Vec<usize>, usize)> {
        let generation = self.generation()?;
        let mut memo = self.term_counts.lock().unwrap_or_else(|p| p.into_inner());
        if memo.generation != Some(generation) || memo.counts.len() > MEMO_LIMIT {
            *memo = TermCounts { generation: Some(generation), chunks: self.chunk_count()?, counts: HashMap::new() };
        }
        let mut stmt = self.conn.prepare_cached("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?1")?;
        let mut counts = Vec::with_capacity(terms.len());
        for term in terms {
            let count = match memo.counts.get(term) {
                Some(&count) => count,
                None => {
                    let count = stmt.query_row([quoted(term)], |r| r.get::<_, i64>(0))? as usize;
                    memo.counts.insert(term.clone(), count);
                    count
                }
            };
            counts.push(count);
        }
        Ok((counts, memo.chunks))
    }

    /// Full-text search (FTS5 BM25 over segmented words); returns chunk ids
    /// with scores, best first (higher is better). Any text is a safe query.
    /// Matches of terms without weight only fill the places left, unscored.
    pub fn fts_search(&self, query: &str, k: usize) -> Result<Vec<(u64, f32)>> {
        let terms = segment::search_terms(query, |t| self.token_chunk_counts(t).map(|(c, _)| c))?;
        let (counts, chunks) = self.token_chunk_counts(&terms)?;
        let (mut weighted, mut unweighted) = (Vec::new(), Vec::new());
        for (term, n) in terms.into_iter().zip(counts).filter(|&(_, n)| n > 0) {
            if carries_weight(n, chunks) {
                weighted.push(term)
            } else {
                unweighted.push(term)
            }
        }
        let mut found = match any_of(weighted.into_iter()) {
            Some(expression) => {
                let mut stmt =
                    self.conn.prepare_cached("SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?1 ORDER BY bm25(chunks_fts) LIMIT ?2")?;
                let rows = stmt.query_map(params![expression, k as i64], |r| Ok((r.get::<_, i64>(0)? as u64, -r.get::<_, f64>(1)? as f32)))?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            }
            None => Vec::new(),
        };
        if found.len() < k {
            if let Some(expression) = any_of(unweighted.into_iter()) {
                let seen: HashSet<u64> = found.iter().map(|f| f.0).collect();
                let mut stmt = self.conn.prepare_cached("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?1 LIMIT ?2")?;
                let rows = stmt.query_map(params![expression, k as i64], |r| r.get::<_, i64>(0))?;
                for id in rows {
                    let id = id? as u64;
                    if found.len() < k && !seen.contains(&id) {
                        found.push((id, UNWEIGHTED_SCORE));
                    }
                }
            }
        }
        Ok(found)
    }

    /// The tokens found in the full-text index (heading, names, text) of
    /// any of the chunks `ids`.
    pub fn tokens_in_chunks(&self, tokens: &[String], ids: &[u64]) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached("SELECT EXISTS(SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?1 AND rowid = ?2)")?;
        let mut found = Vec::new();
        for token in tokens {
            for &id in ids {
                if stmt.query_row(params![quoted(token), id as i64], |r| r.get::<_, bool>(0))? {
                    found.push(token.clone());
                    break;
                }
            }
        }
        Ok(found)
    }
}

/// A term as an FTS5 phrase (any text is safe).
fn quoted(term: &str) -> String {
    format!("\"{}\"", term.replace('"', ""))
}

/// An FTS5 expression matching any of `terms`; `None` when there are none.
fn any_of(terms: impl Iterator<Item = String>) -> Option<String> {
    let quoted: Vec<String> = terms.map(|t| quoted(&t)).collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::{any_of, carries_weight};

    #[test]
    fn terms_become_a_safe_expression() {
        assert_eq!(any_of(["cockatiel".to_string(), "a\"b".to_string()].into_iter()).as_deref(), Some("\"cockatiel\" OR \"ab\""));
        assert_eq!(any_of(std::iter::empty()), None);
    }

    #[test]
    fn a_term_in_half_the_chunks_or_more_carries_no_weight() {
        assert!(carries_weight(1, 3));
        assert!(carries_weight(49, 100));
        assert!(!carries_weight(50, 100));
        assert!(!carries_weight(2, 3));
        assert!(!carries_weight(0, 100));
    }
}
