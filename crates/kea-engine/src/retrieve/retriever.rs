//! [`Retriever`]: the pipeline over the parts it reads — the store (chunks,
//! FTS5), the vector index and the query-time models ([`QueryModels`]: the
//! query embedder, the cross-encoder, the embedder's languages). It knows
//! nothing of the engine that owns those parts; chat, identification, eval
//! and `kea search` all retrieve through it.

use crate::language::Language;
use crate::lexicon::Lexicon;
use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

use super::calibration::Outcome;
use super::passages::Passages;
use super::relevance::Translation;
use super::relevance::{Reason, Relevance};
use super::{context, prepare_query, stages, Context, Fusion, Hit, OtherLanguage, Ranked, Retrieval, RetrievalConfig, StageTrace, Trace};
use crate::error::{Error, Result};
use crate::store::ChunkRow;
use crate::vectors::VectorIndex;

/// The share of a question's words that must cross, word for word, to
/// words the folder holds for its passages in the other language to turn a refusal.
const HALF: f32 = 0.5;

/// The models retrieval runs at query time (the engine loads them lazily).
pub trait QueryModels {
    fn embed_query(&self, query: &str) -> Result<Vec<f32>>;
    /// Embeds short passages (sentences) as documents, in one batch.
    fn embed_sentences(&self, sentences: &[String]) -> Result<Vec<Vec<f32>>>;
    /// The cross-encoder's probability per passage; `Ok(None)` when none is configured.
    fn cross_encode(&self, query: &str, passages: &[String]) -> Result<Option<Vec<f32>>>;
    /// The embedding model's languages (empty: many or unknown).
    fn languages(&self) -> &[String];
    /// The relevance decision's calibration for the embedding model.
    fn calibration(&self) -> super::calibration::Calibration;
    /// `query` with the names of subjects whose documents are all in the
    /// other language translated (see [`crate::labels::translate_names`]);
    /// `None` when nothing is to translate.
    fn translate_names(&self, query: &str) -> Result<Option<String>>;
    /// The languages the collection's documents are in (see
    /// [`crate::labels::NameIndex::languages`]).
    fn document_languages(&self) -> Result<Vec<Language>>;
    /// For each of `sources`, the names its front matter gives the thing
    /// it describes (see [`crate::labels::NameIndex::names_of`]).
    fn document_names(&self, sources: &[&str]) -> Result<Vec<Vec<String>>>;
}

/// With a multilingual embedder, dense search looks this many times deeper
/// so the other language's best passages are among the candidates.
const CROSS_LINGUAL_POOL: usize = 4;
/// The other language's best passage is lifted to tie with the query
/// language's passage at this rank (0-based), so the best same-language
/// passages stay first. Chosen on tests/golden (cross-lingual vs same-language).
const CROSS_LINGUAL_BEHIND: usize = 1;

/// Blocks whose sentences are compared with the question, and how many
/// sentences at most (one batch of the embedder).
const SENTENCE_BLOCKS: usize = 6;
const MAX_SENTENCES_COMPARED: usize = 80;

/// BM25 over segmented words for each phrasing, merged: the stage's trace.
fn sparse(passages: &dyn Passages, queries: &[String], config: &RetrievalConfig) -> Result<StageTrace> {
    let t = super::start();
    let lists = queries.iter().map(|q| passages.fts_search(q, config.coarse_k)).collect::<Result<Vec<_>>>()?;
    let candidates = merge_max(lists, config.coarse_k);
    Ok(StageTrace { stage: "sparse", ms: t.ms(), candidates })
}

/// `v` scaled to length 1 (unchanged when it is zero).
fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// Runs retrieval over borrowed parts.
pub struct Retriever<'a> {
    passages: Box<dyn Passages + 'a>,
    vectors: &'a RwLock<Box<dyn VectorIndex>>,
    models: &'a dyn QueryModels,
}

/// The main query as every stage reads it: its text, its language and,
/// when dense search ran, its vector and the translation's, if any (the
/// sentences are compared with the one the decision judged).
struct Query<'q> {
    text: &'q str,
    language: Language,
    vector: Option<Vec<f32>>,
    translation_vector: Option<Vec<f32>>,
}

/// Dense candidates, the ids among them in the other language than the
/// query's, and the vector of each query searched, in order.
struct Dense {
    ranked: Ranked,
    other_language: HashSet<u64>,
    vectors: Vec<Vec<f32>>,
}

