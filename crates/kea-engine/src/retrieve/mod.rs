//! The retrieval pipeline, the same for every caller (CLI search, chat,
//! image identification, eval): query preparation → dense (usearch) and
//! sparse (FTS5 BM25 over segmented words) → fusion → MMR → cross-encoder
//! rerank → two-layer filter → cited context. Every stage records its
//! candidates, scores and time in a [`Trace`], with the fallbacks that fired.

pub mod context;
pub mod relevance;
pub mod stages;

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::store::ChunkRow;
pub use context::{Context, ContextBlock};
pub use relevance::Relevance;

/// How dense and sparse scores are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Weighted sum of min-max normalised scores.
    Weighted,
    /// Reciprocal rank fusion.
    Rrf,
}

/// Every knob of the pipeline; a JSON file may give any subset. Inside the
/// settings file unknown keys (retired knobs) are ignored; a config file the
/// user writes by hand is read with [`RetrievalConfig::from_json_strict`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrievalConfig {
    pub dense: bool,
    pub sparse: bool,
    /// Candidates taken from each retriever.
    pub coarse_k: usize,
    pub fusion: Fusion,
    pub dense_weight: f32,
    pub sparse_weight: f32,
    /// Dense weight when the query's language is not one the embedding model
    /// knows (e.g. a Chinese query with English-only MiniLM).
    pub foreign_dense_weight: f32,
    /// With a multilingual embedder, lift the other language's best dense
    /// passage to just behind the query language's best (cross-lingual retrieval).
    pub cross_lingual: bool,
    pub rrf_k: f32,
    pub mmr: bool,
    pub mmr_lambda: f32,
    /// Candidates kept after MMR (or after fusion without MMR): the reranker's input.
    pub mmr_select: usize,
    pub rerank: bool,
    pub rerank_keep: usize,
    /// Passages are cut to this many characters for the reranker.
    pub rerank_max_chars: usize,
    pub filter: bool,
    pub min_score: f32,
    pub max_relative_drop: f32,
    /// Hits returned.
    pub top_k: usize,
    pub context_tokens: usize,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig {
            dense: true,
            sparse: true,
            coarse_k: 50,
            fusion: Fusion::Weighted,
            dense_weight: 0.6,
            sparse_weight: 0.4,
            foreign_dense_weight: 0.05,
            cross_lingual: true,
            rrf_k: 60.0,
            mmr: true,
            mmr_lambda: 0.5,
            mmr_select: 12,
            rerank: true,
            rerank_keep: 8,
            rerank_max_chars: 600,
            filter: true,
            min_score: 0.28,
            max_relative_drop: 0.5,
            top_k: 8,
            context_tokens: 1500,
        }
    }
}

impl RetrievalConfig {
    /// Reads a hand-written config: any subset of the keys; an unknown key
    /// (a typo) is an error naming it.
    pub fn from_json_strict(text: &str) -> Result<RetrievalConfig> {
        let given: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(text).map_err(|e| Error::InvalidInput(format!("not a retrieval config: {e}")))?;
        let known = serde_json::to_value(RetrievalConfig::default()).unwrap_or_default();
        if let Some(key) = given.keys().find(|k| known.get(k.as_str()).is_none()) {
            return Err(Error::InvalidInput(format!("unknown retrieval setting '{key}'")));
        }
        serde_json::from_value(serde_json::Value::Object(given)).map_err(|e| Error::InvalidInput(format!("not a retrieval config: {e}")))
    }

    /// Dense retrieval alone, in similarity order.
    pub fn dense_only(top_k: usize) -> Self {
        RetrievalConfig { sparse: false, mmr: false, rerank: false, filter: false, top_k, ..Default::default() }
    }

    /// Full-text (BM25) retrieval alone.
    pub fn sparse_only(top_k: usize) -> Self {
        RetrievalConfig { dense: false, mmr: false, rerank: false, filter: false, top_k, ..Default::default() }
    }
}

