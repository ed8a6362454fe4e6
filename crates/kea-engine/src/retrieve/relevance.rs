//! Is the evidence good enough to answer from? With a reranker, its
//! probability decides. Without one, a word match is not enough ("What do
//! penguins eat?" shares "eat" with every diet section): the top passages
//! must cover the query's content terms weighted by how rare each term is in
//! the collection (IDF), so the one rare word that names the subject counts
//! most. Chinese questions word their filler freely (平时, 应该), so there a
//! specific noun the collection never mentions (企鹅) refuses and a low
//! coverage suffices otherwise. A query whose best passages are in the other
//! language (BM25 cannot see those) is judged by the embedder's similarity
//! instead. Thresholds are calibrated on tests/golden (sample-knowledge and
//! species-names answerable, unanswerable.jsonl), see `kea eval`.

use std::collections::HashSet;

use serde::Serialize;

use super::{query_language, text_language, Hit, RetrievalConfig, Retriever};
use crate::error::Result;
use crate::segment::{is_specific_chinese_noun, query_terms};

/// Passages whose words count towards coverage.
const TOP_PASSAGES: usize = 3;
/// IDF-weighted share of the query's terms the top passages must contain
/// (English; stemmed words).
pub const MIN_COVERAGE: f32 = 0.4;
/// Chinese: enough when no specific noun of the question is unknown to the
/// whole collection (such a noun is a subject the documents never mention)...
pub const MIN_COVERAGE_ZH: f32 = 0.15;
/// ...and enough on its own above this.
pub const SURE_COVERAGE_ZH: f32 = 0.75;
/// Cosine similarity a passage in the other language must reach to count
/// (multilingual embedders only).
pub const MIN_CROSS_LINGUAL_DENSE: f32 = 0.85;

/// The relevance decision and the figures behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relevance {
    pub relevant: bool,
    /// IDF-weighted share of the query's content terms found in the top passages.
    pub coverage: f32,
    pub best_dense: Option<f32>,
    pub best_rerank: Option<f32>,
    /// Query terms absent from the top passages, with how many chunks of
    /// the collection contain each.
    pub missing: Vec<(String, usize)>,
    pub reason: String,
}

/// IDF-weighted coverage of `terms` by `found`; `counts` are the terms'
/// chunk frequencies among `total` chunks. A term absent from the whole
/// collection weighs the most.
pub fn weighted_coverage(terms: &[String], counts: &[usize], total: usize, found: &HashSet<&str>) -> f32 {
    let idf = |count: usize| ((total as f32 + 1.0) / (count as f32 + 0.5)).ln().max(0.05);
    let weights: Vec<f32> = counts.iter().map(|&c| idf(c)).collect();
    let sum: f32 = weights.iter().sum();
    if sum <= 0.0 {
        return 0.0;
    }
    let covered: f32 = terms.iter().zip(&weights).filter(|(t, _)| found.contains(t.as_str())).map(|(_, w)| w).sum();
    covered / sum
}

impl Retriever<'_> {
    /// Decides whether `hits` answer `query` (see the module docs).
    pub(crate) fn judge_relevance(&self, query: &str, hits: &[Hit], config: &RetrievalConfig) -> Result<Relevance> {
        let best_dense = hits.iter().filter_map(|h| h.dense).reduce(f32::max);
        let best_rerank = hits.first().and_then(|h| h.rerank);
        let mut judged = Relevance { relevant: false, coverage: 0.0, best_dense, best_rerank, missing: Vec::new(), reason: String::new() };
        let Some(best) = hits.first() else {
            judged.reason = "nothing was found".into();
            return Ok(judged);
        };
        let terms = query_terms(query);
        if !terms.is_empty() {
            let ids: Vec<u64> = hits.iter().take(TOP_PASSAGES).map(|h| h.chunk.id as u64).collect();
            let (counts, total) = self.passages().token_chunk_counts(&terms)?;
            let tokens = self.passages().tokens_in_chunks(&terms, &ids)?;
            let found: HashSet<&str> = tokens.iter().map(String::as_str).collect();
            judged.coverage = weighted_coverage(&terms, &counts, total, &found);
            judged.missing = terms.iter().zip(&counts).filter(|(t, _)| !found.contains(t.as_str())).map(|(t, &c)| (t.clone(), c)).collect();
        }
        if let Some(p) = best_rerank {
            judged.relevant = p >= config.min_score;
            judged.reason = format!("rerank probability {p:.2} (threshold {:.2})", config.min_score);
            return Ok(judged);
        }
        let other_language = text_language(&best.chunk.text) != query_language(query);
        let unknown_noun = judged.missing.iter().find(|(t, count)| *count == 0 && is_specific_chinese_noun(t)).map(|m| m.0.clone());
        let covered = format!("the best passages cover {:.0}% of the question's terms", judged.coverage * 100.0);
        (judged.relevant, judged.reason) = match (query_language(query), unknown_noun) {
            ("zh", _) if judged.coverage >= SURE_COVERAGE_ZH => (true, format!("{covered} (enough: {:.0}%)", SURE_COVERAGE_ZH * 100.0)),
            ("zh", Some(noun)) => (false, format!("{covered}, but no document mentions “{noun}”")),
            ("zh", None) => (judged.coverage >= MIN_COVERAGE_ZH, format!("{covered} (threshold {:.0}%)", MIN_COVERAGE_ZH * 100.0)),
            _ => (judged.coverage >= MIN_COVERAGE, format!("{covered} (threshold {:.0}%)", MIN_COVERAGE * 100.0)),
        };
        if !judged.relevant && other_language {
            if let Some(d) = best.dense.filter(|_| config.cross_lingual && self.model_is_multilingual()) {
                judged.relevant = d >= MIN_CROSS_LINGUAL_DENSE;
                judged.reason = format!("the best passage is in the other language: similarity {d:.2} (threshold {MIN_CROSS_LINGUAL_DENSE:.2})");
            }
        }
        Ok(judged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rare_missing_term_outweighs_a_common_match() {
        let terms = vec!["penguin".to_string(), "eat".to_string()];
        // "penguin" is in no chunk, "eat" in 40 of 130.
        let found: HashSet<&str> = ["eat", "seed"].into_iter().collect();
        let coverage = weighted_coverage(&terms, &[0, 40], 130, &found);
        assert!(coverage < 0.3, "{coverage}");
        let found: HashSet<&str> = ["penguin", "krill"].into_iter().collect();
        assert!(weighted_coverage(&terms, &[3, 40], 130, &found) > 0.7);
        assert_eq!(weighted_coverage(&[], &[], 10, &found), 0.0);
    }
}