impl<'a> Retriever<'a> {
    pub fn new(passages: Box<dyn Passages + 'a>, vectors: &'a RwLock<Box<dyn VectorIndex>>, models: &'a dyn QueryModels) -> Retriever<'a> {
        Retriever { passages, vectors, models }
    }

    pub(crate) fn passages(&self) -> &dyn Passages {
        self.passages.as_ref()
    }

    /// Runs the retrieval pipeline for `query`.
    pub fn retrieve(&self, query: &str, config: &RetrievalConfig) -> Result<Retrieval> {
        super::check_query_length(query)?;
        self.retrieve_queries(&[query.to_string()], None, config)
    }

    /// The single-retriever or hybrid search behind `kea search`.
    pub fn search(&self, query: &str, top_k: usize, mode: super::SearchMode) -> Result<Vec<Hit>> {
        Ok(self.retrieve(query, &mode.config(top_k))?.hits)
    }

    /// Chunks by id (for a trace or a benchmark).
    pub fn chunks(&self, ids: &[u64]) -> Result<Vec<ChunkRow>> {
        self.passages.chunks_by_ids(ids)
    }

    /// The passage a citation opens: chunk `id`, when it is still the text
    /// the citation quoted (its `fingerprint`) in the document it names
    /// (`source`). Ids are used again once a document is indexed anew, and
    /// another collection given the cited one's name has its own: their
    /// passages are never shown for it.
    pub fn cited_passage(&self, id: u64, source: Option<&str>, fingerprint: Option<&str>) -> Result<ChunkRow> {
        let same = |row: &ChunkRow| source.is_none_or(|cited| cited == row.source) && fingerprint.is_none_or(|f| f == context::fingerprint(&row.text));
        match self.passages.chunks_by_ids(&[id])?.pop() {
            Some(row) if same(&row) => Ok(row),
            _ => Err(Error::NotFound(match source {
                Some(cited) => format!("the cited passage of {cited} is no longer indexed (the document or its collection changed since)"),
                None => format!("passage {id} is no longer indexed"),
            })),
        }
    }

    /// Runs the pipeline for several phrasings of one question (query
    /// expansion): each is retrieved, and a chunk keeps its best score per
    /// retriever before fusion; the cross-encoder then reranks the fused
    /// shortlist once, against the main query. The first query is the main
    /// one, searched also with its names translated when their documents
    /// are in the other language; `translated`, the question in the
    /// documents' language, is searched too and may decide relevance when
    /// the main one does not.
    pub fn retrieve_queries(&self, queries: &[String], translated: Option<&str>, config: &RetrievalConfig) -> Result<Retrieval> {
        let total = std::time::Instant::now();
        let mut queries = queries.to_vec();
        let named = queries.first().map(|main| self.models.translate_names(main)).transpose()?.flatten();
        if let Some(named) = &named {
            queries.insert(1, named.clone());
        }
        if let Some(given) = translated {
            return self.retrieve_once(&queries, Some((given, false)), config, total);
        }
        let crossed = named.as_ref().or(queries.first()).map(|main| self.bridged(main)).transpose()?.flatten();
        self.retrieve_once(&queries, crossed.as_deref().map(|words| (words, true)), config, total)
    }

    /// The pipeline of [`Retriever::retrieve_queries`] over `queries` (names
    /// translated), with the question in the documents' language, if any,
    /// and whether it was crossed word for word.
    fn retrieve_once(&self, queries: &[String], translated: Option<(&str, bool)>, config: &RetrievalConfig, total: std::time::Instant) -> Result<Retrieval> {
        let word_for_word = translated.is_some_and(|(_, crossed)| crossed);
        let translated = translated.map(|(text, _)| prepare_query(text)).filter(|q| !q.is_empty());
        let translation = translated.as_deref().map(|text| Translation { text, word_for_word });
        let prepared: Vec<String> = queries.iter().map(|q| prepare_query(q)).filter(|q| !q.is_empty()).chain(translated.clone()).collect();
        let Some(main) = prepared.first().cloned() else {
            return Err(Error::InvalidInput("the search query is empty".into()));
        };
        if !config.dense && !config.sparse {
            return Err(Error::InvalidInput("enable dense or sparse retrieval (or both)".into()));
        }
        let mut trace = Trace {
            query: queries.iter().map(String::as_str).chain(translated.as_deref()).collect::<Vec<_>>().join(" | "),
            prepared_query: prepared.join(" | "),
            stages: Vec::new(),
            fallbacks: Vec::new(),
            total_ms: 0.0,
            relevance: None,
            passages: Vec::new(),
        };
        if let Err(e) = self.passages.refresh() {
            trace.fallbacks.push(format!("passages not refreshed, the last copy is searched: {e}"));
        }
        // The main query's language, read once for every stage.
        let language = Language::of_query(&main);
        let (hits, vectors) = self.ranked_hits(&prepared, language, config, &mut trace)?;
        // The translation, when there is one, was searched last.
        let translation_vector = translation.as_ref().and(vectors.last().cloned());
        let query_vector = vectors.into_iter().next();
        let query = Query { text: &main, language, vector: query_vector, translation_vector };
        self.finish((query, translation), hits, config, trace, total)
    }

    /// Dense and full-text search of `prepared` (the first is the main
    /// phrasing, in `language`), fused, shortlisted and reranked: the hits,
    /// and the vector of each phrasing dense search embedded.
    fn ranked_hits(&self, prepared: &[String], language: Language, config: &RetrievalConfig, trace: &mut Trace) -> Result<(Vec<Hit>, Vec<Vec<f32>>)> {
        let (dense, sparse) = self.dense_beside_sparse(prepared, language, config, trace)?;
        let fused = self.fuse(&dense, &sparse, language, config, trace);
        let shortlist = self.shortlist(&fused, config, trace)?;
        let ids: Vec<u64> = shortlist.iter().map(|c| c.0).collect();
        let rows: HashMap<u64, ChunkRow> = self.passages.chunks_by_ids(&ids)?.into_iter().map(|r| (r.id as u64, r)).collect();
        let fused_map: HashMap<u64, f32> = fused.iter().copied().collect();
        let order: Ranked = shortlist.iter().map(|&(id, _)| (id, fused_map.get(&id).copied().unwrap_or(0.0))).collect();
        let (order, rerank_scores) = self.rerank_and_filter(&prepared[0], order, &rows, config, trace);
        let (dense_map, sparse_map): (HashMap<u64, f32>, HashMap<u64, f32>) = (dense.ranked.into_iter().collect(), sparse.into_iter().collect());
        let hits: Vec<Hit> = order
            .iter()
            .filter_map(|&(id, score)| {
                let chunk = rows.get(&id)?.clone();
                Some(Hit {
                    chunk,
                    score,
                    dense: dense_map.get(&id).copied(),
                    sparse: sparse_map.get(&id).copied(),
                    fused: fused_map.get(&id).copied(),
                    rerank: rerank_scores.get(&id).copied(),
                })
            })
            .collect();
        Ok((hits, dense.vectors))
    }

    /// `query` (its names already translated) put into the language the
    /// collection's documents are all in by the word lexicon, when nothing
    /// else translated it: the question as a language model would search it,
    /// word for word. A multilingual embedder finds the passages by itself,
    /// but the decision reads words too, and the question's words are in
    /// none of the documents; the better judged of the two is kept. A folder
    /// that has documents in the question's language is left alone: searched
    /// there, the crossed words pulled its rankings and its off-topic
    /// questions towards the other language.
    fn bridged(&self, query: &str) -> Result<Option<String>> {
        let asked = Language::of_query(query);
        let languages = self.models.document_languages()?;
        let other = languages.iter().copied().find(|&l| l != asked).filter(|_| !languages.contains(&asked));
        let Some(to) = other else { return Ok(None) };
        Ok(self.crossed(query, to)?.map(|(text, _)| text))
    }

    /// `text` crossed word for word into `to` over the words the folder
    /// holds, with the share of its words that crossed ([`Lexicon::crossing`]).
    fn crossed(&self, text: &str, to: Language) -> Result<Option<(String, f32)>> {
        Lexicon::shipped().crossing(text, to, |tokens| Ok::<_, Error>(self.passages.token_chunk_counts(tokens)?.0))
    }

    /// Context assembly, the relevance decision and, unless it refuses (and
    /// when dense search ran), the context's sentences compared with the
    /// question; timed into the trace.
    fn finish(
        &self,
        (query, translated): (Query, Option<Translation>),
        hits: Vec<Hit>,
        config: &RetrievalConfig,
        mut trace: Trace,
        total: std::time::Instant,
    ) -> Result<Retrieval> {
        let t = super::start();
        let mut context = context::of_hits(&hits, config.context_tokens);
        // What each passage is about, for the extractive scorer, the follow-up check and identification.
        let sources: Vec<&str> = context.blocks.iter().map(|b| b.source.as_str()).collect();
        let names = self.models.document_names(&sources)?;
        context.blocks.iter_mut().zip(names).for_each(|(block, names)| block.names = names);
        trace.stages.push(StageTrace { stage: "context", ms: t.ms(), candidates: Vec::new() });
        let t = super::start();
        let relevance = self.judge_relevance_translated((query.text, translated), &hits, &trace, config)?;
        trace.stages.push(StageTrace { stage: "relevance", ms: t.ms(), candidates: Vec::new() });
        let t = super::start();
        let compared = match relevance.judged_in_translation() {
            _ if relevance.outcome == Outcome::Refused || !config.compare_sentences => Ok(None),
            // The question in the documents' language is what the sentences answer.
            Some(translated) => match query.translation_vector {
                Some(vector) => Ok(Some((Language::of_query(translated), vector))),
                None => self.models.embed_query(translated).map(|v| Some((Language::of_query(translated), v))),
            },
            None => Ok(query.vector.map(|v| (query.language, v))),
        };
        if !matches!(compared, Ok(None)) {
            if let Err(e) = compared.and_then(|c| c.map_or(Ok(()), |(language, vector)| self.sentence_similarity(language, vector, &mut context))) {
                trace.fallbacks.push(format!("sentences not compared with the question, words alone pick the quote: {e}"));
            }
            trace.stages.push(StageTrace { stage: "sentences", ms: t.ms(), candidates: Vec::new() });
        }
        let (relevance, other_language) = self.with_other_language((query.text, query.language), relevance, &context, config, &mut trace);
        trace.passages = self.name_passages(&trace, &hits)?;
        trace.total_ms = super::elapsed_ms(total);
        trace.relevance = Some(relevance.clone());
        Ok(Retrieval { hits, context, trace, relevance, other_language })
    }

    /// `relevance` with the passages in the folder's other language when it
    /// is not answered ([`Retriever::other_language`]): an unsure outcome
    /// offers the best of them too; a refusal becomes unsure, offering only
    /// them, when half the question's words or more crossed word for word
    /// and, judged on them, would be answered (crossed words are at best unsure).
    fn with_other_language(
        &self,
        question: (&str, Language),
        relevance: Relevance,
        context: &Context,
        config: &RetrievalConfig,
        trace: &mut Trace,
    ) -> (Relevance, Option<OtherLanguage>) {
        if relevance.outcome == Outcome::Answered {
            return (relevance, None);
        }
        let found = match self.other_language(question, context, config, trace) {
            Ok(found) => found,
            Err(e) => {
                trace.fallbacks.push(format!("documents in the other language not searched: {e}"));
                None
            }
        };
        let Some((mut other, mut judged, share)) = found else { return (relevance, None) };
        if relevance.outcome == Outcome::Unsure {
            return (relevance, Some(other));
        }
        // Only words that carry half the question or more, and would answer
        // outright, turn a refusal: a question about something else crosses
        // to words that still find some page.
        if share < HALF || judged.outcome != Outcome::Answered {
            return (relevance, None);
        }
        let mut reasons = vec![Reason::OtherLanguage, Reason::JudgedInTranslation { query: other.query.clone() }];
        // Below the answer threshold the refusal stands: the reason says so.
        reasons.extend(std::mem::take(&mut judged.reasons).into_iter().map(|r| match r {
            Reason::Calibrated { probability, answer_at, .. } => Reason::Calibrated { probability, refuse_below: answer_at, answer_at },
            other => other,
        }));
        reasons.push(Reason::CrossedWordForWord);
        judged.decide(Outcome::Unsure, reasons);
        other.alone = true;
        (judged, Some(other))
    }

    /// In a folder with documents in both languages, when the embedder
    /// cannot compare the question with those in the other one (MiniLM and
    /// Chinese): the question crossed word for word, searched, its hits in
    /// the other language judged (`None` when refused or none is found),
    /// with the share of the question's words that crossed.
    /// A multilingual embedder finds them by itself; a folder all in the
    /// other language is crossed before search ([`Retriever::bridged`]).
    fn other_language(
        &self,
        (text, language): (&str, Language),
        context: &Context,
        config: &RetrievalConfig,
        trace: &mut Trace,
    ) -> Result<Option<(OtherLanguage, Relevance, f32)>> {
        let languages = self.models.document_languages()?;
        let Some(other) = languages.iter().copied().find(|&l| l != language) else { return Ok(None) };
        if !languages.contains(&language) || (self.model_reads(language) && self.model_reads(other)) {
            return Ok(None);
        }
        let t = super::start();
        let Some((crossed, share)) = self.crossed(text, other)?.map(|(c, share)| (prepare_query(&c), share)) else { return Ok(None) };
        if crossed.is_empty() {
            return Ok(None);
        }
        let mut searched = Trace { query: crossed.clone(), prepared_query: crossed.clone(), ..Trace::default() };
        let (hits, _) = self.ranked_hits(std::slice::from_ref(&crossed), other, config, &mut searched)?;
        let hits: Vec<Hit> = hits.into_iter().filter(|h| Language::of_text(&h.chunk.text) == other).collect();
        let judged = self.judge_relevance(&crossed, &hits, &searched, config)?;
        trace.stages.push(StageTrace { stage: "other_language", ms: t.ms(), candidates: hits.iter().map(|h| (h.chunk.id as u64, h.score)).collect() });
        if judged.outcome == Outcome::Refused {
            return Ok(None);
        }
        let mut blocks = context::of_hits(&hits, config.context_tokens).blocks;
        let sources: Vec<&str> = blocks.iter().map(|b| b.source.as_str()).collect();
        let names = self.models.document_names(&sources)?;
        for (i, (block, names)) in blocks.iter_mut().zip(names).enumerate() {
            (block.label, block.names) = (format!("S{}", context.blocks.len() + 1 + i), names);
        }
        Ok((!blocks.is_empty()).then_some((OtherLanguage { query: crossed, blocks, alone: false }, judged, share)))
    }

    /// The embedder's similarity to the query (in `language`, embedded as
    /// `query_vector`) of each sentence of the first blocks (one batched
    /// call), for the extractive answer's scorer (`chat::extractive`). Nothing when the embedder does not read the
    /// query's language.
    fn sentence_similarity(&self, language: Language, query_vector: Vec<f32>, context: &mut Context) -> Result<()> {
        if !self.model_reads(language) {
            return Ok(());
        }
        let mut texts: Vec<String> = Vec::new();
        let mut covered = 0;
        for block in context.blocks.iter().take(SENTENCE_BLOCKS) {
            let sentences = context::sentences(&block.text);
            if texts.len() + sentences.len() > MAX_SENTENCES_COMPARED {
                break;
            }
            texts.extend(sentences.into_iter().map(str::to_string));
            covered += 1;
        }
        if texts.is_empty() {
            return Ok(());
        }
        let question = normalised(query_vector);
        let mut similarity = self.models.embed_sentences(&texts)?.into_iter().map(|v| normalised(v).iter().zip(&question).map(|(a, b)| a * b).sum::<f32>());
        for block in context.blocks.iter_mut().take(covered) {
            block.sentence_similarity = similarity.by_ref().take(context::sentences(&block.text).len()).collect();
        }
        Ok(())
    }

    /// [`Retriever::dense`] when it is on; an index that cannot be reached
    /// (a team server gone) leaves full-text search, the trace says so.
    fn dense_if_reachable(&self, queries: &[String], language: Language, config: &RetrievalConfig, trace: &mut Trace) -> Result<Dense> {
        let no_dense = || Dense { ranked: Vec::new(), other_language: HashSet::new(), vectors: Vec::new() };
        match config.dense.then(|| self.dense(queries, language, config, trace)).transpose() {
            Ok(dense) => Ok(dense.unwrap_or_else(no_dense)),
            Err(e) if e.kind() == crate::ErrorKind::VectorIndex && config.sparse => {
                trace.fallbacks.push(format!("dense search unavailable, full-text only: {e}"));
                Ok(no_dense())
            }
            Err(e) => Err(e),
        }
    }

    /// Nearest neighbours of each phrasing, merged; with a multilingual
    /// embedder the other language's best passages are lifted to compete.
    fn dense(&self, queries: &[String], language: Language, config: &RetrievalConfig, trace: &mut Trace) -> Result<Dense> {
        let t = super::start();
        let cross_lingual = config.cross_lingual && self.model_is_multilingual();
        let pool = if cross_lingual { config.coarse_k * CROSS_LINGUAL_POOL } else { config.coarse_k };
        let vectors = queries.iter().map(|q| self.models.embed_query(q)).collect::<Result<Vec<_>>>()?;
        trace.stages.push(StageTrace { stage: "embed", ms: t.ms(), candidates: Vec::new() });
        let t = super::start();
        let lists = vectors.iter().map(|v| self.vectors.read().unwrap_or_else(|p| p.into_inner()).search(v, pool)).collect::<Result<Vec<_>>>()?;
        let mut dense = Dense { ranked: merge_max(lists, pool), other_language: HashSet::new(), vectors: Vec::new() };
        if cross_lingual {
            dense = self.balance_dense_languages(&dense.ranked, language, config.coarse_k, trace)?;
        }
        dense.vectors = vectors;
        trace.stages.push(StageTrace { stage: "dense", ms: t.ms(), candidates: dense.ranked.clone() });
        Ok(dense)
    }

    /// Dense and full-text search at once: full-text search (SQLite) runs on
    /// a second thread while this one embeds the query and searches the
    /// vector index, so a search waits for the slower of the two, not both.
    fn dense_beside_sparse(&self, prepared: &[String], language: Language, config: &RetrievalConfig, trace: &mut Trace) -> Result<(Dense, Ranked)> {
        let passages = self.passages.as_ref();
        let (dense, sparse) = std::thread::scope(|scope| {
            let sparse = config.sparse.then(|| scope.spawn(|| sparse(passages, prepared, config)));
            let dense = self.dense_if_reachable(prepared, language, config, trace);
            let sparse = sparse.map(|running| running.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
            (dense, sparse)
        });
        let dense = dense?;
        let sparse = match sparse.transpose()? {
            Some(stage) => {
                let ranked = stage.candidates.clone();
                trace.stages.push(stage);
                ranked
            }
            None => Vec::new(),
        };
        Ok((dense, sparse))
    }

    /// Weighted or reciprocal-rank fusion; the dense weight drops when the
    /// embedder does not cover the query's language.
    fn fuse(&self, dense: &Dense, sparse: &Ranked, language: Language, config: &RetrievalConfig, trace: &mut Trace) -> Ranked {
        let t = super::start();
        let mut dense_weight = config.dense_weight;
        if config.dense && config.sparse && !self.model_reads(language) {
            dense_weight = config.foreign_dense_weight;
            trace.fallbacks.push(format!("fusion: the embedding model does not cover '{}'; dense weight lowered to {dense_weight}", language.code()));
        }
        let fused = match (config.dense, config.sparse, config.fusion) {
            (true, false, _) => dense.ranked.clone(),
            (false, true, _) => sparse.clone(),
            (_, _, Fusion::Weighted) => {
                stages::weighted_fusion(&dense.ranked, sparse, dense_weight, config.sparse_weight, &|id| dense.other_language.contains(&id))
            }
            (_, _, Fusion::Rrf) => stages::rrf_fusion(&[(&dense.ranked, dense_weight), (sparse, config.sparse_weight)], config.rrf_k),
        };
        trace.stages.push(StageTrace { stage: "fusion", ms: t.ms(), candidates: fused.clone() });
        fused
    }

    /// The reranker's input: MMR over the fused pool, or its head.
    fn shortlist(&self, fused: &Ranked, config: &RetrievalConfig, trace: &mut Trace) -> Result<Ranked> {
        if !config.mmr {
            return Ok(fused.iter().copied().take(config.mmr_select.max(config.top_k)).collect());
        }
        let t = super::start();
        let pool: Ranked = fused.iter().copied().take(config.coarse_k).collect();
        let ids: Vec<u64> = pool.iter().map(|c| c.0).collect();
        let vectors = self.passages.embeddings_by_ids(&ids)?;
        let shortlist = stages::mmr(&pool, &vectors, config.mmr_lambda, config.mmr_select);
        trace.stages.push(StageTrace { stage: "mmr", ms: t.ms(), candidates: shortlist.clone() });
        Ok(shortlist)
    }

    /// Cross-encoder rerank (cut to `rerank_keep`) and the two-layer filter
    /// on its probabilities, cut to `top_k`; without a reranker the fused
    /// order stands and the trace says why.
    fn rerank_and_filter(
        &self,
        query: &str,
        mut order: Ranked,
        rows: &HashMap<u64, ChunkRow>,
        config: &RetrievalConfig,
        trace: &mut Trace,
    ) -> (Ranked, HashMap<u64, f32>) {
        let mut rerank_scores = HashMap::new();
        if config.rerank {
            let t = super::start();
            let passages: Vec<String> = order.iter().filter_map(|(id, _)| rows.get(id)).map(|row| passage_text(row, config.rerank_max_chars)).collect();
            let kept: Vec<u64> = order.iter().filter(|(id, _)| rows.contains_key(id)).map(|c| c.0).collect();
            match self.models.cross_encode(query, &passages) {
                Ok(Some(scores)) => {
                    order = crate::rerank::rank(&scores, config.rerank_keep, f32::NEG_INFINITY).into_iter().map(|(i, s)| (kept[i], s)).collect();
                    rerank_scores = order.iter().copied().collect();
                    trace.stages.push(StageTrace { stage: "rerank", ms: t.ms(), candidates: order.clone() });
                }
                Ok(None) => trace.fallbacks.push("rerank: no reranker configured; kept the fused order".into()),
                Err(e) => trace.fallbacks.push(format!("rerank: {e}; kept the fused order")),
            }
        }
        if config.filter && rerank_scores.is_empty() {
            trace.fallbacks.push("filter: skipped, it needs rerank scores".into());
        } else if config.filter {
            let t = super::start();
            order = stages::two_layer_filter(&order, config.min_score, config.max_relative_drop);
            trace.stages.push(StageTrace { stage: "filter", ms: t.ms(), candidates: order.clone() });
        }
        order.truncate(config.top_k);
        (order, rerank_scores)
    }

    /// Names (document, heading) for the passages the trace's stages rank first and the hits.
    fn name_passages(&self, trace: &Trace, hits: &[Hit]) -> Result<Vec<super::PassageName>> {
        let mut ids: Vec<u64> = hits.iter().map(|h| h.chunk.id as u64).collect();
        for stage in &trace.stages {
            ids.extend(stage.candidates.iter().take(super::NAMED_PER_STAGE).map(|c| c.0).filter(|id| !ids.contains(id)).collect::<Vec<_>>());
        }
        let rows = self.passages.chunks_by_ids(&ids)?;
        Ok(rows.into_iter().map(|r| super::PassageName { id: r.id as u64, source: r.source, heading_path: r.heading_path }).collect())
    }

    /// The relevance decision's calibration for the embedder.
    pub(crate) fn calibration(&self) -> super::calibration::Calibration {
        self.models.calibration()
    }

    /// Whether the embedder reads `language` (no languages declared means many).
    pub(crate) fn model_reads(&self, language: Language) -> bool {
        let languages = self.models.languages();
        languages.is_empty() || languages.iter().any(|l| l == language.code())
    }

    /// Whether the embedder serves Chinese and English alike (no languages
    /// declared means many).
    pub(crate) fn model_is_multilingual(&self) -> bool {
        let languages = self.models.languages();
        languages.is_empty() || [Language::Chinese, Language::English].iter().all(|want| languages.iter().any(|l| l == want.code()))
    }

    /// Lifts passages in the other language than the query's to compete
    /// with same-language ones (see [`stages::balance_languages`]).
    fn balance_dense_languages(&self, dense: &[(u64, f32)], language: Language, k: usize, trace: &mut Trace) -> Result<Dense> {
        let ids: Vec<u64> = dense.iter().map(|c| c.0).collect();
        let other: HashSet<u64> = ids.iter().zip(self.passages.languages_by_ids(&ids)?).filter(|(_, l)| *l != language).map(|(id, _)| *id).collect();
        let (balanced, shift) = stages::balance_languages(dense, |id| other.contains(&id), CROSS_LINGUAL_BEHIND, k);
        if shift > 0.0 {
            trace.fallbacks.push(format!("dense: other-language passages lifted by {shift:.3} (cross-lingual balance)"));
        }
        Ok(Dense { ranked: balanced, other_language: other, vectors: Vec::new() })
    }
}

/// What a reranker reads of a chunk: its heading path and text, cut to `max_chars`.
pub(crate) fn passage_text(row: &ChunkRow, max_chars: usize) -> String {
    format!("{}\n{}", row.heading_path, row.text).chars().take(max_chars).collect()
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