/// A final hit, with the score of each stage it went through.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    #[serde(flatten)]
    pub chunk: ChunkRow,
    /// The score the final order is by (rerank probability, else fusion).
    pub score: f32,
    pub dense: Option<f32>,
    pub sparse: Option<f32>,
    pub fused: Option<f32>,
    pub rerank: Option<f32>,
}

/// One stage's output in the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageTrace {
    pub stage: &'static str,
    pub ms: f64,
    /// `(chunk id, score)`, best first.
    pub candidates: Vec<(u64, f32)>,
}

/// What the pipeline did, for `--trace` and "how this was answered".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    pub query: String,
    pub prepared_query: String,
    pub stages: Vec<StageTrace>,
    pub fallbacks: Vec<String>,
    pub total_ms: f64,
    /// The relevance decision (refuse or answer), with its figures.
    pub relevance: Option<Relevance>,
}

/// `(chunk id, score)` pairs, best first.
type Ranked = Vec<(u64, f32)>;

/// The pipeline's result.
#[derive(Debug, Clone, Serialize)]
pub struct Retrieval {
    pub hits: Vec<Hit>,
    pub context: Context,
    pub trace: Trace,
    /// Whether the hits are good enough to answer from.
    pub relevance: Relevance,
}

/// Query normalisation: full-width ASCII to half-width, white space folded.
pub fn prepare_query(query: &str) -> String {
    let folded: String = query
        .chars()
        .map(|c| match c as u32 {
            0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            0x3000 => ' ',
            _ => c,
        })
        .collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Milliseconds since `since`, to two decimals (every stage timing uses it).
pub(crate) fn elapsed_ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 100_000.0).round() / 100.0
}

struct Timer(Instant);

impl Timer {
    fn ms(&self) -> f64 {
        elapsed_ms(self.0)
    }
}

fn start() -> Timer {
    Timer(Instant::now())
}

impl Engine {
    /// Runs the retrieval pipeline for `query`.
    pub fn retrieve(&self, query: &str, config: &RetrievalConfig) -> Result<Retrieval> {
        self.retrieve_queries(&[query.to_string()], config)
    }

