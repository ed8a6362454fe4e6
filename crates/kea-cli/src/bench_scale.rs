//! `kea bench scale`: a large index. A corpus of files with a real
//! collection's word statistics (`bench_scale_corpus.rs`; md/txt/docx/PDF,
//! zh and en) is written into DIR once and indexed (resumable: an
//! interrupted run goes on where it stopped; kept for the next run) with the
//! real default model, or with `--embedder hashing` the stand-in of
//! `bench_hashing.rs` (a million chunks in reasonable time). Then: cold start
//! (open, and the first query with the model load), resident memory, disk
//! size, dense/BM25/hybrid p50/p99 (per stage too) and how often the asked
//! topic is in the top 10, and how long an edited file takes to be searchable.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use kea_engine::model::ModelPaths;
use kea_engine::{CancelToken, Engine, EngineConfig, SearchMode};

use super::hashing::HashingServer;
use super::scale_corpus::{topic_of, Vocabulary};
use super::{current_rss_mb, percentile};

/// Where the bench's vectors come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Vectors {
    /// The default local embedding model (real, about 30 chunks/s here).
    Model,
    /// `bench_hashing.rs`'s hashed bags of words.
    Hashing,
}

#[derive(serde::Serialize)]
pub struct ScaleFigures {
    files: usize,
    chunks: usize,
    model: Option<String>,
    /// What made the vectors.
    vectors: &'static str,
    /// The data folder (SQLite store, vector file) on disk.
    index_disk_mb: f64,
    /// Indexing in this run (absent when the kept index was already complete).
    index_ms: Option<u64>,
    /// `Engine::open` on the kept index (vector file loaded, nothing embedded).
    open_ms: u64,
    /// The first hybrid query after open, the query model's load included.
    first_query_ms: u64,
    /// Its pipeline stages (the rest of it: translating names, counting terms).
    first_query_stages_ms: BTreeMap<String, f64>,
    rss_after_open_mb: f64,
    rss_ready_mb: f64,
    /// After every timed query.
    rss_after_queries_mb: f64,
    /// Per mode: p50 and p99 in ms over the queries.
    queries: usize,
    latency_ms: BTreeMap<&'static str, (f64, f64)>,
    /// Per mode: the p50 of each pipeline stage (from the retrieval trace).
    stage_p50_ms: BTreeMap<&'static str, BTreeMap<String, f64>>,
    /// Per mode: the share of questions with a passage of the asked topic in the top 10.
    answered: BTreeMap<&'static str, f64>,
    /// One file edited: its sync (re-embedding the changed chunk) until the new words are found.
    edit_to_searchable_ms: u64,
}

/// The engine's settings over DIR (each kind of vectors has its own data
/// folder over the one corpus), and the stand-in server when it is used.
fn configure(dir: &Path, vectors: Vectors, paths: Option<ModelPaths>) -> anyhow::Result<(EngineConfig, Option<HashingServer>)> {
    let data = dir.join(match vectors {
        Vectors::Model => "data",
        Vectors::Hashing => "data-hashing",
    });
    let mut config = EngineConfig::new(dir.join("knowledge"), data);
    if let Some(paths) = paths {
        config.model_paths.dirs.splice(0..0, paths.dirs);
    }
    let server = match vectors {
        Vectors::Model => None,
        Vectors::Hashing => Some(HashingServer::start()?),
    };
    if let Some(server) = &server {
        config.use_remote(server.config());
    }
    Ok((config, server))
}

