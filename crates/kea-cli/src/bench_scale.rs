//! `kea bench scale`: a large index with real embeddings. A corpus of
//! real-looking files (the `bench corpus` mix: md/txt/docx/PDF, zh and en,
//! about 3 chunks a file) is written into DIR once and indexed with the real
//! model (resumable: an interrupted run goes on where it stopped; kept for
//! the next run). Then: cold start (open, and the first query with the
//! model load), resident memory, dense/BM25/hybrid p50/p99, and how long an
//! edited file takes to be searchable.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use kea_engine::model::ModelPaths;
use kea_engine::{CancelToken, Engine, EngineConfig, SearchMode};

use super::corpus_bench::{write_document, CHINESE_SENTENCES};
use super::{current_rss_mb, percentile, OBJECTS, SUBJECTS};

#[derive(serde::Serialize)]
pub struct ScaleFigures {
    files: usize,
    chunks: usize,
    model: Option<String>,
    /// Indexing in this run (absent when the kept index was already complete).
    index_ms: Option<u64>,
    /// `Engine::open` on the kept index (vector file loaded, nothing embedded).
    open_ms: u64,
    /// The first hybrid query after open, the query model's load included.
    first_query_ms: u64,
    rss_after_open_mb: f64,
    rss_ready_mb: f64,
    /// Per mode: p50 and p99 in ms over the queries.
    queries: usize,
    latency_ms: BTreeMap<&'static str, (f64, f64)>,
    /// One file edited: its sync (re-embedding the changed chunk) until the new words are found.
    edit_to_searchable_ms: u64,
}

pub fn run(files: usize, dir: &Path, queries: usize, paths: Option<ModelPaths>) -> anyhow::Result<ScaleFigures> {
    let knowledge = dir.join("knowledge");
    write_corpus(&knowledge, files)?;
    let mut config = EngineConfig::new(&knowledge, dir.join("data"));
    if let Some(paths) = paths {
        config.model_paths.dirs.splice(0..0, paths.dirs);
    }
    let index_ms = {
        let engine = Engine::open(config.clone())?;
        let started = Instant::now();
        let report = engine.sync(&(), &CancelToken::new())?;
        engine.save_pending_vectors()?;
        (report.processed > 0).then(|| started.elapsed().as_millis() as u64)
    };
    let opening = Instant::now();
    let engine = Engine::open(config)?;
    let open_ms = opening.elapsed().as_millis() as u64;
    let rss_after_open_mb = current_rss_mb()?;
    let first = Instant::now();
    engine.search("What does the cockatiel prefer to eat?", 10, SearchMode::Hybrid)?;
    let first_query_ms = first.elapsed().as_millis() as u64;
    let rss_ready_mb = current_rss_mb()?;

    let questions = questions(queries);
    let mut latency_ms = BTreeMap::new();
    for (name, mode) in [("dense", SearchMode::Dense), ("bm25", SearchMode::Fts), ("hybrid", SearchMode::Hybrid)] {
        let mut times: Vec<f64> = Vec::with_capacity(questions.len());
        for question in &questions {
            let t = Instant::now();
            engine.search(question, 10, mode)?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        latency_ms.insert(name, (percentile(&times, 0.5), percentile(&times, 0.99)));
    }
    let status = engine.status()?;
    Ok(ScaleFigures {
        files,
        chunks: status.chunks,
        model: status.model_id,
        index_ms,
        open_ms,
        first_query_ms,
        rss_after_open_mb,
        rss_ready_mb,
        queries: questions.len(),
        latency_ms,
        edit_to_searchable_ms: edit_one_file(&engine, &knowledge)?,
    })
}

/// Writes the corpus unless a previous run did.
fn write_corpus(knowledge: &Path, files: usize) -> anyhow::Result<()> {
    let marker = knowledge.with_file_name(format!("corpus-{files}.done"));
    if marker.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(knowledge)?;
    for i in 0..files {
        write_document(knowledge, i)?;
    }
    std::fs::write(marker, b"")?;
    Ok(())
}

/// Questions in both languages from the corpus's own vocabulary.
fn questions(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 3 {
            0 => format!("What does {} need?", SUBJECTS[i % SUBJECTS.len()].to_lowercase()),
            1 => format!("Which bird {}?", OBJECTS[i % OBJECTS.len()]),
            _ => CHINESE_SENTENCES[i % CHINESE_SENTENCES.len()].chars().take(10).collect(),
        })
        .collect()
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
        engine.sync_paths(std::slice::from_ref(&path), &(), &CancelToken::new())?;
        if engine.search(&word, 3, SearchMode::Fts)?.iter().any(|h| h.chunk.text.contains(&word)) {
            break;
        }
        anyhow::ensure!(started.elapsed().as_secs() < 60, "the edit was not searchable within 60 s");
    }
    let elapsed = started.elapsed().as_millis() as u64;
    std::fs::write(&path, original)?;
    engine.sync_paths(std::slice::from_ref(&path), &(), &CancelToken::new())?;
    engine.save_pending_vectors()?;
    Ok(elapsed)
}