    /// Runs the pipeline for several phrasings of one question (query
    /// expansion): each is retrieved, and a chunk keeps its best score per
    /// retriever before fusion. The first query is the main one.
    pub fn retrieve_queries(&self, queries: &[String], config: &RetrievalConfig) -> Result<Retrieval> {
        let total = start();
        let prepared_all: Vec<String> = queries.iter().map(|q| prepare_query(q)).filter(|q| !q.is_empty()).collect();
        let Some(prepared) = prepared_all.first().cloned() else {
            return Err(Error::InvalidInput("the search query is empty".into()));
        };
        if !config.dense && !config.sparse {
            return Err(Error::InvalidInput("enable dense or sparse retrieval (or both)".into()));
        }
        let mut trace = Trace {
            query: queries.join(" | "),
            prepared_query: prepared_all.join(" | "),
            stages: Vec::new(),
            fallbacks: Vec::new(),
            total_ms: 0.0,
            relevance: None,
        };

        let mut dense = Vec::new();
        let mut other_language = HashSet::new();
        if config.dense {
            let t = start();
            let cross_lingual = config.cross_lingual && self.model_is_multilingual();
            let pool = if cross_lingual { config.coarse_k * CROSS_LINGUAL_POOL } else { config.coarse_k };
            let lists = prepared_all
                .iter()
                .map(|q| {
                    let vector = self.embed_query(q)?;
                    self.vectors.read().unwrap_or_else(|p| p.into_inner()).search(&vector, pool)
                })
                .collect::<Result<Vec<_>>>()?;
            dense = merge_max(lists, pool);
            if cross_lingual {
                (dense, other_language) = self.balance_dense_languages(&dense, query_language(&prepared), config.coarse_k, &mut trace)?;
            }
            trace.stages.push(StageTrace { stage: "dense", ms: t.ms(), candidates: dense.clone() });
        }
        let mut sparse = Vec::new();
        if config.sparse {
            let t = start();
            let lists = prepared_all.iter().map(|q| self.store().fts_search(q, config.coarse_k)).collect::<Result<Vec<_>>>()?;
            sparse = merge_max(lists, config.coarse_k);
            trace.stages.push(StageTrace { stage: "sparse", ms: t.ms(), candidates: sparse.clone() });
        }

        let t = start();
        let language = query_language(&prepared);
        let mut dense_weight = config.dense_weight;
        if config.dense && config.sparse && !self.model_languages().is_empty() && !self.model_languages().iter().any(|l| l == language) {
            dense_weight = config.foreign_dense_weight;
            trace.fallbacks.push(format!("fusion: the embedding model does not cover '{language}'; dense weight lowered to {dense_weight}"));
        }
        let fused = match (config.dense, config.sparse, config.fusion) {
            (true, false, _) => dense.clone(),
            (false, true, _) => sparse.clone(),
            (_, _, Fusion::Weighted) => stages::weighted_fusion(&dense, &sparse, dense_weight, config.sparse_weight, &|id| other_language.contains(&id)),
            (_, _, Fusion::Rrf) => stages::rrf_fusion(&[(&dense, dense_weight), (&sparse, config.sparse_weight)], config.rrf_k),
        };
        trace.stages.push(StageTrace { stage: "fusion", ms: t.ms(), candidates: fused.clone() });

        let mut shortlist: Vec<(u64, f32)> = fused.iter().copied().take(config.mmr_select.max(config.top_k)).collect();
        if config.mmr {
            let t = start();
            let pool: Vec<(u64, f32)> = fused.iter().copied().take(config.coarse_k).collect();
            let ids: Vec<u64> = pool.iter().map(|c| c.0).collect();
            let vectors = self.store().embeddings_by_ids(&ids)?;
            shortlist = stages::mmr(&pool, &vectors, config.mmr_lambda, config.mmr_select);
            trace.stages.push(StageTrace { stage: "mmr", ms: t.ms(), candidates: shortlist.clone() });
        }

        let ids: Vec<u64> = shortlist.iter().map(|c| c.0).collect();
        let rows: HashMap<u64, ChunkRow> = self.store().chunks_by_ids(&ids)?.into_iter().map(|r| (r.id as u64, r)).collect();
        let mut order: Vec<(u64, f32)> = shortlist.iter().map(|&(id, _)| (id, fused_score(&fused, id))).collect();
        let mut rerank_scores: HashMap<u64, f32> = HashMap::new();
        if config.rerank {
            match self.rerank_scores(&prepared, &order, &rows, config) {
                Ok(Some((scored, ms))) => {
                    rerank_scores = scored.iter().copied().collect();
                    trace.stages.push(StageTrace { stage: "rerank", ms, candidates: scored.clone() });
                    order = scored;
                }
                Ok(None) => trace.fallbacks.push("rerank: no reranker configured; kept the fused order".into()),
                Err(e) => trace.fallbacks.push(format!("rerank: {e}; kept the fused order")),
            }
        }
        if config.filter {
            if rerank_scores.is_empty() {
                trace.fallbacks.push("filter: skipped, it needs rerank scores".into());
            } else {
                let t = start();
                order = stages::two_layer_filter(&order, config.min_score, config.max_relative_drop);
                trace.stages.push(StageTrace { stage: "filter", ms: t.ms(), candidates: order.clone() });
            }
        }
        order.truncate(config.top_k);

        let dense_map: HashMap<u64, f32> = dense.iter().copied().collect();
        let sparse_map: HashMap<u64, f32> = sparse.iter().copied().collect();
        let hits: Vec<Hit> = order
            .iter()
            .filter_map(|&(id, score)| {
                Some(Hit {
                    chunk: rows.get(&id)?.clone(),
                    score,
                    dense: dense_map.get(&id).copied(),
                    sparse: sparse_map.get(&id).copied(),
                    fused: Some(fused_score(&fused, id)),
                    rerank: rerank_scores.get(&id).copied(),
                })
            })
            .collect();
        let t = start();
        let chunks: Vec<ChunkRow> = hits.iter().map(|h| h.chunk.clone()).collect();
        let context = context::assemble(&chunks, config.context_tokens);
        trace.stages.push(StageTrace { stage: "context", ms: t.ms(), candidates: Vec::new() });
        let t = start();
        let relevance = self.judge_relevance(&prepared, &hits, config)?;
        trace.stages.push(StageTrace { stage: "relevance", ms: t.ms(), candidates: Vec::new() });
        trace.total_ms = total.ms();
        trace.relevance = Some(relevance.clone());
        Ok(Retrieval { hits, context, trace, relevance })
    }