pub fn run(files: usize, dir: &Path, vectors: Vectors, queries: usize, paths: Option<ModelPaths>) -> anyhow::Result<ScaleFigures> {
    let (config, server) = configure(dir, vectors, paths)?;
    let (knowledge, data) = (config.knowledge_dir.clone(), config.data_dir.clone());
    let vocabulary = Vocabulary::load(&config.model_paths)?;
    write_corpus(&vocabulary, &knowledge, files)?;
    let index_ms = {
        let engine = Engine::open(config.clone())?;
        let started = Instant::now();
        let report = engine.indexer().sync(&(), &CancelToken::new())?;
        engine.indexer().save_pending_vectors()?;
        (report.processed > 0).then(|| started.elapsed().as_millis() as u64)
    };
    let opening = Instant::now();
    let engine = Engine::open(config)?;
    let open_ms = opening.elapsed().as_millis() as u64;
    let rss_after_open_mb = current_rss_mb()?;
    let first = Instant::now();
    let (first_question, _) = vocabulary.question(queries, files); // not among the timed ones
    let first_retrieval = engine.retriever().retrieve(&first_question, &SearchMode::Hybrid.config(10))?;
    let first_query_ms = first.elapsed().as_millis() as u64;
    let first_query_stages_ms = first_retrieval.trace.stages.iter().map(|s| (s.stage.to_string(), s.ms)).collect();
    let rss_ready_mb = current_rss_mb()?;

    let questions: Vec<(String, usize)> = (0..queries).map(|q| vocabulary.question(q, files)).collect();
    let (mut latency_ms, mut stage_p50_ms, mut answered) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    for (name, mode) in [("dense", SearchMode::Dense), ("bm25", SearchMode::Fts), ("hybrid", SearchMode::Hybrid)] {
        let (latency, stages, share) = time_mode(&engine, &questions, mode)?;
        latency_ms.insert(name, latency);
        stage_p50_ms.insert(name, stages);
        answered.insert(name, share);
    }
    let rss_after_queries_mb = current_rss_mb()?;
    let status = engine.status()?;
    Ok(ScaleFigures {
        files,
        chunks: status.chunks,
        model: status.model_id,
        vectors: if server.is_some() { super::hashing::DESCRIPTION } else { "the model above" },
        index_disk_mb: folder_bytes(&data)? as f64 / 1e6,
        index_ms,
        open_ms,
        first_query_ms,
        first_query_stages_ms,
        rss_after_open_mb,
        rss_ready_mb,
        rss_after_queries_mb,
        queries: questions.len(),
        latency_ms,
        stage_p50_ms,
        answered,
        edit_to_searchable_ms: edit_one_file(&engine, &knowledge)?,
    })
}

/// Latency p50/p99, each stage's p50, the share answered.
type ModeFigures = ((f64, f64), BTreeMap<String, f64>, f64);

/// One mode over every question: latency p50/p99, each stage's p50, and the
/// share of questions with a passage of the asked topic in the top 10.
fn time_mode(engine: &Engine, questions: &[(String, usize)], mode: SearchMode) -> anyhow::Result<ModeFigures> {
    let mut times: Vec<f64> = Vec::with_capacity(questions.len());
    let mut stages: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut found = 0;
    for (question, topic) in questions {
        let t = Instant::now();
        let retrieval = engine.retriever().retrieve(question, &mode.config(10))?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        found += usize::from(retrieval.hits.iter().any(|h| topic_of(&h.chunk.source) == Some(*topic)));
        for stage in retrieval.trace.stages {
            stages.entry(stage.stage.to_string()).or_default().push(stage.ms);
        }
    }
    let stage_p50 = stages.into_iter().map(|(stage, times)| (stage, p50_p99(times).0)).collect();
    Ok((p50_p99(times), stage_p50, found as f64 / questions.len().max(1) as f64))
}

/// The bytes of every file under `dir`.
fn folder_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        total += if entry.file_type()?.is_dir() { folder_bytes(&entry.path())? } else { entry.metadata()?.len() };
    }
    Ok(total)
}

/// The median and the 99th percentile of `times`.
fn p50_p99(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

/// Writes the corpus unless a previous run did.
fn write_corpus(vocabulary: &Vocabulary, knowledge: &Path, files: usize) -> anyhow::Result<()> {
    let marker = knowledge.with_file_name(format!("corpus-v2-{files}.done"));
    if marker.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(knowledge)?;
    for i in 0..files {
        vocabulary.write_document(knowledge, i)?;
    }
    std::fs::write(marker, b"")?;
    Ok(())
}

/// Appends a sentence with a new word to one file, syncs that path and
/// searches until the word is found; then puts the file back.
fn edit_one_file(engine: &Engine, knowledge: &Path) -> anyhow::Result<u64> {
    let path = knowledge.join("notes-00000.md");
    let original = std::fs::read_to_string(&path).context("the corpus's first file")?;
    let word = format!("zephyrine{}", std::process::id());
    let started = Instant::now();
    std::fs::write(&path, format!("{original}\nThe keeper wrote {word} on the feeding chart.\n"))?;
    loop {
        engine.indexer().sync_paths(std::slice::from_ref(&path), &(), &CancelToken::new())?;
        if engine.retriever().search(&word, 3, SearchMode::Fts)?.iter().any(|h| h.chunk.text.contains(&word)) {
            break;
        }
        anyhow::ensure!(started.elapsed().as_secs() < 60, "the edit was not searchable within 60 s");
    }
    let elapsed = started.elapsed().as_millis() as u64;
    std::fs::write(&path, original)?;
    engine.indexer().sync_paths(std::slice::from_ref(&path), &(), &CancelToken::new())?;
    engine.indexer().save_pending_vectors()?;
    Ok(elapsed)
}
