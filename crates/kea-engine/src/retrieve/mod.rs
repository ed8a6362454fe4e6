//! The retrieval pipeline, the same for every caller (CLI search, chat,
//! image identification, eval): query preparation → dense (usearch) and
//! sparse (FTS5 BM25 over segmented words) → fusion → MMR → cross-encoder
//! rerank → two-layer filter → cited context, run by a [`Retriever`]. Every
//! stage records its candidates, scores and time in a [`Trace`], with the
//! fallbacks that fired. This file holds the pipeline's types and knobs.

pub mod answer_type;
pub mod calibration;
pub mod context;
mod federated;
mod passages;
pub mod relevance;
mod retriever;
pub mod stages;

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::rerank::Reranker;
use crate::store::ChunkRow;
pub use context::{Context, ContextBlock};
pub use federated::{Federated, Retrieve};
pub use passages::{LocalPassages, Passages};
pub use relevance::{Reason, Relevance};
pub use retriever::{QueryModels, Retriever};

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
    /// Compare the context's sentences with the question (the embedder's
    /// similarity, one batch), for the extractive scorer: on where an answer
    /// is composed (chat, identification, the answer figures of `kea
    /// eval`), off for search, whose results quote no sentence.
    pub compare_sentences: bool,
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
            compare_sentences: false,
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

    /// This config, comparing sentences for an answer ([`RetrievalConfig::compare_sentences`]).
    pub fn for_answers(&self) -> RetrievalConfig {
        RetrievalConfig { compare_sentences: true, ..self.clone() }
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
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Trace {
    pub query: String,
    pub prepared_query: String,
    pub stages: Vec<StageTrace>,
    pub fallbacks: Vec<String>,
    pub total_ms: f64,
    /// The relevance decision (answered, unsure or refused), with its figures.
    pub relevance: Option<Relevance>,
    /// The document and heading of every passage a stage ranks in its
    /// first [`NAMED_PER_STAGE`] (a trace never shows an id alone).
    pub passages: Vec<PassageName>,
}

/// How many of each stage's candidates the trace names.
pub const NAMED_PER_STAGE: usize = 8;

/// A passage as a person knows it: its document and heading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassageName {
    pub id: u64,
    pub source: String,
    pub heading_path: String,
}

impl Trace {
    /// The name of passage `id`, when the trace holds it.
    pub fn name_of(&self, id: u64) -> Option<&PassageName> {
        self.passages.iter().find(|p| p.id == id)
    }
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
    /// When not answered, in a folder in both languages whose embedder
    /// cannot compare the question with the documents in the other one:
    /// the passages of those that the question crossed word for word finds.
    pub other_language: Option<OtherLanguage>,
}

/// Passages in the folder's other language than the question's, found by
/// the question crossed word for word, offered as related reading.
#[derive(Debug, Clone, Serialize)]
pub struct OtherLanguage {
    /// The question crossed word for word.
    pub query: String,
    pub blocks: Vec<ContextBlock>,
    /// Whether the passages in the question's language were judged
    /// unrelated (a refusal these passages turned unsure): only these are offered.
    pub alone: bool,
}

/// Characters of a question or search query, at most: a question, not a
/// document pasted whole (every word of it is searched, and the language
/// model reads it).
pub const MAX_QUERY_CHARS: usize = 2000;

/// Refuses a query longer than [`MAX_QUERY_CHARS`], saying so.
pub fn check_query_length(query: &str) -> Result<()> {
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(Error::InvalidInput(format!("the question is {chars} characters long; at most {MAX_QUERY_CHARS} are searched")));
    }
    Ok(())
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

/// Reorders `hits` by `reranker`'s probabilities: those ≥ `min_probability`,
/// best first, at most `keep`, each with its `rerank` score. When the
/// reranker fails the hits come back as they were, with a note saying why.
pub fn rerank_hits(
    reranker: &mut dyn Reranker,
    query: &str,
    hits: Vec<Hit>,
    keep: usize,
    min_probability: f32,
    max_chars: usize,
) -> (Vec<Hit>, Option<String>) {
    let passages: Vec<String> = hits.iter().map(|h| retriever::passage_text(&h.chunk, max_chars)).collect();
    let scores = match reranker.score(query, &passages) {
        Ok(scores) => scores,
        Err(e) => return (hits, Some(format!("rerank ({}): {e}; kept the retrieval order", reranker.model_id()))),
    };
    let mut slots: Vec<Option<Hit>> = hits.into_iter().map(Some).collect();
    let ranked = crate::rerank::rank(&scores, keep, min_probability)
        .into_iter()
        .filter_map(|(i, p)| slots[i].take().map(|hit| Hit { score: p, rerank: Some(p), ..hit }))
        .collect();
    (ranked, None)
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