    /// Rerank probabilities for the shortlist, best first, cut to
    /// `rerank_keep`, with the stage time; `None` when no reranker is set.
    fn rerank_scores(&self, query: &str, shortlist: &[(u64, f32)], rows: &HashMap<u64, ChunkRow>, config: &RetrievalConfig) -> Result<Option<(Ranked, f64)>> {
        let t = start();
        let candidates: Vec<(u64, String)> = shortlist
            .iter()
            .filter_map(|(id, _)| {
                let row = rows.get(id)?;
                let text = format!("{}\n{}", row.heading_path, row.text);
                Some((*id, text.chars().take(config.rerank_max_chars).collect()))
            })
            .collect();
        let passages: Vec<String> = candidates.iter().map(|c| c.1.clone()).collect();
        let Some(logits) = self.with_reranker(|r| r.score(query, &passages))? else { return Ok(None) };
        let mut scored: Vec<(u64, f32)> = candidates.iter().zip(logits).map(|((id, _), l)| (*id, stages::sigmoid(l))).collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.truncate(config.rerank_keep);
        Ok(Some((scored, t.ms())))
    }

    /// Cross-encoder probabilities of `hits` for `query`, in their order;
    /// `None` when no reranker is set.
    pub(crate) fn rerank_hits(&self, query: &str, hits: &[Hit], config: &RetrievalConfig) -> Result<Option<Vec<f32>>> {
        let passages: Vec<String> =
            hits.iter().map(|h| format!("{}\n{}", h.chunk.heading_path, h.chunk.text).chars().take(config.rerank_max_chars).collect()).collect();
        Ok(self.with_reranker(|r| r.score(query, &passages))?.map(|logits| logits.into_iter().map(stages::sigmoid).collect()))
    }

    /// The single-retriever or hybrid search behind `kea search`.
    pub fn search(&self, query: &str, top_k: usize, mode: SearchMode) -> Result<Vec<Hit>> {
        Ok(self.retrieve(query, &mode.config(top_k))?.hits)
    }
}

/// With a multilingual embedder, dense search looks this many times deeper
/// so the other language's best passages are among the candidates.
const CROSS_LINGUAL_POOL: usize = 4;
/// The other language's best passage is lifted to tie with the query
/// language's passage at this rank (0-based), so the best same-language
/// passages stay first. Chosen on tests/golden (cross-lingual vs same-language).
const CROSS_LINGUAL_BEHIND: usize = 1;

impl Engine {
    /// Whether the embedder serves Chinese and English alike (no languages
    /// declared means many).
    pub(crate) fn model_is_multilingual(&self) -> bool {
        let languages = self.model_languages();
        languages.is_empty() || (languages.iter().any(|l| l == "zh") && languages.iter().any(|l| l == "en"))
    }

    /// Lifts passages in the other language than the query's to compete
    /// with same-language ones (see [`stages::balance_languages`]).
    /// Also returns the other-language ids (BM25 cannot match them).
    fn balance_dense_languages(&self, dense: &[(u64, f32)], language: &str, k: usize, trace: &mut Trace) -> Result<(Ranked, HashSet<u64>)> {
        let ids: Vec<u64> = dense.iter().map(|c| c.0).collect();
        let other: HashSet<u64> =
            self.store().chunks_by_ids(&ids)?.into_iter().filter(|row| text_language(&row.text) != language).map(|row| row.id as u64).collect();
        let (balanced, shift) = stages::balance_languages(dense, |id| other.contains(&id), CROSS_LINGUAL_BEHIND, k);
        if shift > 0.0 {
            trace.fallbacks.push(format!("dense: other-language passages lifted by {shift:.3} (cross-lingual balance)"));
        }
        Ok((balanced, other))
    }
}

/// The main language of a passage: `zh` when Chinese characters outweigh
/// Latin letters (a character carries about a word's meaning), else `en`.
pub(crate) fn text_language(text: &str) -> &'static str {
    let (mut cjk, mut latin) = (0usize, 0usize);
    for c in text.chars() {
        if crate::segment::is_cjk(c) {
            cjk += 1;
        } else if c.is_ascii_alphabetic() {
            latin += 1;
        }
    }
    if cjk * 3 >= latin && cjk > 0 {
        "zh"
    } else {
        "en"
    }
}

/// `zh` for a query with Chinese characters, else `en`.
pub fn query_language(query: &str) -> &'static str {
    if query.chars().any(crate::segment::is_cjk) {
        "zh"
    } else {
        "en"
    }
}

/// Unions ranked lists, keeping each id's best score, best first.
fn merge_max(lists: Vec<Vec<(u64, f32)>>, k: usize) -> Vec<(u64, f32)> {
    if lists.len() == 1 {
        return lists.into_iter().next().unwrap_or_default();
    }
    let mut best: HashMap<u64, f32> = HashMap::new();
    for (id, score) in lists.into_iter().flatten() {
        let entry = best.entry(id).or_insert(score);
        *entry = entry.max(score);
    }
    let mut merged: Vec<(u64, f32)> = best.into_iter().collect();
    merged.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    merged.truncate(k);
    merged
}

fn fused_score(fused: &[(u64, f32)], id: u64) -> f32 {
    fused.iter().find(|c| c.0 == id).map_or(0.0, |c| c.1)
}

/// The retrieval presets of `kea search --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Nearest neighbours of the query embedding (cosine similarity).
    Dense,
    /// SQLite FTS5 BM25 over segmented words.
    Fts,
    /// The full pipeline (dense + BM25, fusion, MMR, rerank, filter).
    #[default]
    Hybrid,
}

impl SearchMode {
    pub fn config(self, top_k: usize) -> RetrievalConfig {
        match self {
            SearchMode::Dense => RetrievalConfig::dense_only(top_k),
            SearchMode::Fts => RetrievalConfig::sparse_only(top_k),
            SearchMode::Hybrid => RetrievalConfig { top_k, ..Default::default() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_normalised() {
        assert_eq!(prepare_query("  玄凤鹦鹉\u{3000}吃什么？ ＡＢＣ  "), "玄凤鹦鹉 吃什么? ABC");
    }

    #[test]
    fn partial_config_files_fill_in_defaults() {
        let config: RetrievalConfig = serde_json::from_str(r#"{"rerank": false, "fusion": "rrf"}"#).unwrap();
        assert_eq!((config.rerank, config.fusion, config.coarse_k), (false, Fusion::Rrf, 50));
        let typo = RetrievalConfig::from_json_strict(r#"{"rerankk": false}"#).unwrap_err().to_string();
        assert!(typo.contains("rerankk"), "typos in a hand-written config are errors: {typo}");
        assert!(!RetrievalConfig::from_json_strict(r#"{"mmr": false}"#).unwrap().mmr);
        let retired: RetrievalConfig = serde_json::from_str(r#"{"retired_knob": 3, "top_k": 4}"#).unwrap();
        assert_eq!(retired.top_k, 4, "inside the settings file a retired key is ignored");
    }
}
